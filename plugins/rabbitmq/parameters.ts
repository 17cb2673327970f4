// Runtime parameters of the broker's plugins: dynamic shovels (rabbitmq_shovel) and federation
// upstreams (rabbitmq_federation). Each is a JSON value under a component, a vhost and a name;
// writing it again changes it in place (the broker restarts the shovel or the links).
import { InvalidInputs, t, type Prop, type ResourceType } from "@plinth/sdk";
import { get, path, put, remove } from "./api.js";
import { checkName, defined, refuseExisting, vhostProp } from "./common.js";
import { inVhost, parseInVhost } from "./ids.js";

type Values = Record<string, unknown>;

/** A parameter's field: its property, and its key in the broker's JSON. */
interface Field {
  prop: Prop;
  key: string;
  /** The broker's form of the value, and back (identity when absent). */
  toBroker?: (value: unknown) => unknown;
  fromBroker?: (value: unknown) => unknown;
}

const ackMode = (description: string) =>
  t.enum(["on-confirm", "on-publish", "no-ack"], { default: "on-confirm", description });

function parameterType(
  component: string,
  what: string,
  description: string,
  fields: Record<string, Field>,
  rules: (inputs: Values) => void,
): ResourceType {
  const inputs: Record<string, Prop> = {
    name: t.string({ required: true, replaceOnChange: true, description: `The ${what}'s name.` }),
    vhost: vhostProp,
  };
  for (const [name, field] of Object.entries(fields)) inputs[name] = field.prop;
  // URIs may hold passwords: never outputs.
  const outputs = Object.fromEntries(Object.entries(inputs).filter(([, prop]) => !prop.secret));
  outputs.component = t.string({ required: true, description: "The broker's component of the parameter." });
  const where = (vhost: string, name: string) => `parameters/${path(component, vhost, name)}`;
  const form = `${what} (NAME@VHOST)`;
  const shown = (values: Values): Values => ({
    ...Object.fromEntries(Object.entries(values).filter(([name]) => !inputs[name]?.secret)),
    component,
  });
  const write = async (values: Values) => {
    const value: Values = {};
    for (const [name, field] of Object.entries(fields)) {
      const v = values[name];
      if (v !== undefined) value[field.key] = field.toBroker ? field.toBroker(v) : v;
    }
    await put(where(values.vhost as string, values.name as string), { value });
    return shown(values);
  };
  return {
    description,
    inputs,
    outputs,
    check(values) {
      checkName("name", values.name);
      checkName("vhost", values.vhost);
      rules(values);
    },
    async create(values) {
      const id = inVhost(values.name as string, values.vhost as string);
      await refuseExisting(where(values.vhost as string, values.name as string), `${what} \`${values.name}\` in vhost \`${values.vhost}\``, id);
      return { id, outputs: await write(values) };
    },
    async read(state) {
      const { name, vhost } = parseInVhost(state.id, form);
      const found = await get<{ value: Values }>(where(vhost, name));
      if (!found) return null;
      const now: Values = { name, vhost };
      for (const [input, field] of Object.entries(fields)) {
        const v = found.value[field.key];
        now[input] = v === undefined ? field.prop.default : field.fromBroker ? field.fromBroker(v) : v;
      }
      const values = defined(now);
      return { inputs: values, outputs: shown(values) };
    },
    async update(_olds, news) {
      return write(news);
    },
    async delete(state) {
      const { name, vhost } = parseInVhost(state.id, form);
      await remove(where(vhost, name));
    },
  };
}

const field = (key: string, prop: Prop, more: Partial<Field> = {}): Field => ({ key, prop, ...more });

/** A shovel's URI: the broker takes one or a list to try in turn; one is kept as one. */
const uriField = (key: string, description: string) =>
  field(key, t.string({ required: true, secret: true, description }), {
    fromBroker: (v) => (Array.isArray(v) ? v[0] : v),
  });

/** `never`, `queue-length` or a count of messages: a string here, a number for the broker. */
const deleteAfter = field(
  "src-delete-after",
  t.string({ description: "When the shovel deletes itself: `never`, `queue-length` (once the queue's messages at its start are moved), or a number of messages." }),
  {
    toBroker: (v) => (/^[0-9]+$/.test(v as string) ? Number(v) : v),
    fromBroker: (v) => String(v),
  },
);

/** The fields of each side that only one protocol has, by that protocol. */
const SIDE_FIELDS = {
  source: {
    protocol: "source_protocol",
    amqp091: ["source_queue", "source_exchange", "source_exchange_key"],
    amqp10: ["source_address"],
  },
  destination: {
    protocol: "destination_protocol",
    amqp091: ["destination_queue", "destination_exchange", "destination_exchange_key", "destination_publish_properties"],
    amqp10: ["destination_address", "destination_application_properties", "destination_properties", "destination_message_annotations"],
  },
} as const;

/** Refuses a field of the other protocol on one side, and a side that says not where to go. */
function checkSide(values: Values, side: keyof typeof SIDE_FIELDS): void {
  const fields = SIDE_FIELDS[side];
  const protocol = values[fields.protocol];
  // Unknown during a preview: checked once known.
  if (protocol !== "amqp091" && protocol !== "amqp10") return;
  const other = protocol === "amqp10" ? fields.amqp091 : fields.amqp10;
  const wrong = other.find((name) => values[name] !== undefined);
  if (wrong) {
    throw InvalidInputs.of(wrong, `is an ${protocol === "amqp10" ? "AMQP 0-9-1" : "AMQP 1.0"} field, but ${fields.protocol} is \`${protocol}\``);
  }
  if (protocol === "amqp10") {
    const address = fields.amqp10[0];
    if (values[address] === undefined) {
      throw InvalidInputs.of(address, `give the ${side}'s AMQP 1.0 link address, e.g. \`/queue/orders\` (${fields.protocol} is \`amqp10\`)`);
    }
    return;
  }
  const [queue, exchange] = fields.amqp091;
  const given = [queue, exchange].filter((n) => values[n] !== undefined);
  if (given.length > 1) throw InvalidInputs.of(exchange, `give only one of \`${queue}\` and \`${exchange}\``);
  if (given.length === 0 && side === "source") {
    throw InvalidInputs.of(queue, `give one of \`${queue}\` and \`${exchange}\`: where the shovel takes messages from`);
  }
}

/** Message properties and annotations an AMQP 1.0 destination sets, by name. */
const amqp10Map = (key: string, description: string) =>
  field(key, t.map(t.any(), { description: `${description} AMQP 1.0 destinations only.` }));

export const Shovel = parameterType(
  "shovel",
  "shovel",
  "A dynamic shovel: moves messages from a source (a queue, an exchange it binds a queue to, or an AMQP 1.0 address) to a destination, on this broker or another. Needs the rabbitmq_shovel plugin (and rabbitmq_amqp1_0 on a broker an `amqp10` side connects to).",
  {
    source_uri: uriField("src-uri", "The source broker's AMQP URI, e.g. `amqp://user:password@host/vhost` (`amqp://` is this broker, default vhost)."),
    source_protocol: field("src-protocol", t.enum(["amqp091", "amqp10"], { default: "amqp091", description: "The source's protocol." })),
    source_queue: field("src-queue", t.string({ description: "The queue it consumes from (AMQP 0-9-1)." })),
    source_exchange: field("src-exchange", t.string({ description: "The exchange it binds a queue of its own to, instead of a queue (AMQP 0-9-1)." })),
    source_exchange_key: field("src-exchange-key", t.string({ description: "The routing key of that binding (AMQP 0-9-1)." })),
    source_address: field("src-address", t.string({ description: "The AMQP 1.0 link address it consumes from, e.g. `/queue/orders` on RabbitMQ (required when source_protocol is `amqp10`)." })),
    source_prefetch_count: field("src-prefetch-count", t.integer({ description: "How many unacknowledged messages it takes at once." })),
    source_delete_after: deleteAfter,
    destination_uri: uriField("dest-uri", "The destination broker's AMQP URI."),
    destination_protocol: field("dest-protocol", t.enum(["amqp091", "amqp10"], { default: "amqp091", description: "The destination's protocol." })),
    destination_queue: field("dest-queue", t.string({ description: "The queue it publishes to (AMQP 0-9-1)." })),
    destination_exchange: field("dest-exchange", t.string({ description: "The exchange it publishes to (AMQP 0-9-1)." })),
    destination_exchange_key: field("dest-exchange-key", t.string({ description: "The routing key it publishes with (default: the message's own; AMQP 0-9-1)." })),
    destination_publish_properties: field("dest-publish-properties", t.map(t.any(), { description: "Message properties it overwrites, e.g. `{\"delivery_mode\": 2}` (AMQP 0-9-1)." })),
    destination_address: field("dest-address", t.string({ description: "The AMQP 1.0 link address it publishes to, e.g. `/queue/orders` on RabbitMQ (required when destination_protocol is `amqp10`)." })),
    destination_application_properties: amqp10Map("dest-application-properties", "Application properties it sets on each message."),
    destination_properties: amqp10Map("dest-properties", "Properties it overwrites on each message, such as `content_type`."),
    destination_message_annotations: amqp10Map("dest-message-annotations", "Message annotations it sets on each message."),
    destination_add_forward_headers: field("dest-add-forward-headers", t.boolean({ description: "Whether it adds headers saying where a message was shovelled from." })),
    destination_add_timestamp_header: field("dest-add-timestamp-header", t.boolean({ description: "Whether it adds a timestamp header." })),
    ack_mode: field("ack-mode", ackMode("When it acknowledges a message at the source: `on-confirm` (once the destination confirms), `on-publish` or `no-ack`.")),
    reconnect_delay: field("reconnect-delay", t.integer({ default: 1, description: "Seconds to wait before reconnecting after a failure." })),
  },
  (values) => {
    checkSide(values, "source");
    checkSide(values, "destination");
    if (values.source_exchange_key !== undefined && values.source_exchange === undefined) {
      throw InvalidInputs.of("source_exchange_key", "is only for a source_exchange");
    }
    const after = values.source_delete_after;
    if (typeof after === "string" && !["never", "queue-length"].includes(after) && !/^[0-9]+$/.test(after)) {
      throw InvalidInputs.of("source_delete_after", `\`${after}\` is none of \`never\`, \`queue-length\` or a number of messages`);
    }
  },
);

export const FederationUpstream = parameterType(
  "federation-upstream",
  "federation upstream",
  "A federation upstream: a broker that federated exchanges and queues of this vhost receive messages from (policies with `federation-upstream` or `federation-upstream-set` select it). Needs the rabbitmq_federation plugin.",
  {
    uri: field("uri", t.string({ required: true, secret: true, description: "The upstream's AMQP URI, e.g. `amqp://user:password@upstream/vhost`." })),
    prefetch_count: field("prefetch-count", t.integer({ default: 1000, description: "How many unacknowledged messages a link takes at once." })),
    reconnect_delay: field("reconnect-delay", t.integer({ default: 5, description: "Seconds to wait before reconnecting after a failure." })),
    ack_mode: field("ack-mode", ackMode("When messages are acknowledged upstream: `on-confirm`, `on-publish` or `no-ack`.")),
    trust_user_id: field("trust-user-id", t.boolean({ default: false, description: "Whether a message's `user-id` from upstream is trusted." })),
    exchange: field("exchange", t.string({ description: "The upstream exchange (default: the federated exchange's name)." })),
    max_hops: field("max-hops", t.integer({ default: 1, description: "How many brokers a message may pass through." })),
    expires: field("expires", t.integer({ description: "Milliseconds the upstream queue lives after a disconnection (unset: for ever)." })),
    message_ttl: field("message-ttl", t.integer({ description: "Milliseconds messages live in the upstream queue (unset: for ever)." })),
    queue: field("queue", t.string({ description: "The upstream queue (default: the federated queue's name)." })),
  },
  (values) => {
    for (const key of ["prefetch_count", "max_hops"]) {
      const v = values[key];
      if (typeof v === "number" && v < 1) throw InvalidInputs.of(key, "must be 1 or more");
    }
  },
);

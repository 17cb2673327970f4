// Where messages go: exchanges, queues and the bindings between them. The broker cannot change
// any of their properties once declared, so every change replaces them.
import { InvalidInputs, t, type ResourceType } from "@plinth/sdk";
import { get, path, post, put, remove } from "./api.js";
import { type Arguments, checkName, refuseExisting, replaceByName, same, vhostProp } from "./common.js";
import { binding, inVhost, parseBinding, parseInVhost } from "./ids.js";

const replaces = (description: string) => ({ replaceOnChange: true, description });

const argumentsProp = (of: string) =>
  t.map(t.any(), { default: {}, ...replaces(`Optional arguments of the ${of} (\`x-...\`), by name.`) });

// --- Exchange ----------------------------------------------------------------------------

interface ExchangeInputs {
  name: string;
  vhost: string;
  type: string;
  durable: boolean;
  auto_delete: boolean;
  internal: boolean;
  arguments: Arguments;
}

interface BrokerExchange {
  name: string;
  type: string;
  durable: boolean;
  auto_delete: boolean;
  internal: boolean;
  arguments?: Arguments;
}

const exchangeProps = {
  name: t.string({ required: true, ...replaces("The exchange's name.") }),
  vhost: vhostProp,
  type: t.string({ required: true, ...replaces("`direct`, `fanout`, `topic`, `headers`, or a plugin's type such as `x-delayed-message`.") }),
  durable: t.boolean({ default: true, ...replaces("Whether it survives a broker restart.") }),
  auto_delete: t.boolean({ default: false, ...replaces("Whether it is deleted once its last binding is.") }),
  internal: t.boolean({ default: false, ...replaces("Whether clients cannot publish to it (only other exchanges can).") }),
  arguments: argumentsProp("exchange"),
};

const exchangeWhere = (vhost: string, name: string) => `exchanges/${path(vhost, name)}`;

export const Exchange: ResourceType<ExchangeInputs, ExchangeInputs> = {
  description: "An exchange: routes what is published to it to queues and exchanges bound to it.",
  inputs: exchangeProps,
  outputs: exchangeProps,
  diff: replaceByName<ExchangeInputs>(["name", "vhost"]),
  check(inputs) {
    checkName("name", inputs.name);
    checkName("vhost", inputs.vhost);
    if (typeof inputs.name === "string" && inputs.name.startsWith("amq.")) {
      throw InvalidInputs.of("name", "names starting with `amq.` are the broker's own");
    }
  },
  async create(inputs) {
    const where = exchangeWhere(inputs.vhost, inputs.name);
    const id = inVhost(inputs.name, inputs.vhost);
    await refuseExisting(where, `exchange \`${inputs.name}\` in vhost \`${inputs.vhost}\``, id);
    const { type, durable, auto_delete, internal } = inputs;
    await put(where, { type, durable, auto_delete, internal, arguments: inputs.arguments });
    return { id, outputs: inputs };
  },
  async read(state) {
    const { name, vhost } = parseInVhost(state.id, "exchange (NAME@VHOST)");
    const found = await get<BrokerExchange>(exchangeWhere(vhost, name));
    if (!found) return null;
    const { type, durable, auto_delete, internal } = found;
    const now = { name, vhost, type, durable, auto_delete, internal, arguments: found.arguments ?? {} };
    return { inputs: now, outputs: now };
  },
  async delete(state) {
    const { name, vhost } = parseInVhost(state.id, "exchange (NAME@VHOST)");
    await remove(exchangeWhere(vhost, name));
  },
};

// --- Queue -------------------------------------------------------------------------------

interface QueueInputs {
  name: string;
  vhost: string;
  type: "classic" | "quorum" | "stream";
  durable: boolean;
  auto_delete: boolean;
  arguments: Arguments;
}

interface BrokerQueue {
  name: string;
  type?: string;
  durable: boolean;
  auto_delete: boolean;
  arguments?: Arguments;
}

/** The argument the queue's type travels as; the `type` input says it instead. */
const QUEUE_TYPE = "x-queue-type";

const queueProps = {
  name: t.string({ required: true, ...replaces("The queue's name.") }),
  vhost: vhostProp,
  type: t.enum(["classic", "quorum", "stream"], { default: "classic", ...replaces("`classic`, `quorum` (replicated, durable) or `stream`.") }),
  durable: t.boolean({ default: true, ...replaces("Whether it survives a broker restart (quorum queues and streams always do).") }),
  auto_delete: t.boolean({ default: false, ...replaces("Whether it is deleted once its last consumer leaves (classic queues only).") }),
  arguments: argumentsProp("queue, e.g. `x-message-ttl`, `x-max-length`, `x-dead-letter-exchange`"),
};

const queueWhere = (vhost: string, name: string) => `queues/${path(vhost, name)}`;

export const Queue: ResourceType<QueueInputs, QueueInputs> = {
  description: "A queue: classic, quorum or stream, with its arguments.",
  inputs: queueProps,
  outputs: queueProps,
  diff: replaceByName<QueueInputs>(["name", "vhost"]),
  check(inputs) {
    checkName("name", inputs.name);
    checkName("vhost", inputs.vhost);
    if (typeof inputs.name === "string" && inputs.name.startsWith("amq.")) {
      throw InvalidInputs.of("name", "names starting with `amq.` are the broker's own");
    }
    if (inputs.arguments && QUEUE_TYPE in inputs.arguments) {
      throw InvalidInputs.of("arguments", `give the queue's type as \`type\`, not as the argument ${QUEUE_TYPE}`);
    }
    if (inputs.type !== "classic" && inputs.durable === false) {
      throw InvalidInputs.of("durable", `a ${inputs.type} queue is always durable`);
    }
    if (inputs.type !== "classic" && inputs.auto_delete === true) {
      throw InvalidInputs.of("auto_delete", `a ${inputs.type} queue cannot be auto-deleted`);
    }
  },
  async create(inputs) {
    const where = queueWhere(inputs.vhost, inputs.name);
    const id = inVhost(inputs.name, inputs.vhost);
    await refuseExisting(where, `queue \`${inputs.name}\` in vhost \`${inputs.vhost}\``, id);
    await put(where, {
      durable: inputs.durable,
      auto_delete: inputs.auto_delete,
      arguments: { ...inputs.arguments, [QUEUE_TYPE]: inputs.type },
    });
    return { id, outputs: inputs };
  },
  async read(state) {
    const { name, vhost } = parseInVhost(state.id, "queue (NAME@VHOST)");
    const found = await get<BrokerQueue>(queueWhere(vhost, name));
    if (!found) return null;
    const { [QUEUE_TYPE]: declared, ...args } = found.arguments ?? {};
    const type = (found.type ?? declared ?? "classic") as QueueInputs["type"];
    const now = { name, vhost, type, durable: found.durable, auto_delete: found.auto_delete, arguments: args };
    return { inputs: now, outputs: now };
  },
  async delete(state) {
    const { name, vhost } = parseInVhost(state.id, "queue (NAME@VHOST)");
    await remove(queueWhere(vhost, name));
  },
};

// --- Binding -----------------------------------------------------------------------------

interface BindingInputs {
  vhost: string;
  source: string;
  destination: string;
  destination_type: "queue" | "exchange";
  routing_key: string;
  arguments: Arguments;
}

interface BindingOutputs extends BindingInputs {
  properties_key: string;
}

interface BrokerBinding {
  routing_key: string;
  arguments?: Arguments;
  properties_key: string;
}

const bindingProps = {
  vhost: vhostProp,
  source: t.string({ required: true, ...replaces("The exchange messages come from.") }),
  destination: t.string({ required: true, ...replaces("The queue or exchange they go to.") }),
  destination_type: t.enum(["queue", "exchange"], { required: true, ...replaces("Whether `destination` is a `queue` or an `exchange`.") }),
  routing_key: t.string({ default: "", ...replaces("The routing key (pattern) messages must match.") }),
  arguments: argumentsProp("binding (a headers exchange matches on them)"),
};

/** The bindings from `source` to `destination`, or of one of them with `key`. */
function bindingsWhere(b: Omit<BindingOutputs, "routing_key" | "arguments" | "properties_key">, key?: string): string {
  const kind = b.destination_type === "queue" ? "q" : "e";
  const base = `bindings/${path(b.vhost)}/e/${path(b.source)}/${kind}/${path(b.destination)}`;
  return key === undefined ? base : `${base}/${path(key)}`;
}

export const Binding: ResourceType<BindingInputs, BindingOutputs> = {
  description: "A binding: routes messages from an exchange to a queue or another exchange.",
  inputs: bindingProps,
  outputs: {
    ...bindingProps,
    properties_key: t.string({ required: true, description: "The broker's key of the binding, from its routing key and arguments." }),
  },
  check(inputs) {
    checkName("source", inputs.source);
    checkName("destination", inputs.destination);
    checkName("vhost", inputs.vhost);
  },
  async create(inputs) {
    // Binding twice is no error on the broker, so an existing one would be taken over.
    const existing = (await get<BrokerBinding[]>(bindingsWhere(inputs))) ?? [];
    const twin = existing.find((b) => b.routing_key === inputs.routing_key && same(b.arguments ?? {}, inputs.arguments));
    if (twin) {
      const id = binding({ ...inputs, properties_key: twin.properties_key });
      throw new Error(`this binding from \`${inputs.source}\` to \`${inputs.destination}\` already exists: adopt it with the resource option import (id \`${id}\`)`);
    }
    const location = await post(bindingsWhere(inputs), { routing_key: inputs.routing_key, arguments: inputs.arguments });
    // `Location` is the new binding's path relative to the request: its last segment is the key.
    const properties_key = decodeURIComponent(location.split("/").pop() ?? "");
    if (properties_key === "") throw new Error(`the broker answered the binding without its key (Location: \`${location}\`)`);
    return { id: binding({ ...inputs, properties_key }), outputs: { ...inputs, properties_key } };
  },
  async read(state) {
    const key = parseBinding(state.id);
    const found = await get<BrokerBinding>(bindingsWhere(key, key.properties_key));
    if (!found) return null;
    const { properties_key, ...rest } = key;
    const now = { ...rest, routing_key: found.routing_key, arguments: found.arguments ?? {} };
    return { inputs: now, outputs: { ...now, properties_key } };
  },
  async delete(state) {
    const key = parseBinding(state.id);
    await remove(bindingsWhere(key, key.properties_key));
  },
};

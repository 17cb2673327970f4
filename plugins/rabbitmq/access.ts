// Who may do what: vhosts (with their limits), users, and users' permissions on a vhost and on
// its topic exchanges.
import { InvalidInputs, t, type ResourceType } from "@plinth/sdk";
import { ApiError, get, path, put, remove } from "./api.js";
import { checkName, defined, refuseExisting, vhostProp } from "./common.js";
import { inVhost, parseInVhost } from "./ids.js";
import { passwordMatches } from "./password.js";

// --- VHost -------------------------------------------------------------------------------

interface VHostInputs {
  name: string;
  description: string;
  tags: string[];
  tracing: boolean;
  default_queue_type?: QueueType;
  max_connections?: number;
  max_queues?: number;
}

/** The queue types a vhost can default to. */
const QUEUE_TYPES = ["classic", "quorum", "stream"] as const;
type QueueType = (typeof QUEUE_TYPES)[number];

interface BrokerVHost {
  name: string;
  description?: string;
  tags?: string[] | string;
  tracing?: boolean;
  /** `undefined` (a string) when the vhost has none. */
  default_queue_type?: string;
}

/** The broker's limits are named with dashes. */
const LIMITS = { max_connections: "max-connections", max_queues: "max-queues" } as const;

function tagList(tags: string[] | string | undefined): string[] {
  if (Array.isArray(tags)) return tags;
  return (tags ?? "").split(",").filter((tag) => tag !== "");
}

/** The broker's version, `[major, minor]`, as its management API reports it. */
async function brokerVersion(): Promise<[number, number, string]> {
  const overview = await get<{ rabbitmq_version?: string }>("overview");
  const text = overview?.rabbitmq_version ?? "";
  const [major, minor] = text.split(".").map((part) => Number.parseInt(part, 10));
  return [major || 0, minor || 0, text];
}

/**
 * Refuses a change of the default queue type that the broker would ignore: RabbitMQ sets it
 * only when it creates a vhost before 3.11. Checked before anything is written, so that a
 * refused update changes nothing.
 */
async function refuseFixedQueueType(olds: VHostInputs, news: VHostInputs): Promise<void> {
  if (news.default_queue_type === undefined || news.default_queue_type === olds.default_queue_type) return;
  const [major, minor, version] = await brokerVersion();
  if (major > 3 || (major === 3 && minor >= 11)) return;
  throw new Error(
    `vhost \`${news.name}\`: RabbitMQ ${version} cannot change a vhost's default queue type (3.11 and later can); ` +
      `keep \`${olds.default_queue_type ?? "unset"}\`, upgrade the broker, or replace the vhost on purpose with ` +
      "`plinth up --replace URN` (which deletes every queue, exchange and binding in it)",
  );
}

async function writeVHost(inputs: VHostInputs, olds?: VHostInputs): Promise<VHostInputs> {
  await put(`vhosts/${path(inputs.name)}`, defined({
    description: inputs.description,
    tags: inputs.tags.join(","),
    tracing: inputs.tracing,
    // `defaultqueuetype` is the key brokers before 4.0 read; later ones read the other.
    defaultqueuetype: inputs.default_queue_type,
    default_queue_type: inputs.default_queue_type,
  }));
  for (const [key, limit] of Object.entries(LIMITS) as [keyof typeof LIMITS, string][]) {
    const value = inputs[key];
    if (value !== undefined) {
      await put(`vhost-limits/${path(inputs.name, limit)}`, { value });
    } else if (olds?.[key] !== undefined) {
      await remove(`vhost-limits/${path(inputs.name, limit)}`);
    }
  }
  return inputs;
}

/** The broker's default queue type, if it is one of those known. */
function queueType(value: string | undefined): QueueType | undefined {
  return QUEUE_TYPES.find((type) => type === value);
}

async function readVHost(name: string, managesQueueType: boolean): Promise<VHostInputs | undefined> {
  const vhost = await get<BrokerVHost>(`vhosts/${path(name)}`);
  if (!vhost) return undefined;
  const limits = await get<{ value: Record<string, number> }[]>(`vhost-limits/${path(name)}`);
  const set = limits?.[0]?.value ?? {};
  return defined({
    name: vhost.name,
    description: vhost.description ?? "",
    tags: tagList(vhost.tags),
    tracing: vhost.tracing ?? false,
    // Managed only when the program sets it: unset, the broker's is left as it is.
    default_queue_type: managesQueueType ? queueType(vhost.default_queue_type) : undefined,
    max_connections: set[LIMITS.max_connections],
    max_queues: set[LIMITS.max_queues],
  });
}

export const VHost: ResourceType<VHostInputs, VHostInputs> = {
  description: "A virtual host: a namespace of exchanges, queues, bindings, policies and permissions. Deleting it deletes all it holds.",
  inputs: {
    name: t.string({ required: true, replaceOnChange: true, description: "The vhost's name." }),
    description: t.string({ default: "", description: "What the vhost is for." }),
    tags: t.array(t.string(), { default: [], description: "Tags of the vhost." }),
    tracing: t.boolean({ default: false, description: "Whether the firehose tracer is on for the vhost." }),
    default_queue_type: t.enum([...QUEUE_TYPES], {
      description: "The type of the queues declared in the vhost without an `x-queue-type`: `classic`, `quorum` or `stream` (RabbitMQ 3.10 and later; changed in place from 3.11). Unset: the broker's default, left as it is.",
    }),
    max_connections: t.integer({ description: "At most this many client connections (0 refuses all); unset: no limit." }),
    max_queues: t.integer({ description: "At most this many queues (0 refuses all); unset: no limit." }),
  },
  outputs: {
    name: t.string({ required: true }),
    description: t.string({ required: true }),
    tags: t.array(t.string(), { required: true }),
    tracing: t.boolean({ required: true }),
    default_queue_type: t.enum([...QUEUE_TYPES]),
    max_connections: t.integer(),
    max_queues: t.integer(),
  },
  check(inputs) {
    checkName("name", inputs.name);
    for (const key of ["max_connections", "max_queues"] as const) {
      const value = inputs[key];
      if (value !== undefined && (value < 0 || !Number.isInteger(value))) {
        throw InvalidInputs.of(key, "must be a whole number, 0 or more");
      }
    }
  },
  async create(inputs) {
    await refuseExisting(`vhosts/${path(inputs.name)}`, `vhost \`${inputs.name}\``, inputs.name);
    return { id: inputs.name, outputs: await writeVHost(inputs) };
  },
  async read(state) {
    const found = await readVHost(state.id, state.inputs.default_queue_type !== undefined);
    return found ? { inputs: found, outputs: found } : null;
  },
  async update(olds, news) {
    await refuseFixedQueueType(olds.inputs, news);
    const written = await writeVHost(news, olds.inputs);
    // A broker that took the change silently without making it is named, not recorded.
    if (news.default_queue_type !== undefined && news.default_queue_type !== olds.inputs.default_queue_type) {
      const now = await readVHost(news.name, true);
      if (now?.default_queue_type !== news.default_queue_type) {
        throw new Error(`vhost \`${news.name}\`: the broker kept its default queue type \`${now?.default_queue_type ?? "unset"}\` instead of \`${news.default_queue_type}\``);
      }
    }
    return written;
  },
  async delete(state) {
    await remove(`vhosts/${path(state.id)}`);
  },
};

// --- User --------------------------------------------------------------------------------

interface UserInputs {
  name: string;
  password?: string;
  password_wo?: string;
  password_wo_version?: number;
  tags: string[];
}

interface UserOutputs {
  name: string;
  tags: string[];
}

interface BrokerUser {
  name: string;
  tags?: string[] | string;
  password_hash?: string;
  hashing_algorithm?: string;
}

/**
 * Creates or updates the user. The password sent is the recorded one, or the write-only one
 * when the host passed it (on create, and on update when its version changed); without either
 * (an update of a write-only user's tags), the broker's own hash is sent back, since a `PUT`
 * without a password would leave the user none.
 */
async function writeUser(inputs: UserInputs): Promise<UserOutputs> {
  // The broker needs `tags` even when there are none.
  const tags = inputs.tags.join(",");
  const password = inputs.password ?? inputs.password_wo;
  if (password !== undefined) {
    await put(`users/${path(inputs.name)}`, { password, tags });
  } else {
    const user = await get<BrokerUser>(`users/${path(inputs.name)}`);
    if (!user) throw new Error(`user \`${inputs.name}\` is gone from the broker: run refresh, then up to create it again`);
    await put(`users/${path(inputs.name)}`, {
      password_hash: user.password_hash ?? "",
      hashing_algorithm: user.hashing_algorithm,
      tags,
    });
  }
  return { name: inputs.name, tags: inputs.tags };
}

export const User: ResourceType<UserInputs, UserOutputs> = {
  description: "A user of the broker, with a password and tags (`administrator`, `monitoring`, `management`, `policymaker`, ...). `refresh` finds a recorded `password` changed on the broker (by re-hashing it with the broker's salt); a write-only `password_wo` cannot be compared.",
  inputs: {
    name: t.string({ required: true, replaceOnChange: true, description: "The user's name." }),
    password: t.string({ secret: true, description: "The user's password, recorded as a secret; sent to the broker, which keeps only a salted hash. Give it or `password_wo`." }),
    password_wo: t.string({
      writeOnly: "password_wo_version",
      description: "The user's password, instead of `password`: set when the user is created and when `password_wo_version` changes. A change made on the broker is not found by refresh.",
    }),
    password_wo_version: t.integer({ description: "The version of `password_wo`: change it (1, 2, ...) to set a new `password_wo`." }),
    tags: t.array(t.string(), { default: [], description: "The user's tags, e.g. `administrator` or `monitoring`." }),
  },
  outputs: {
    name: t.string({ required: true }),
    tags: t.array(t.string(), { required: true }),
  },
  check(inputs) {
    checkName("name", inputs.name);
    for (const tag of inputs.tags ?? []) {
      if (typeof tag === "string" && (tag === "" || tag.includes(","))) {
        throw InvalidInputs.of("tags", `\`${tag}\` is not a tag: tags are non-empty and have no comma`);
      }
    }
    if (inputs.password !== undefined && inputs.password_wo !== undefined) {
      throw InvalidInputs.of("password_wo", "give `password` or `password_wo`, not both");
    }
    if (inputs.password === undefined && inputs.password_wo === undefined) {
      throw InvalidInputs.of("password", "give `password`, or `password_wo` with `password_wo_version`");
    }
    if (inputs.password_wo !== undefined && inputs.password_wo_version === undefined) {
      throw InvalidInputs.of("password_wo_version", "give password_wo_version too: changing it is what sends a new password_wo");
    }
  },
  async create(inputs) {
    await refuseExisting(`users/${path(inputs.name)}`, `user \`${inputs.name}\``, inputs.name);
    return { id: inputs.name, outputs: await writeUser(inputs) };
  },
  async read(state) {
    const user = await get<BrokerUser>(`users/${path(state.id)}`);
    if (!user) return null;
    const tags = tagList(user.tags);
    const inputs: UserInputs = { ...state.inputs, name: user.name, tags };
    // A recorded password the broker's hash no longer matches was changed there: it is
    // recorded as unknown (left out), so that the next `up` sets it again.
    const recorded = state.inputs.password;
    if (recorded !== undefined && (await passwordMatches(recorded, user)) === false) {
      delete inputs.password;
    }
    return { inputs, outputs: { name: user.name, tags } };
  },
  async update(_olds, news) {
    return writeUser(news);
  },
  async delete(state) {
    await remove(`users/${path(state.id)}`);
  },
};

/**
 * Deletes a user's permissions on a vhost. The broker answers 500 rather than 404 when the user
 * or the vhost is gone (deleted in parallel, or out of band), which also takes the permissions
 * with it: that is success.
 */
async function removeGrant(where: string, user: string, vhost: string): Promise<void> {
  try {
    await remove(where);
  } catch (e) {
    if (!(e instanceof ApiError)) throw e;
    const userGone = (await get<unknown>(`users/${path(user)}`)) === undefined;
    if (!userGone && (await get<unknown>(`vhosts/${path(vhost)}`)) !== undefined) throw e;
  }
}

// --- Permissions -------------------------------------------------------------------------

interface PermissionsInputs {
  user: string;
  vhost: string;
  configure: string;
  write: string;
  read: string;
}

const regex = (what: string) =>
  t.string({ required: true, description: `A regular expression of the resource names the user may ${what} (\`.*\` all, \`^$\` none).` });

export const Permissions: ResourceType<PermissionsInputs, PermissionsInputs> = {
  description: "What a user may configure, write and read in a vhost.",
  inputs: {
    user: t.string({ required: true, replaceOnChange: true, description: "The user." }),
    vhost: vhostProp,
    configure: regex("configure (declare, delete)"),
    write: regex("write to (publish, bind from)"),
    read: regex("read from (consume, bind to)"),
  },
  outputs: {
    user: t.string({ required: true }),
    vhost: t.string({ required: true }),
    configure: t.string({ required: true }),
    write: t.string({ required: true }),
    read: t.string({ required: true }),
  },
  check(inputs) {
    checkName("user", inputs.user);
    checkName("vhost", inputs.vhost);
  },
  async create(inputs) {
    const where = `permissions/${path(inputs.vhost, inputs.user)}`;
    const id = inVhost(inputs.user, inputs.vhost);
    await refuseExisting(where, `a permission of user \`${inputs.user}\` on vhost \`${inputs.vhost}\``, id);
    await put(where, { configure: inputs.configure, write: inputs.write, read: inputs.read });
    return { id, outputs: inputs };
  },
  async read(state) {
    const { name: user, vhost } = parseInVhost(state.id, "permission (USER@VHOST)");
    const found = await get<PermissionsInputs>(`permissions/${path(vhost, user)}`);
    if (!found) return null;
    const now = { user, vhost, configure: found.configure, write: found.write, read: found.read };
    return { inputs: now, outputs: now };
  },
  async update(_olds, news) {
    await put(`permissions/${path(news.vhost, news.user)}`, { configure: news.configure, write: news.write, read: news.read });
    return news;
  },
  async delete(state) {
    const { name: user, vhost } = parseInVhost(state.id, "permission (USER@VHOST)");
    await removeGrant(`permissions/${path(vhost, user)}`, user, vhost);
  },
};

// --- TopicPermissions --------------------------------------------------------------------

interface TopicPermission {
  exchange: string;
  write: string;
  read: string;
}

interface TopicPermissionsInputs {
  user: string;
  vhost: string;
  permissions: TopicPermission[];
}

const topicPermission = t.object(
  {
    exchange: t.string({ required: true, description: "The topic exchange." }),
    write: t.string({ required: true, description: "A regular expression of the routing keys the user may publish with." }),
    read: t.string({ required: true, description: "A regular expression of the routing keys the user may bind with." }),
  },
  { name: "TopicPermission", description: "What a user may publish and bind on one topic exchange." },
);

async function readTopic(user: string, vhost: string): Promise<TopicPermission[] | undefined> {
  const found = await get<TopicPermission[]>(`topic-permissions/${path(vhost, user)}`);
  if (!found || found.length === 0) return undefined;
  return found
    .map(({ exchange, write, read }) => ({ exchange, write, read }))
    .sort((a, b) => (a.exchange < b.exchange ? -1 : a.exchange > b.exchange ? 1 : 0));
}

async function writeTopic(inputs: TopicPermissionsInputs, olds?: TopicPermission[]): Promise<void> {
  const where = `topic-permissions/${path(inputs.vhost, inputs.user)}`;
  // The API clears a user's topic permissions on a vhost all at once, not one exchange's.
  const dropped = (olds ?? []).some((old) => !inputs.permissions.some((p) => p.exchange === old.exchange));
  if (dropped) await remove(where);
  for (const p of inputs.permissions) await put(where, p);
}

export const TopicPermissions: ResourceType<TopicPermissionsInputs, TopicPermissionsInputs> = {
  description: "What a user may publish and bind on the topic exchanges of a vhost, by routing key: all of the user's topic permissions there.",
  inputs: {
    user: t.string({ required: true, replaceOnChange: true, description: "The user." }),
    vhost: vhostProp,
    permissions: t.array(topicPermission, { required: true, description: "One entry per exchange." }),
  },
  outputs: {
    user: t.string({ required: true }),
    vhost: t.string({ required: true }),
    permissions: t.array(topicPermission, { required: true }),
  },
  check(inputs) {
    checkName("user", inputs.user);
    checkName("vhost", inputs.vhost);
    const seen = new Set<string>();
    for (const p of inputs.permissions ?? []) {
      if (typeof p?.exchange !== "string") continue;
      if (seen.has(p.exchange)) throw InvalidInputs.of("permissions", `exchange \`${p.exchange}\` is listed twice`);
      seen.add(p.exchange);
    }
    if (inputs.permissions?.length === 0) throw InvalidInputs.of("permissions", "give at least one exchange's");
  },
  async create(inputs) {
    const id = inVhost(inputs.user, inputs.vhost);
    if (await readTopic(inputs.user, inputs.vhost)) {
      throw new Error(`user \`${inputs.user}\` already has topic permissions on vhost \`${inputs.vhost}\`: adopt them with the resource option import (id \`${id}\`)`);
    }
    await writeTopic(inputs);
    return { id, outputs: inputs };
  },
  async read(state) {
    const { name: user, vhost } = parseInVhost(state.id, "topic permission (USER@VHOST)");
    const permissions = await readTopic(user, vhost);
    if (!permissions) return null;
    // Kept in the program's order where the exchanges are the same, so that order is no drift.
    const order = (state.inputs.permissions ?? []).map((p) => p.exchange);
    const rank = (p: TopicPermission) => (order.includes(p.exchange) ? order.indexOf(p.exchange) : order.length);
    permissions.sort((a, b) => rank(a) - rank(b));
    const now = { user, vhost, permissions };
    return { inputs: now, outputs: now };
  },
  async update(olds, news) {
    await writeTopic(news, olds.inputs.permissions);
    return news;
  },
  async delete(state) {
    const { name: user, vhost } = parseInVhost(state.id, "topic permission (USER@VHOST)");
    await removeGrant(`topic-permissions/${path(vhost, user)}`, user, vhost);
  },
};

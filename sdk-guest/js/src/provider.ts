// The provider side: a provider is a plain object of resource types, functions and
// configuration; `exportProvider` adapts it to the `plinth:plugin/provider` interface.

import { InvalidInputs, NotFound, PartiallyCreated } from "./errors.js";
import { type CheckFailure, type Prop, propertySchemas, typeTree, validate } from "./schema.js";
import { mapStack } from "./sourcemap.js";
import {
  Secret,
  type Properties,
  type Value,
  type WitValue,
  containsSecret,
  decodeProperties,
  encode,
  equal,
  reveal,
  unknown,
} from "./value.js";

/** What a call knows about the resource it is about. */
export interface ResourceContext {
  /** The resource's URN. */
  urn: string;
  /** The resource's name in the program. */
  name: string;
  /** Its type token, e.g. `kv:Entry`. */
  type: string;
}

/** A resource's recorded state. */
export interface State<I = Properties, O = Properties> {
  id: string;
  inputs: I;
  outputs: O;
}

/** What `diff` decides. */
export interface Diff {
  /** Input properties whose change needs an update or a replacement. */
  changed: string[];
  /** Those of `changed` that need a replacement. */
  replaces?: string[];
  /** Delete the old resource before creating its replacement. */
  deleteBeforeReplace?: boolean;
}

/**
 * One resource type. Inputs arrive validated against `inputs` (defaults applied, secrets
 * revealed); outputs declared secret, or named like an input that held a secret, are stored
 * as secrets. `create` and `update` are never called during a preview: the planned outputs
 * are the inputs of the same names and unknown for the rest, unless `plan` says more.
 */
export interface ResourceType<I = any, O = any> {
  description?: string;
  inputs: Record<string, Prop>;
  outputs?: Record<string, Prop>;
  /** Rules the schema cannot say; throw `InvalidInputs`, or return normalized inputs. */
  check?(inputs: I, olds: I | undefined, ctx: ResourceContext): I | void | Promise<I | void>;
  /** By default: the inputs that differ; those marked `replaceOnChange` (or all of them, when
   * there is no `update`) replace the resource. */
  diff?(olds: State<I, O>, news: I, ctx: ResourceContext): Diff | Promise<Diff>;
  /** The outputs a preview shows for a resource about to be created or updated. */
  plan?(inputs: I, ctx: ResourceContext): Partial<O> | Promise<Partial<O>>;
  create(inputs: I, ctx: ResourceContext): { id: string; outputs: O } | Promise<{ id: string; outputs: O }>;
  /** The resource as it exists now, or `null` if it is gone (what `refresh` records). */
  read?(state: State<I, O>, ctx: ResourceContext): ReadResult<I, O> | null | Promise<ReadResult<I, O> | null>;
  /** Without it, every change replaces the resource. */
  update?(olds: State<I, O>, news: I, ctx: ResourceContext): O | Promise<O>;
  delete?(state: State<I, O>, ctx: ResourceContext): void | Promise<void>;
}

export interface ReadResult<I = Properties, O = Properties> {
  id?: string;
  inputs?: I;
  outputs: O;
}

/** A function programs call with `ctx.invoke`. */
export interface FunctionType<A = any, R = any> {
  description?: string;
  inputs: Record<string, Prop>;
  output: Prop;
  invoke(args: A): R | Promise<R>;
}

export interface Capabilities {
  dirs: { guest: string; write: boolean; why: string }[];
  env: string[];
  tcp: string[];
  udp: string[];
  http: string[];
}

export interface ProviderDefinition<C = any> {
  name: string;
  version: string;
  description?: string;
  /** What the provider asks the project to grant; nothing by default. */
  capabilities?: Partial<Capabilities>;
  config?: Record<string, Prop>;
  /** Receives the validated configuration before any other call. */
  configure?(config: C): void | Promise<void>;
  resources: Record<string, ResourceType>;
  functions?: Record<string, FunctionType>;
}

/** Declares a provider; `export default provider({...})` from a provider's entry module. */
export function provider<C>(definition: ProviderDefinition<C>): ProviderDefinition<C> {
  return definition;
}

type WitError =
  | { tag: "invalid"; val: CheckFailure[] }
  | { tag: "unknown-type"; val: string }
  | { tag: "not-found" }
  | { tag: "partially-created"; val: { id: string; outputs: WitValue; reasons: string[] } }
  | { tag: "failed"; val: string };

/** How componentize-js returns a `result`'s error: a thrown object with a `payload`. */
function fail(error: WitError): never {
  throw { payload: error };
}

function asWitError(e: unknown): WitError {
  if (e instanceof InvalidInputs) return { tag: "invalid", val: e.failures };
  if (e instanceof NotFound) return { tag: "not-found" };
  if (e instanceof PartiallyCreated) {
    return {
      tag: "partially-created",
      val: { id: e.id, outputs: encode(e.outputs), reasons: e.reasons },
    };
  }
  if (e instanceof Error) {
    // Where an unexpected exception came from, in the provider's own files.
    const at = mapStack(e.stack ?? "")[0];
    const message = e.constructor === Error ? e.message : `${e.name}: ${e.message}`;
    return { tag: "failed", val: at ? `${message} (at ${at})` : message };
  }
  return { tag: "failed", val: String(e) };
}

async function guard<T>(call: () => T | Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (e) {
    fail(asWitError(e));
  }
}

function context(urn: string): ResourceContext {
  const parts = urn.split("::");
  return { urn, type: parts[2] ?? "", name: parts.slice(3).join("::") };
}

/** The `plinth:plugin/provider` exports for `definition`. */
export function exportProvider(definition: ProviderDefinition) {
  const resource = (urn: string): [ResourceType, ResourceContext] => {
    const ctx = context(urn);
    const type = definition.resources[ctx.type];
    if (!type) fail({ tag: "unknown-type", val: ctx.type });
    return [type, ctx];
  };
  const state = (id: string, inputs: WitValue, outputs: WitValue): State =>
    ({ id, inputs: reveal(decodeProperties(inputs)) as Properties, outputs: reveal(decodeProperties(outputs)) as Properties });

  return {
    info() {
      return {
        name: definition.name,
        version: definition.version,
        description: definition.description ?? "",
        capabilities: {
          dirs: definition.capabilities?.dirs ?? [],
          env: definition.capabilities?.env ?? [],
          tcp: definition.capabilities?.tcp ?? [],
          udp: definition.capabilities?.udp ?? [],
          http: definition.capabilities?.http ?? [],
        },
        config: propertySchemas(definition.config),
        resources: Object.entries(definition.resources).map(([token, r]) => ({
          token,
          description: r.description ?? "",
          inputs: propertySchemas(r.inputs),
          outputs: propertySchemas(r.outputs),
        })),
        functions: Object.entries(definition.functions ?? {}).map(([token, f]) => ({
          token,
          description: f.description ?? "",
          inputs: propertySchemas(f.inputs),
          output: typeTree(f.output.type),
        })),
      };
    },

    checkConfig(config: WitValue) {
      const owner = `a setting of the ${definition.name} provider`;
      const { inputs, failures } = validate(definition.config ?? {}, decodeProperties(config), owner);
      return { inputs: encode(inputs), failures };
    },

    async configure(config: WitValue) {
      const { inputs } = validate(definition.config ?? {}, decodeProperties(config));
      await guard(() => definition.configure?.(reveal(inputs)));
    },

    async check(urn: string, olds: WitValue | undefined, news: WitValue) {
      const [type, ctx] = resource(urn);
      return guard(async () => {
        const checked = validate(type.inputs, decodeProperties(news), `an input of ${ctx.type}`);
        if (checked.failures.length > 0 || !type.check) {
          return { inputs: encode(checked.inputs), failures: checked.failures };
        }
        const old = olds === undefined ? undefined : reveal(decodeProperties(olds));
        // Custom checks see plaintext; the secrets given stay secret in what they return.
        const normalized = await type.check(reveal(checked.inputs), old, ctx);
        const inputs = normalized ? resecret(checked.inputs, normalized) : checked.inputs;
        return { inputs: encode(inputs), failures: [] };
      });
    },

    async diff(urn: string, id: string, oldInputs: WitValue, oldOutputs: WitValue, newInputs: WitValue) {
      const [type, ctx] = resource(urn);
      return guard(async () => {
        const news = decodeProperties(newInputs);
        const olds = state(id, oldInputs, oldOutputs);
        const diff = type.diff
          ? await type.diff(olds, reveal(news), ctx)
          : defaultDiff(type, decodeProperties(oldInputs), news);
        return {
          changed: diff.changed,
          replaces: diff.replaces ?? [],
          deleteBeforeReplace: diff.deleteBeforeReplace ?? false,
        };
      });
    },

    async create(urn: string, inputs: WitValue, preview: boolean) {
      const [type, ctx] = resource(urn);
      return guard(async () => {
        const given = decodeProperties(inputs);
        if (preview) return { id: "", outputs: encode(await planned(type, given, ctx)) };
        const created = await type.create(reveal(given), ctx);
        return { id: created.id, outputs: encode(secretOutputs(type, given, created.outputs)) };
      });
    },

    async read(urn: string, id: string, inputs: WitValue, outputs: WitValue) {
      const [type, ctx] = resource(urn);
      return guard(async () => {
        const recorded = state(id, inputs, outputs);
        if (!type.read) {
          return { id, inputs, outputs };
        }
        const found = await type.read(recorded, ctx);
        if (!found) return undefined;
        const givenInputs = decodeProperties(inputs);
        const newInputs = found.inputs ? resecret(givenInputs, found.inputs) : givenInputs;
        return {
          id: found.id ?? id,
          inputs: encode(newInputs),
          outputs: encode(secretOutputs(type, newInputs, found.outputs)),
        };
      });
    },

    async update(urn: string, id: string, oldInputs: WitValue, oldOutputs: WitValue, newInputs: WitValue, preview: boolean) {
      const [type, ctx] = resource(urn);
      return guard(async () => {
        const news = decodeProperties(newInputs);
        if (preview) return encode(await planned(type, news, ctx));
        if (!type.update) throw new Error(`${ctx.type} cannot be updated in place; it is replaced`);
        const outputs = await type.update(state(id, oldInputs, oldOutputs), reveal(news), ctx);
        return encode(secretOutputs(type, news, outputs));
      });
    },

    async delete(urn: string, id: string, inputs: WitValue, outputs: WitValue) {
      const [type, ctx] = resource(urn);
      await guard(() => type.delete?.(state(id, inputs, outputs), ctx));
    },

    async invoke(token: string, args: WitValue) {
      const fn = definition.functions?.[token];
      if (!fn) fail({ tag: "unknown-type", val: token });
      return guard(async () => {
        const { inputs, failures } = validate(fn.inputs, decodeProperties(args), `an argument of ${token}`);
        if (failures.length > 0) throw new InvalidInputs(failures);
        return encode((await fn.invoke(reveal(inputs))) as Value);
      });
    },
  };
}

/** One write-only input, as `plinth:inputs/write-only` states it. */
interface WitWriteOnlyInput {
  type: string;
  name: string;
  version: string;
}

/**
 * The `plinth:inputs/write-only` export for `definition`: the resource inputs declared with
 * `writeOnly`, each with its version input, which the host checks against `info`.
 */
export function exportWriteOnly(definition: ProviderDefinition) {
  return {
    writeOnlyInputs(): WitWriteOnlyInput[] {
      return Object.entries(definition.resources).flatMap(([type, r]) =>
        Object.entries(r.inputs).flatMap(([name, p]) =>
          p.writeOnly === undefined ? [] : [{ type, name, version: p.writeOnly }],
        ),
      );
    },
  };
}

function defaultDiff(type: ResourceType, olds: Properties, news: Properties): Diff {
  const keys = new Set([...Object.keys(olds), ...Object.keys(news)]);
  const changed = [...keys].filter((k) => !equal(olds[k] ?? null, news[k] ?? null)).sort();
  const replaces = type.update ? changed.filter((k) => type.inputs[k]?.replaceOnChange) : changed;
  return { changed, replaces };
}

/** The outputs of a preview: inputs of the same names, unknown for the rest. */
async function planned(type: ResourceType, inputs: Properties, ctx: ResourceContext): Promise<Properties> {
  const plan = type.plan ? await type.plan(reveal(inputs), ctx) : {};
  const outputs: Properties = {};
  for (const name of Object.keys(type.outputs ?? {})) {
    const value = name in plan ? (plan as Properties)[name] : name in inputs ? inputs[name] : unknown;
    outputs[name] = value;
  }
  return secretOutputs(type, inputs, outputs);
}

/** Outputs with secrets where the schema says so or where an input of the same name was one. */
function secretOutputs(type: ResourceType, inputs: Properties, outputs: Properties): Properties {
  const out: Properties = {};
  for (const [name, value] of Object.entries(outputs)) {
    if (value === undefined) continue;
    // An output named like an input that held a secret anywhere may hold it too.
    const secret = type.outputs?.[name]?.secret || containsSecret(inputs[name] ?? null);
    out[name] = secret && !(value instanceof Secret) ? new Secret(value) : value;
  }
  return out;
}

/** `normalized` with the properties that held secrets in `given` secret again. */
function resecret(given: Properties, normalized: Properties): Properties {
  const out: Properties = {};
  for (const [name, value] of Object.entries(normalized)) {
    if (value === undefined) continue;
    const secret = containsSecret(given[name] ?? null) && !containsSecret(value);
    out[name] = secret ? new Secret(value) : value;
  }
  return out;
}

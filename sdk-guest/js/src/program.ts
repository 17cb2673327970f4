/// <reference path="./monitor.d.ts" />
// The program side: `main(ctx)` declares resources through the `plinth:plugin/monitor` import;
// `exportProgram` adapts it to the `callbacks` interface the host calls.

import * as monitor from "plinth:plugin/monitor@0.3.0";
import {
  OutputRef,
  Secret,
  type Properties,
  type Value,
  type WitValue,
  containsOutputRef,
  containsSecret,
  containsUnknown,
  decode,
  encode,
  plain,
  reveal,
  unknown,
} from "./value.js";
import { mapStack } from "./sourcemap.js";

/**
 * A value that may not be known until the engine has done its work: another resource's output,
 * or something computed from one. Pass it as an input or a stack output, or transform it with
 * `apply`. It never blocks.
 */
export class Output<T = unknown> {
  /** @internal */
  constructor(readonly value: Value) {}

  /** An output whose value is known now. */
  static of<T>(value: T): Output<T> {
    return new Output(value as Value);
  }

  /** A known value made secret: hidden in displays and sealed in state wherever it goes. */
  static secret<T>(value: T | Output<T>): Output<T> {
    const inner = value instanceof Output ? value.value : (value as Value);
    return new Output(inner instanceof Secret ? inner : new Secret(inner));
  }

  /** Several outputs combined, for one `apply` that sees them all (in order). */
  static all<A extends unknown[]>(outputs: { [K in keyof A]: A[K] | Output<A[K]> }): Output<A> {
    return new AllOutputs((outputs as unknown[]).map(toValue)) as unknown as Output<A>;
  }

  /** Used when an output is a resource input or a stack output. */
  toValue(): Value {
    return this.value;
  }

  /** True if the value is known now. */
  get isKnown(): boolean {
    return !containsOutputRef(this.value) && !containsUnknown(this.value);
  }

  /**
   * Transforms the value once it is known. If it is known now, `fn` runs at once; otherwise the
   * engine resumes it when the value resolves. During a preview, an unknown value makes the
   * result unknown and `fn` does not run. A secret is passed revealed and makes the result
   * secret. `fn` may return a value, an `Output` or a promise of either.
   */
  apply<R>(fn: (value: T) => R | Output<R> | Promise<R | Output<R>>): Output<R> {
    return new Output(applyClosure([this.value], (values) => fn(values[0] as T)));
  }

  toString(): string {
    return "[Output: use .apply() to read the value]";
  }
}

class AllOutputs extends Output<unknown[]> {
  constructor(private readonly parts: Value[]) {
    super(parts);
  }
  apply<R>(fn: (values: unknown[]) => R | Output<R> | Promise<R | Output<R>>): Output<R> {
    return new Output(applyClosure(this.parts, fn));
  }
}

function toValue(v: unknown): Value {
  return v instanceof Output ? v.value : (v as Value);
}

// --- applies ------------------------------------------------------------------------------

type Closure = (values: unknown[]) => unknown;

interface Pending {
  arity: number;
  /** The closure to run with the resolved inputs, or the result an async closure promised. */
  run: Closure | Promise<unknown>;
  secret: boolean;
}

const pending = new Map<bigint, Pending>();

function applyClosure(inputs: Value[], fn: Closure): Value {
  if (inputs.some(containsOutputRef)) {
    const handle = monitor.registerApply(inputs.map(encode));
    pending.set(handle, { arity: inputs.length, run: fn, secret: false });
    return applyResult(handle);
  }
  if (inputs.some(containsUnknown)) return unknown;
  const secret = inputs.some(containsSecret);
  const result = fn(inputs.map(plain));
  if (isPromise(result)) {
    // An async closure's result comes later: the engine resumes it like any other apply.
    const handle = monitor.registerApply(inputs.map(encode));
    pending.set(handle, { arity: inputs.length, run: result, secret });
    return applyResult(handle);
  }
  return secretIf(secret, toValue(result));
}

function applyResult(handle: bigint): Value {
  return new OutputRef(handle, { tag: "property", val: [] });
}

function isPromise(v: unknown): v is Promise<unknown> {
  return typeof (v as { then?: unknown } | null)?.then === "function";
}

function secretIf(secret: boolean, v: Value): Value {
  return secret && !(v instanceof Secret) ? new Secret(v) : v;
}

async function resumeApply(handle: bigint, inputs: WitValue[]): Promise<Value> {
  const entry = pending.get(handle);
  if (!entry) throw new Error(`no apply with handle ${handle} is pending`);
  pending.delete(handle);
  if (inputs.length !== entry.arity) {
    throw new Error(`apply ${handle} takes ${entry.arity} inputs, but was resumed with ${inputs.length}`);
  }
  const values = inputs.map(decode);
  if (values.some(containsUnknown)) return unknown;
  const secret = entry.secret || values.some(containsSecret);
  const result = isPromise(entry.run) ? await entry.run : await entry.run(values.map(plain));
  return secretIf(secret, toValue(result));
}

// --- resources ----------------------------------------------------------------------------

/** Options that change how the engine treats a resource. */
export interface ResourceOptions {
  /** Registrations this one depends on beyond those its inputs refer to. */
  dependsOn?: Resource[];
  /** The component this resource belongs to. */
  parent?: Resource;
  /** An explicitly registered provider resource to manage it. */
  provider?: Resource;
  /** Refuse to delete or replace it while set. */
  protect?: boolean;
  /** Leave the real resource in place when it leaves the stack. */
  retainOnDelete?: boolean;
  /** Delete the old resource before creating its replacement. */
  deleteBeforeReplace?: boolean;
  /** Input properties whose changes are ignored. */
  ignoreChanges?: string[];
  /** Input properties whose changes replace the resource. */
  replaceOnChanges?: string[];
  /** Old URNs it was known by, so that a rename does not replace it. */
  aliases?: string[];
  /** How long each operation may take, in seconds. */
  customTimeouts?: { create?: number; update?: number; delete?: number };
  /** Adopt the existing resource with this id instead of creating one. */
  import?: string;
}

/** A registered resource; its outputs resolve as the engine works. */
export class Resource {
  /** @internal */
  constructor(readonly handle: bigint) {}

  /** The output property `name`. */
  output<T = unknown>(name: string): Output<T> {
    return new Output(new OutputRef(this.handle, { tag: "property", val: [name] }));
  }

  /** The provider-assigned id. */
  get id(): Output<string> {
    return new Output(new OutputRef(this.handle, { tag: "id" }));
  }

  /** The URN. */
  get urn(): Output<string> {
    return new Output(new OutputRef(this.handle, { tag: "urn" }));
  }
}

/** A component resource: a named group of children, with outputs of its own. */
export class ComponentResource extends Resource {
  /** Sets the component's outputs. */
  registerOutputs(outputs: Record<string, unknown>): void {
    monitor.registerOutputs(this.handle, encode(outputs as Properties));
  }
}

function witOptions(o: ResourceOptions = {}): monitor.ResourceOptions {
  const seconds = (v: number | undefined) => (v === undefined ? undefined : Math.ceil(v));
  const t = o.customTimeouts;
  return {
    dependsOn: (o.dependsOn ?? []).map((r) => r.handle),
    parent: o.parent?.handle,
    provider: o.provider?.handle,
    protect: o.protect ?? false,
    retainOnDelete: o.retainOnDelete ?? false,
    deleteBeforeReplace: o.deleteBeforeReplace ?? false,
    ignoreChanges: o.ignoreChanges ?? [],
    replaceOnChanges: o.replaceOnChanges ?? [],
    aliases: o.aliases ?? [],
    customTimeouts: t && {
      createSeconds: seconds(t.create),
      updateSeconds: seconds(t.update),
      deleteSeconds: seconds(t.delete),
    },
    importId: o.import,
  };
}

function inputsValue(inputs: Record<string, unknown>, name: string): WitValue {
  if (typeof inputs !== "object" || inputs === null || Array.isArray(inputs)) {
    throw new TypeError(`the inputs of \`${name}\` must be an object`);
  }
  try {
    return encode(inputs as Properties);
  } catch (e) {
    throw new TypeError(`the inputs of \`${name}\`: ${(e as Error).message}`);
  }
}

// --- the context --------------------------------------------------------------------------

/** A missing required configuration value. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ConfigError";
  }
}

/** The program's view of the engine during one run. */
export class Context {
  readonly project: string;
  readonly stack: string;
  /** True during `preview`: outputs of resources not created yet are unknown. */
  readonly dryRun: boolean;
  /** @internal */
  readonly exports: Properties = {};

  /** @internal */
  constructor() {
    const info = monitor.getStackInfo();
    this.project = info.project;
    this.stack = info.stack;
    this.dryRun = info.dryRun;
  }

  /**
   * The configuration value `key` (`key` in the project's namespace, or `namespace:key`).
   * This reveals a secret one; read secrets with `secretConfig`.
   */
  config(key: string): string | undefined {
    const value = configValue(key);
    const text = value === undefined ? undefined : reveal(value);
    return typeof text === "string" ? text : undefined;
  }

  /** The configuration value `key`, or an error naming the `plinth config set` to run. */
  requireConfig(key: string): string {
    const value = this.config(key);
    if (value === undefined) throw missing(key, false);
    return value;
  }

  /** The configuration value `key` as a number; a value that is not one is an error. */
  configNumber(key: string): number | undefined {
    const text = this.config(key);
    if (text === undefined) return undefined;
    const n = Number(text);
    if (text.trim() === "" || !Number.isFinite(n)) {
      throw new ConfigError(`configuration value \`${key}\` = \`${text}\` is not a number`);
    }
    return n;
  }

  /** The configuration value `key` as a boolean (`true` or `false`). */
  configBoolean(key: string): boolean | undefined {
    const text = this.config(key);
    if (text === undefined) return undefined;
    if (text === "true" || text === "false") return text === "true";
    throw new ConfigError(`configuration value \`${key}\` = \`${text}\` is not true or false`);
  }

  /** The configuration value `key` as a secret output, hidden wherever it flows. */
  secretConfig(key: string): Output<string> | undefined {
    const value = configValue(key);
    return value === undefined ? undefined : new Output(new Secret(reveal(value)));
  }

  /** The configuration value `key` as a secret, or an error naming the command to set it. */
  requireSecretConfig(key: string): Output<string> {
    const value = this.secretConfig(key);
    if (value === undefined) throw missing(key, true);
    return value;
  }

  /** Declares a resource of type `type` (e.g. `random:RandomString`) managed by a provider. */
  resource(type: string, name: string, inputs: Record<string, unknown> = {}, options?: ResourceOptions): Resource {
    const handle = monitor.registerResource({
      type,
      name,
      custom: true,
      inputs: inputsValue(inputs, name),
      options: witOptions(options),
    });
    return new Resource(handle);
  }

  /** Declares a component: a named group of resources (made children with `parent`). */
  component(type: string, name: string, options?: ResourceOptions): ComponentResource {
    const handle = monitor.registerResource({
      type,
      name,
      custom: false,
      inputs: encode({}),
      options: witOptions(options),
    });
    return new ComponentResource(handle);
  }

  /** Reads an existing resource by `id` without managing it. */
  read(type: string, name: string, id: string, inputs: Record<string, unknown> = {}, options?: ResourceOptions): Resource {
    return new Resource(monitor.readResource(type, name, id, inputsValue(inputs, name), witOptions(options)));
  }

  /** Sets the stack output `name`. */
  export(name: string, value: unknown): void {
    this.exports[name] = toValue(value);
  }

  /** Calls the provider function `token` (e.g. `kv:get`) with known arguments. */
  async invoke<R = unknown>(token: string, args: Record<string, unknown> = {}): Promise<R> {
    let result: WitValue;
    try {
      result = monitor.invoke(token, inputsValue(args, token));
    } catch (e) {
      const payload = (e as { payload?: unknown }).payload ?? e;
      throw new Error(`${token}: ${payload}`);
    }
    return plain(decode(result)) as R;
  }

  /** Messages shown with the run, by level. */
  readonly log = {
    debug: (message: string) => monitor.log("debug", message),
    info: (message: string) => monitor.log("info", message),
    warn: (message: string) => monitor.log("warn", message),
    error: (message: string) => monitor.log("error", message),
  };
}

function configValue(key: string): Value | undefined {
  const value = monitor.config(key);
  return value === undefined ? undefined : decode(value);
}

function missing(key: string, secret: boolean): ConfigError {
  const command = `plinth config set ${key} <value>${secret ? " --secret" : ""}`;
  return new ConfigError(`missing required configuration value \`${key}\` (set it with \`${command}\`)`);
}

// --- exports ------------------------------------------------------------------------------

/** The program's body: declares resources; may be async. */
export type Main = (ctx: Context) => void | Promise<void>;

/** The `callbacks` exports for `main`. */
export function exportProgram(main: Main, describe: (e: unknown) => string = describeError) {
  return {
    async run(): Promise<void> {
      try {
        const ctx = new Context();
        await main(ctx);
        monitor.registerOutputs(undefined, encode(ctx.exports));
      } catch (e) {
        throw { payload: describe(e) };
      }
    },
    async resume(handle: bigint, inputs: WitValue[]): Promise<WitValue> {
      try {
        return encode(await resumeApply(handle, inputs));
      } catch (e) {
        throw { payload: describe(e) };
      }
    },
  };
}

/** An exception's message and where it was thrown, in the program's own source files. */
export function describeError(e: unknown): string {
  if (e instanceof Error) {
    const message = `${e.name}: ${e.message}`;
    const frames = mapStack(e.stack ?? "").slice(0, 5);
    return frames.length ? `${message}\n${frames.map((f) => `    at ${f}`).join("\n")}` : message;
  }
  return String(e);
}

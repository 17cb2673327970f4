// Policy packs, in the manner of Pulumi's CrossGuard: a `PolicyPack` holds policies that judge
// each resource a deployment is about to create, update or replace, and the whole stack once the
// program has ended; `exportPolicyPack` adapts it to the `plinth:policy/analyzer` interface.
// A pack runs granted nothing; secrets reach it as `Secret` values, which print as `[secret]`,
// and the host masks whatever it returns.

import { mapStack } from "./sourcemap.js";
import { type Properties, type Value, type WitValue, decodeProperties, isPlainObject } from "./value.js";

/** What a violation of a policy does to a run. */
export type EnforcementLevel = "advisory" | "mandatory" | "disabled";

/** A JSON Schema of one configuration property (`{ type: "integer", minimum: 1, default: 16 }`). */
export interface JsonSchema {
  type?: JsonType | JsonType[];
  description?: string;
  default?: unknown;
  enum?: unknown[];
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  [keyword: string]: unknown;
}

export type JsonType = "string" | "integer" | "number" | "boolean" | "array" | "object" | "null";

/**
 * A policy's configuration: its properties, which of them must be given, and whether others
 * may be (by default not, so that a misspelt setting is an error rather than ignored).
 */
export interface PolicyConfigSchema {
  properties: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean;
}

/** A resource as a policy sees it. */
export interface PolicyResource {
  /** The type token, e.g. `random:RandomPassword`. */
  type: string;
  urn: string;
  /** The resource's name: the last part of its URN. */
  name: string;
  /** The inputs its provider checked: secrets as `Secret`, values not known yet as `unknown`. */
  props: Properties;
  /** The recorded inputs of a resource being updated or replaced. */
  oldProps?: Properties;
  /** The URN of the provider resource that manages it. */
  provider?: string;
  parent?: string;
  dependencies: string[];
}

/** What `validateResource` is given: the resource, and the policy's configuration. */
export interface ResourceValidationArgs extends PolicyResource {
  /** The policy's configuration: the user's settings over the schema's defaults. */
  getConfig<T = Record<string, unknown>>(): T;
}

/** What `validateStack` is given: every resource of the stack. */
export interface StackValidationArgs {
  resources: PolicyResource[];
  getConfig<T = Record<string, unknown>>(): T;
}

/** Reports a violation of the resource being judged, at `property` if given. */
export type ReportViolation = (message: string, property?: string) => void;

/** Reports a violation of the resource `urn` (of the stack as a whole without one). */
export type ReportStackViolation = (message: string, urn?: string, property?: string) => void;

export type ResourceValidation = (args: ResourceValidationArgs, reportViolation: ReportViolation) => void | Promise<void>;
export type StackValidation = (args: StackValidationArgs, reportViolation: ReportStackViolation) => void | Promise<void>;

/** One policy: a name, what it enforces, and one check or both. */
export interface Policy {
  /** Unique within the pack, e.g. `password-length`: the key of its configuration. */
  name: string;
  description: string;
  /** Its level unless the user's configuration sets another; by default the pack's. */
  enforcementLevel?: EnforcementLevel;
  configSchema?: PolicyConfigSchema;
  validateResource?: ResourceValidation | ResourceValidation[];
  validateStack?: StackValidation;
}

export interface PolicyPackArgs {
  /** The pack's version; 0.0.0 unless given. */
  version?: string;
  /** The level of its policies that set none; advisory unless given. */
  enforcementLevel?: EnforcementLevel;
  policies: Policy[];
}

const LEVELS: readonly EnforcementLevel[] = ["advisory", "mandatory", "disabled"];

/** A policy pack: `export default new PolicyPack("name", { policies: [...] })`. */
export class PolicyPack {
  readonly version: string;
  readonly enforcementLevel: EnforcementLevel;
  readonly policies: readonly Policy[];

  constructor(
    readonly name: string,
    args: PolicyPackArgs,
  ) {
    if (!name) throw new Error("a policy pack needs a name");
    this.version = args.version ?? "0.0.0";
    this.enforcementLevel = level(args.enforcementLevel ?? "advisory", `policy pack \`${name}\``);
    this.policies = args.policies;
    const names = new Set<string>();
    for (const policy of args.policies) {
      if (!policy.name) throw new Error(`policy pack \`${name}\`: a policy has no name`);
      if (names.has(policy.name)) throw new Error(`policy pack \`${name}\`: two policies are named \`${policy.name}\``);
      names.add(policy.name);
      if (policy.enforcementLevel !== undefined) level(policy.enforcementLevel, `policy \`${policy.name}\``);
      if (!policy.validateResource && !policy.validateStack) {
        throw new Error(`policy \`${policy.name}\` has neither validateResource nor validateStack`);
      }
    }
  }
}

function level(value: string, owner: string): EnforcementLevel {
  if (!LEVELS.includes(value as EnforcementLevel)) {
    throw new Error(`${owner}: the enforcement level "${value}" is not one of ${LEVELS.join(", ")}`);
  }
  return value as EnforcementLevel;
}

/** The resource as componentize-js lifts it. */
interface WitResource {
  type: string;
  urn: string;
  inputs: WitValue;
  oldInputs?: WitValue;
  provider?: string;
  parent?: string;
  dependencies: string[];
}

interface WitViolation {
  policy: string;
  message: string;
  property: string;
  urn: string;
}

function resource(r: WitResource): PolicyResource {
  return {
    type: r.type,
    urn: r.urn,
    name: r.urn.split("::").slice(3).join("::"),
    props: decodeProperties(r.inputs),
    oldProps: r.oldInputs === undefined ? undefined : decodeProperties(r.oldInputs),
    provider: r.provider,
    parent: r.parent,
    dependencies: r.dependencies,
  };
}

/** The defaults of `schema`'s properties. */
function defaults(schema: PolicyConfigSchema | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, property] of Object.entries(schema?.properties ?? {})) {
    if (property.default !== undefined) out[key] = property.default;
  }
  return out;
}

/** The schema as JSON Schema text, as the host is told it. */
export function schemaText(schema: PolicyConfigSchema | undefined): string {
  if (!schema) return "";
  return JSON.stringify({
    type: "object",
    properties: schema.properties,
    required: schema.required ?? [],
    additionalProperties: schema.additionalProperties ?? false,
  });
}

function typeOf(value: unknown): JsonType {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
  return typeof value as JsonType;
}

/**
 * Checks `config` against `schema` (the keywords of `JsonSchema` above): the first thing
 * wrong, or nothing.
 */
export function configProblem(schema: PolicyConfigSchema | undefined, config: unknown): string | undefined {
  if (!isPlainObject(config as Value)) return "the configuration must be a JSON object";
  const given = config as Record<string, unknown>;
  const properties = schema?.properties ?? {};
  for (const key of schema?.required ?? []) {
    if (!(key in given)) return `\`${key}\` is required`;
  }
  for (const [key, value] of Object.entries(given)) {
    const property = properties[key];
    if (!property) {
      if (schema?.additionalProperties) continue;
      const known = Object.keys(properties);
      return `it takes no setting \`${key}\` (${known.length ? `it takes: ${known.join(", ")}` : "it takes none"})`;
    }
    const problem = valueProblem(property, value);
    if (problem) return `\`${key}\` ${problem}`;
  }
  return undefined;
}

function valueProblem(schema: JsonSchema, value: unknown): string | undefined {
  const shown = JSON.stringify(value);
  if (schema.type !== undefined) {
    const types = Array.isArray(schema.type) ? schema.type : [schema.type];
    const actual = typeOf(value);
    const fits = types.includes(actual) || (actual === "integer" && types.includes("number"));
    if (!fits) return `must be ${types.map((t) => `${/^[aeiou]/.test(t) ? "an" : "a"} ${t}`).join(" or ")}, not ${shown}`;
  }
  if (schema.enum && !schema.enum.some((e) => JSON.stringify(e) === shown)) {
    return `must be one of ${schema.enum.map((e) => JSON.stringify(e)).join(", ")}, not ${shown}`;
  }
  if (typeof value === "number") {
    if (schema.minimum !== undefined && value < schema.minimum) return `must be at least ${schema.minimum}, not ${shown}`;
    if (schema.maximum !== undefined && value > schema.maximum) return `must be at most ${schema.maximum}, not ${shown}`;
  }
  if (typeof value === "string") {
    if (schema.minLength !== undefined && value.length < schema.minLength) return `must have at least ${schema.minLength} characters`;
    if (schema.maxLength !== undefined && value.length > schema.maxLength) return `must have at most ${schema.maxLength} characters`;
  }
  return undefined;
}

/** Says where an exception a policy threw came from (on stderr, which the host shows), and
 * throws it on: a policy that cannot judge fails the pack rather than letting a change pass. */
function failed(policy: string, e: unknown): never {
  if (e instanceof Error) {
    const at = mapStack(e.stack ?? "")[0];
    console.error(`policy \`${policy}\` threw ${e.name}: ${e.message}${at ? ` (at ${at})` : ""}`);
  } else {
    console.error(`policy \`${policy}\` threw ${String(e)}`);
  }
  throw e;
}

/** The `plinth:policy/analyzer` exports for `pack`. */
export function exportPolicyPack(pack: PolicyPack) {
  const configs = new Map<string, Record<string, unknown>>();
  for (const policy of pack.policies) configs.set(policy.name, defaults(policy.configSchema));
  const getConfig = (policy: Policy) => <T>() => configs.get(policy.name) as T;

  return {
    info() {
      return {
        name: pack.name,
        version: pack.version,
        policies: pack.policies.map((p) => ({
          name: p.name,
          description: p.description,
          enforcementLevel: p.enforcementLevel ?? pack.enforcementLevel,
          configSchema: schemaText(p.configSchema),
        })),
      };
    },

    configure(settings: { policy: string; config: string }[]) {
      for (const { policy: name, config } of settings) {
        const policy = pack.policies.find((p) => p.name === name);
        if (!policy) throw { payload: `this pack has no policy \`${name}\`` };
        let parsed: unknown;
        try {
          parsed = JSON.parse(config);
        } catch (e) {
          throw { payload: `\`${name}\`: the configuration is not JSON: ${(e as Error).message}` };
        }
        const problem = configProblem(policy.configSchema, parsed);
        if (problem) throw { payload: `\`${name}\`: ${problem}` };
        configs.set(name, { ...defaults(policy.configSchema), ...(parsed as Record<string, unknown>) });
      }
    },

    async analyzeResource(witResource: WitResource): Promise<WitViolation[]> {
      const judged = resource(witResource);
      const violations: WitViolation[] = [];
      for (const policy of pack.policies) {
        const checks = policy.validateResource;
        if (!checks) continue;
        const report: ReportViolation = (message, property) =>
          violations.push({ policy: policy.name, message: String(message), property: property ?? "", urn: "" });
        const args: ResourceValidationArgs = { ...judged, getConfig: getConfig(policy) };
        try {
          for (const check of Array.isArray(checks) ? checks : [checks]) await check(args, report);
        } catch (e) {
          failed(policy.name, e);
        }
      }
      return violations;
    },

    async analyzeStack(witResources: WitResource[]): Promise<WitViolation[]> {
      const resources = witResources.map(resource);
      const violations: WitViolation[] = [];
      for (const policy of pack.policies) {
        if (!policy.validateStack) continue;
        const report: ReportStackViolation = (message, urn, property) =>
          violations.push({ policy: policy.name, message: String(message), property: property ?? "", urn: urn ?? "" });
        try {
          await policy.validateStack({ resources, getConfig: getConfig(policy) }, report);
        } catch (e) {
          failed(policy.name, e);
        }
      }
      return violations;
    },
  };
}

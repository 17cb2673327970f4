// Typed schemas: what a provider's resources, functions and configuration take and produce.
// Declared with the `t` builders, sent to the engine as `plinth:plugin/schema` type trees, and
// used by the default `check` to validate and normalize inputs.

import {
  Float,
  OutputRef,
  Secret,
  Unknown,
  type Properties,
  type Value,
  type WitValue,
  encode,
  isPlainObject,
  kindOf,
} from "./value.js";

/** The shape of a value. */
export type Type =
  | { kind: "any" }
  | { kind: "string" }
  | { kind: "integer" }
  | { kind: "number" }
  | { kind: "boolean" }
  | { kind: "array"; items: Type }
  | { kind: "map"; values: Type }
  | { kind: "object"; name?: string; description: string; fields: Record<string, Prop> }
  | { kind: "enum"; values: string[] };

export interface PropOptions {
  description?: string;
  /** Must be given (as an input); is always set (as an output). */
  required?: boolean;
  /** Always a secret, like a generated password. */
  secret?: boolean;
  /** A change replaces the resource instead of updating it. */
  replaceOnChange?: boolean;
  /** The value used when the property is not given. */
  default?: Value;
  /**
   * Write-only (a top-level resource input, such as a password): the name of its version
   * input. The host sends the value to `create`, and to `update` only when the version input
   * changed, and never records, diffs or shows it; it is always secret. `read` and `delete`
   * never see it, and an output of the same name is dropped. Declare the version input too
   * (an integer or a string the program changes whenever it changes this one).
   */
  writeOnly?: string;
}

/** A property: its type and what the schema says about it. */
export interface Prop extends Required<Omit<PropOptions, "default" | "writeOnly">> {
  type: Type;
  default?: Value;
  writeOnly?: string;
}

function prop(type: Type, options: PropOptions = {}): Prop {
  return {
    type,
    description: options.description ?? "",
    required: options.required ?? false,
    secret: (options.secret ?? false) || options.writeOnly !== undefined,
    replaceOnChange: options.replaceOnChange ?? false,
    default: options.default,
    writeOnly: options.writeOnly,
  };
}

/** Builders of property schemas: `t.string({ required: true })`, `t.array(t.integer())`. */
export const t = {
  any: (o?: PropOptions) => prop({ kind: "any" }, o),
  string: (o?: PropOptions) => prop({ kind: "string" }, o),
  integer: (o?: PropOptions) => prop({ kind: "integer" }, o),
  number: (o?: PropOptions) => prop({ kind: "number" }, o),
  boolean: (o?: PropOptions) => prop({ kind: "boolean" }, o),
  array: (items: Prop, o?: PropOptions) => prop({ kind: "array", items: items.type }, o),
  map: (values: Prop, o?: PropOptions) => prop({ kind: "map", values: values.type }, o),
  object: (fields: Record<string, Prop>, o?: PropOptions & { name?: string }) =>
    prop({ kind: "object", name: o?.name, description: o?.description ?? "", fields }, o),
  enum: (values: string[], o?: PropOptions) => prop({ kind: "enum", values }, o),
};

// --- to WIT -------------------------------------------------------------------------------

type WitTypeNode =
  | { tag: "any" | "string" | "integer" | "number" | "boolean" }
  | { tag: "array" | "map"; val: number }
  | { tag: "enum"; val: string[] }
  | {
      tag: "object";
      val: { name: string | undefined; description: string; properties: WitField[] };
    };

interface WitField {
  name: string;
  description: string;
  required: boolean;
  secret: boolean;
  default: WitValue | undefined;
  type: number;
}

export interface WitPropertySchema {
  name: string;
  description: string;
  required: boolean;
  secret: boolean;
  replaceOnChange: boolean;
  type: { nodes: WitTypeNode[] };
  default: WitValue | undefined;
}

/** A type as a flattened tree: `nodes[0]` is the root. */
export function typeTree(type: Type): { nodes: WitTypeNode[] } {
  const nodes: WitTypeNode[] = [];
  const push = (ty: Type): number => {
    const index = nodes.length;
    nodes.push({ tag: "any" });
    switch (ty.kind) {
      case "array":
        nodes[index] = { tag: "array", val: push(ty.items) };
        break;
      case "map":
        nodes[index] = { tag: "map", val: push(ty.values) };
        break;
      case "enum":
        nodes[index] = { tag: "enum", val: ty.values };
        break;
      case "object": {
        const properties = Object.entries(ty.fields).map(([name, field]) => ({
          name,
          description: field.description,
          required: field.required,
          secret: field.secret,
          default: field.default === undefined ? undefined : encode(field.default),
          type: push(field.type),
        }));
        nodes[index] = {
          tag: "object",
          val: { name: ty.name, description: ty.description, properties },
        };
        break;
      }
      default:
        nodes[index] = { tag: ty.kind };
    }
    return index;
  };
  push(type);
  return { nodes };
}

export function propertySchemas(props: Record<string, Prop> = {}): WitPropertySchema[] {
  return Object.entries(props).map(([name, p]) => ({
    name,
    description: p.description,
    required: p.required,
    secret: p.secret,
    replaceOnChange: p.replaceOnChange,
    type: typeTree(p.type),
    default: p.default === undefined ? undefined : encode(p.default),
  }));
}

// --- validation ---------------------------------------------------------------------------

/** A problem with one property; `property` is empty when it concerns the whole input. */
export interface CheckFailure {
  property: string;
  reason: string;
}

/**
 * Validates `given` against `declared` and fills in defaults. Each failure names the property
 * by its path (`rules[0].port`). Unknown values (during a preview) and references pass.
 * `owner` words undeclared keys (`an input of kv:Entry`); without it, they are accepted.
 */
export function validate(
  declared: Record<string, Prop>,
  given: Properties,
  owner?: string,
): { inputs: Properties; failures: CheckFailure[] } {
  const failures: CheckFailure[] = [];
  const inputs = properties(declared, given, "", owner, failures);
  return { inputs, failures };
}

function properties(
  declared: Record<string, Prop>,
  given: Properties,
  path: string,
  owner: string | undefined,
  failures: CheckFailure[],
): Properties {
  const out: Properties = {};
  for (const [key, value] of Object.entries(given)) {
    const at = path ? `${path}.${key}` : key;
    const p = Object.prototype.hasOwnProperty.call(declared, key) ? declared[key] : undefined;
    if (!p) {
      if (owner) {
        const names = Object.keys(declared);
        failures.push({
          property: at,
          reason: names.length
            ? `is not ${owner}, which takes ${names.map((n) => `\`${n}\``).join(", ")}`
            : `is not ${owner}, which takes none`,
        });
      } else {
        out[key] = value;
      }
      continue;
    }
    out[key] = check(p.type, value, at, failures);
  }
  for (const [key, p] of Object.entries(declared)) {
    if (key in out) continue;
    if (p.default !== undefined) out[key] = p.default;
    else if (p.required) {
      failures.push({ property: path ? `${path}.${key}` : key, reason: "is required" });
    }
  }
  return out;
}

function check(type: Type, value: Value, path: string, failures: CheckFailure[]): Value {
  if (value instanceof Unknown || value instanceof OutputRef) return value;
  if (value instanceof Secret) return new Secret(check(type, value.value, path, failures));
  const fail = (expected: string) => {
    failures.push({ property: path, reason: `expected ${expected}, got ${kindOf(value)}` });
    return value;
  };
  switch (type.kind) {
    case "any":
      return value;
    case "string":
      return typeof value === "string" ? value : fail("a string");
    case "integer":
      if (typeof value === "bigint") return value;
      if (typeof value === "number" && Number.isInteger(value)) return value;
      if (value instanceof Float && Number.isInteger(value.value)) return value.value;
      return fail("an integer");
    case "number":
      if (typeof value === "number" || typeof value === "bigint" || value instanceof Float) {
        return value;
      }
      return fail("a number");
    case "boolean":
      return typeof value === "boolean" ? value : fail("a boolean");
    case "enum":
      if (typeof value === "string" && type.values.includes(value)) return value;
      return fail(`one of ${type.values.map((v) => `\`${v}\``).join(", ")}`);
    case "array":
      if (!Array.isArray(value)) return fail("an array");
      return value.map((item, i) => check(type.items, item, `${path}[${i}]`, failures));
    case "map": {
      if (!isPlainObject(value)) return fail("an object");
      const out: Properties = {};
      for (const [k, v] of Object.entries(value)) {
        out[k] = check(type.values, v, `${path}.${k}`, failures);
      }
      return out;
    }
    case "object":
      if (!isPlainObject(value)) return fail("an object");
      return properties(type.fields, value, path, `a field of \`${path}\``, failures);
  }
}

// Values as plinth carries them: the JavaScript side (plain data plus `Secret`, `unknown` and
// references to other resources' outputs) and the WIT side (a flattened tree of typed nodes).

/** A value that must stay encrypted at rest and hidden in every display. */
export class Secret<T = Value> {
  constructor(readonly value: T) {}
  toString(): string {
    return "[secret]";
  }
  toJSON(): string {
    return "[secret]";
  }
}

/** A value not known yet: during a preview, the outputs of resources not created yet. */
export class Unknown {
  private constructor() {}
  static readonly instance = new Unknown();
  toString(): string {
    return "[unknown]";
  }
}

/** The one unknown value. */
export const unknown = Unknown.instance;

/** Forces a whole number to travel as a floating-point number (`3.0`), not an integer. */
export class Float {
  constructor(readonly value: number) {}
}

/** Which field of a registration an output reference names. */
export type OutputField = { tag: "property"; val: string[] } | { tag: "id" } | { tag: "urn" };

/** Program to engine only: the not-yet-known output of another registration. */
export class OutputRef {
  constructor(
    readonly handle: bigint,
    readonly field: OutputField,
  ) {}
}

/**
 * A property value. Whole numbers travel as integers (`8402` stays `8402`), other numbers as
 * floats; a `bigint` is an integer too, and integers beyond 2^53 arrive as `bigint`.
 */
export type Value =
  | null
  | boolean
  | number
  | bigint
  | string
  | Float
  | Secret<Value>
  | Unknown
  | OutputRef
  | Value[]
  | { [key: string]: Value };

/** A property map: an object of values. */
export type Properties = { [key: string]: Value };

// The WIT side, as componentize-js lifts and lowers it.
export type WitNode =
  | { tag: "null" }
  | { tag: "boolean"; val: boolean }
  | { tag: "integer"; val: bigint }
  | { tag: "number"; val: number }
  | { tag: "text"; val: string }
  | { tag: "array"; val: ArrayLike<number> }
  | { tag: "object"; val: [string, number][] }
  | { tag: "secret"; val: number }
  | { tag: "unknown" }
  | { tag: "output"; val: { handle: bigint; field: OutputField } };

export interface WitValue {
  nodes: WitNode[];
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** Flattens `value` into the WIT node tree: `nodes[0]` is the root. */
export function encode(value: Value): WitValue {
  const nodes: WitNode[] = [];
  const push = (v: Value, path: string): number => {
    const index = nodes.length;
    nodes.push({ tag: "null" });
    nodes[index] = node(v, path);
    return index;
  };
  const node = (v: Value, path: string): WitNode => {
    if (v === null || v === undefined) return { tag: "null" };
    switch (typeof v) {
      case "boolean":
        return { tag: "boolean", val: v };
      case "string":
        return { tag: "text", val: v };
      case "bigint":
        if (v < INT64_MIN || v > INT64_MAX) {
          throw new TypeError(`${where(path)}${v} does not fit in a 64-bit integer`);
        }
        return { tag: "integer", val: v };
      case "number":
        if (Number.isSafeInteger(v)) return { tag: "integer", val: BigInt(v) };
        if (!Number.isFinite(v)) throw new TypeError(`${where(path)}${v} is not a finite number`);
        return { tag: "number", val: v };
      case "object":
        break;
      default:
        throw new TypeError(`${where(path)}a ${typeof v} is not a value plinth can carry`);
    }
    if (v instanceof Float) return { tag: "number", val: v.value };
    if (v instanceof Secret) return { tag: "secret", val: push(v.value, path) };
    if (v instanceof Unknown) return { tag: "unknown" };
    if (v instanceof OutputRef) return { tag: "output", val: { handle: v.handle, field: v.field } };
    if (Array.isArray(v)) return { tag: "array", val: v.map((item, i) => push(item, `${path}[${i}]`)) };
    const lift = (v as { toValue?: () => Value }).toValue;
    if (typeof lift === "function") return node(lift.call(v), path);
    const entries: [string, number][] = [];
    for (const [key, item] of Object.entries(v)) {
      if (item === undefined) continue;
      entries.push([key, push(item, path ? `${path}.${key}` : key)]);
    }
    return { tag: "object", val: entries };
  };
  push(value, "");
  return { nodes };
}

function where(path: string): string {
  return path ? `\`${path}\`: ` : "";
}

/** Rebuilds a value from its WIT node tree. A malformed tree is an error. */
export function decode(value: WitValue): Value {
  const { nodes } = value;
  if (nodes.length === 0) throw new Error("a value with no nodes");
  const visit = (index: number, depth: number): Value => {
    const n = nodes[index];
    if (n === undefined || depth > 256) throw new Error(`malformed value: node ${index}`);
    switch (n.tag) {
      case "null":
        return null;
      case "boolean":
      case "text":
        return n.val;
      case "integer": {
        const asNumber = Number(n.val);
        return Number.isSafeInteger(asNumber) ? asNumber : n.val;
      }
      case "number":
        // A whole float reads as a plain number (and goes back as an integer, which a
        // `number` property accepts); wrap it in `Float` to keep it a float.
        return n.val;
      case "array":
        return Array.from(n.val, (child) => visit(child, depth + 1));
      case "object": {
        const object: Properties = {};
        for (const [key, child] of n.val) object[key] = visit(child, depth + 1);
        return object;
      }
      case "secret":
        return new Secret(visit(n.val, depth + 1));
      case "unknown":
        return unknown;
      case "output":
        return new OutputRef(n.val.handle, n.val.field);
    }
  };
  return visit(0, 0);
}

/** Decodes a property map: a value whose root is an object (anything else reads as empty). */
export function decodeProperties(value: WitValue): Properties {
  const decoded = decode(value);
  return isPlainObject(decoded) ? decoded : {};
}

export function isPlainObject(v: unknown): v is Properties {
  return (
    typeof v === "object" &&
    v !== null &&
    !Array.isArray(v) &&
    !(v instanceof Secret) &&
    !(v instanceof Unknown) &&
    !(v instanceof OutputRef) &&
    !(v instanceof Float)
  );
}

/** True if `v` holds a secret anywhere. */
export function containsSecret(v: Value): boolean {
  return some(v, (x) => x instanceof Secret);
}

/** True if `v` holds an unknown anywhere. */
export function containsUnknown(v: Value): boolean {
  return some(v, (x) => x instanceof Unknown);
}

/** True if `v` refers to another registration's output anywhere. */
export function containsOutputRef(v: Value): boolean {
  return some(v, (x) => x instanceof OutputRef);
}

function some(v: Value, test: (v: Value) => boolean): boolean {
  if (test(v)) return true;
  if (v instanceof Secret) return some(v.value, test);
  if (Array.isArray(v)) return v.some((item) => some(item, test));
  if (isPlainObject(v)) return Object.values(v).some((item) => some(item, test));
  return false;
}

/** `v` with every secret unwrapped: the plaintext, for code that needs it. */
export function reveal(v: Value): Value {
  if (v instanceof Secret) return reveal(v.value);
  if (Array.isArray(v)) return v.map(reveal);
  if (isPlainObject(v)) {
    const out: Properties = {};
    for (const [key, item] of Object.entries(v)) out[key] = reveal(item);
    return out;
  }
  return v;
}

/** Plain JavaScript for a decoded value: `Float`s become numbers, secrets are revealed. */
export function plain(v: Value): unknown {
  if (v instanceof Float) return v.value;
  if (v instanceof Secret) return plain(v.value);
  if (Array.isArray(v)) return v.map(plain);
  if (isPlainObject(v)) {
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(v)) out[key] = plain(item);
    return out;
  }
  return v;
}

/** Structural equality of two values (a `Float` equals the number it holds). */
export function equal(a: Value, b: Value): boolean {
  if (a instanceof Float) a = a.value;
  if (b instanceof Float) b = b.value;
  if (typeof a === "bigint" || typeof b === "bigint") {
    return (typeof a === "number" || typeof a === "bigint") &&
      (typeof b === "number" || typeof b === "bigint") &&
      BigInt(a) === BigInt(b);
  }
  if (a instanceof Secret || b instanceof Secret) {
    return a instanceof Secret && b instanceof Secret && equal(a.value, b.value);
  }
  if (a instanceof Unknown || b instanceof Unknown) return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length &&
      a.every((item, i) => equal(item, b[i]));
  }
  if (isPlainObject(a) && isPlainObject(b)) {
    const keys = Object.keys(a).filter((k) => a[k] !== undefined);
    const other = Object.keys(b).filter((k) => b[k] !== undefined);
    return keys.length === other.length && keys.every((k) => k in b && equal(a[k], b[k]));
  }
  return a === b;
}

/** A short description of a value's kind, for error messages. */
export function kindOf(v: Value): string {
  if (v === null || v === undefined) return "null";
  if (typeof v === "number") return Number.isInteger(v) ? "an integer" : "a number";
  if (typeof v === "bigint") return "an integer";
  if (typeof v === "string") return "a string";
  if (typeof v === "boolean") return "a boolean";
  if (v instanceof Float) return "a number";
  if (v instanceof Secret) return "a secret";
  if (v instanceof Unknown) return "an unknown value";
  if (v instanceof OutputRef) return "an output of another resource";
  if (Array.isArray(v)) return "an array";
  return "an object";
}

// What every resource type shares: the vhost property, the refusal to adopt an object by
// creating it, and the checks of names the broker would refuse less clearly.
import { type Diff, InvalidInputs, type State, t } from "@plinth/sdk";
import { get } from "./api.js";

/** The vhost an object lives in; moving it to another vhost replaces it. */
export const vhostProp = t.string({
  default: "/",
  replaceOnChange: true,
  description: "The vhost it lives in (`/` by default).",
});

/** Object arguments and policy definitions: JSON values by key. */
export type Arguments = Record<string, unknown>;

/**
 * Creating over an existing object would take it over (and a later destroy would delete it):
 * refuse, and say how to adopt it instead.
 */
export async function refuseExisting(where: string, what: string, id: string): Promise<void> {
  if ((await get<unknown>(where)) !== undefined) {
    throw new Error(`${what} already exists on the broker: adopt it with the resource option import (id \`${id}\`), or pick another name`);
  }
}

/** Refuses an empty name, or one with a control character, which the broker would mangle. */
export function checkName(property: string, value: unknown): void {
  // Anything else is an unknown value of a preview, or a type the schema check refused.
  if (typeof value !== "string") return;
  if (value === "") throw InvalidInputs.of(property, "must not be empty");
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(value)) {
    throw InvalidInputs.of(property, "must not contain control characters");
  }
  if (new TextEncoder().encode(value).length > 255) {
    throw InvalidInputs.of(property, "must be at most 255 bytes (the broker's limit for a name)");
  }
}

/** Deep equality of JSON values, keys in any order. */
export function same(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  return ka.every((k) => same((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}

/** `value` without the keys whose value is `undefined`, for state that omits what is unset. */
export function defined<T extends Record<string, unknown>>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}

/**
 * The diff of a type that cannot be updated: every change replaces it, and a replacement under
 * the same `identity` (name and vhost) deletes the old object first, since the broker knows an
 * object by its name and cannot hold two.
 */
export function replaceByName<I extends object>(identity: (keyof I & string)[]) {
  return (olds: State<I, unknown>, news: I): Diff => {
    const before = olds.inputs as Record<string, unknown>;
    const after = news as Record<string, unknown>;
    const keys = new Set([...Object.keys(before), ...Object.keys(after)]);
    const changed = [...keys].filter((k) => !same(before[k] ?? null, after[k] ?? null)).sort();
    const deleteBeforeReplace = changed.length > 0 && identity.every((k) => same(before[k], after[k]));
    return { changed, replaces: changed, deleteBeforeReplace };
  };
}

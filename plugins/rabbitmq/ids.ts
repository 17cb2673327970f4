// Resource ids, in the forms the Terraform provider cyrilgdn/rabbitmq imports: `NAME@VHOST` for
// what lives in a vhost, `VHOST/SOURCE/DESTINATION/TYPE/KEY` for a binding. A name may hold `@`,
// `/` and `%`: each part is percent-escaped where it would be ambiguous, so any name round-trips.
import { InvalidInputs } from "@plinth/sdk";

function escape(part: string, special: RegExp): string {
  return part.replace(special, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, "0")}`);
}

function unescape(part: string, id: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    throw InvalidInputs.of("id", `\`${id}\` has a malformed %-escape`);
  }
}

/** `name@vhost`, with `%` and `@` escaped in both. */
export function inVhost(name: string, vhost: string): string {
  return `${escape(name, /[%@]/g)}@${escape(vhost, /[%@]/g)}`;
}

/** The name and vhost of a `name@vhost` id. */
export function parseInVhost(id: string, what: string): { name: string; vhost: string } {
  const parts = id.split("@");
  if (parts.length !== 2 || parts[0] === "" || parts[1] === "") {
    throw InvalidInputs.of("id", `\`${id}\` is not the id of a ${what}: expected NAME@VHOST (an \`@\` or \`%\` in either written %40 or %25), e.g. orders@/`);
  }
  return { name: unescape(parts[0], id), vhost: unescape(parts[1], id) };
}

/** What identifies a binding. */
export interface BindingKey {
  vhost: string;
  source: string;
  destination: string;
  destination_type: "queue" | "exchange";
  properties_key: string;
}

/** `vhost/source/destination/type/properties_key`, with `%` and `/` escaped in each part. */
export function binding(key: BindingKey): string {
  const parts = [key.vhost, key.source, key.destination, key.destination_type, key.properties_key];
  return parts.map((p) => escape(p, /[%/]/g)).join("/");
}

export function parseBinding(id: string): BindingKey {
  const parts = id.split("/");
  if (parts.length !== 5 || (parts[3] !== "queue" && parts[3] !== "exchange")) {
    throw InvalidInputs.of("id", `\`${id}\` is not the id of a binding: expected VHOST/SOURCE/DESTINATION/queue|exchange/PROPERTIES_KEY, each part with \`/\` written %2F (the vhost / is %2F)`);
  }
  const [vhost, source, destination, type, key] = parts.map((p) => unescape(p, id));
  return { vhost, source, destination, destination_type: type as "queue" | "exchange", properties_key: key };
}

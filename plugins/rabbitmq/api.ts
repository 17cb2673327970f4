// The broker's management HTTP API (`/api/...`), reached with the component's `fetch`: the
// project grants the endpoint's authority with one `http:` line, and nothing else is reachable.

/** Where the management API is and who the provider is there. */
export interface Config {
  endpoint: string;
  username: string;
  password: string;
}

let base = "";
let authorization = "";

/** Checks and applies the provider's configuration; returns what is wrong with it, if anything. */
export function connect(config: Config): { property: string; reason: string } | undefined {
  let url: URL;
  try {
    url = new URL(config.endpoint);
  } catch {
    return { property: "endpoint", reason: `\`${config.endpoint}\` is not a URL: give the management API's base, e.g. http://127.0.0.1:15672` };
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    return { property: "endpoint", reason: `must be an http:// or https:// URL, not \`${config.endpoint}\`` };
  }
  if (url.username || url.password) {
    return { property: "endpoint", reason: "must not hold credentials: set rabbitmq:username and rabbitmq:password (--secret)" };
  }
  if (url.search || url.hash) {
    return { property: "endpoint", reason: "must not have a query or a fragment" };
  }
  base = `${url.origin}${url.pathname.replace(/\/+$/, "")}`;
  authorization = `Basic ${base64(`${config.username}:${config.password}`)}`;
  return undefined;
}

/** Base64 of the text's UTF-8 bytes (`btoa` alone refuses characters beyond Latin-1). */
function base64(text: string): string {
  let binary = "";
  for (const byte of new TextEncoder().encode(text)) binary += String.fromCharCode(byte);
  return btoa(binary);
}

/** A path below `/api/` whose segments (names of the broker's objects) are escaped. */
export function path(...segments: string[]): string {
  return segments.map((s) => encodeURIComponent(s)).join("/");
}

/** A request the broker answered with an error. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = "ApiError";
  }
}

async function send(method: string, where: string, body?: unknown): Promise<Response> {
  const url = `${base}/api/${where}`;
  let response: Response;
  try {
    response = await fetch(url, {
      method,
      headers: { authorization, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (e) {
    const why = e instanceof Error ? e.message : String(e);
    throw new Error(`${method} ${url}: ${why} (is the broker's management plugin listening there, and is it granted under http:?)`);
  }
  if (response.ok || response.status === 404) return response;
  throw new ApiError(response.status, `${method} /api/${where}: ${response.status} ${await reason(response)}`);
}

/** What the broker said was wrong: its JSON `reason`, else the body's start. */
async function reason(response: Response): Promise<string> {
  const text = await response.text();
  let said = text.slice(0, 500);
  try {
    const parsed = JSON.parse(text) as { error?: unknown; reason?: unknown };
    if (typeof parsed.reason === "string") said = parsed.reason.trim();
    else if (typeof parsed.error === "string") said = parsed.error;
  } catch {
    // Not JSON: the text itself.
  }
  if (response.status === 401) {
    return `${said}: the broker refused the request as rabbitmq:username (a wrong rabbitmq:password, or the user lacks the administrator tag or permissions on this vhost)`;
  }
  return said;
}

/** The object at `where`, or `undefined` if the broker has none. */
export async function get<T>(where: string): Promise<T | undefined> {
  const response = await send("GET", where);
  if (response.status === 404) return undefined;
  return (await response.json()) as T;
}

/** Creates or replaces the object at `where`. */
export async function put(where: string, body: unknown): Promise<void> {
  const response = await send("PUT", where, body);
  if (response.status === 404) throw new ApiError(404, `PUT /api/${where}: 404 ${await reason(response)}`);
}

/** Posts `body`; returns the `Location` the broker answers (a new binding's key). */
export async function post(where: string, body: unknown): Promise<string> {
  const response = await send("POST", where, body);
  if (response.status === 404) throw new ApiError(404, `POST /api/${where}: 404 ${await reason(response)}`);
  return response.headers.get("location") ?? "";
}

/** Deletes the object at `where`; one already gone is no error. Returns whether it existed. */
export async function remove(where: string): Promise<boolean> {
  const response = await send("DELETE", where);
  return response.status !== 404;
}

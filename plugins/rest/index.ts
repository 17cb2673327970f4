// rest: a provider, in TypeScript, for JSON objects kept by a REST API: each `rest:Object` is
// a document at `<url>/<path>`, written with PUT, read back with GET (what `refresh` records,
// so a change made out of band shows as drift) and removed with DELETE.
//
// The provider asks for no network access itself: grant the API's host to it in Plinth.yaml
// (`grants: { http: ["api.example.com"] }`); anything else it tried to reach would be refused.
import { InvalidInputs, NotFound, provider, t } from "@plinth/sdk";

interface Config {
  url: string;
  token?: string;
}

interface ObjectInputs {
  path: string;
  data: unknown;
}

let settings: Config = { url: "" };

function location(path: string): string {
  return `${settings.url.replace(/\/+$/, "")}/${path.replace(/^\/+/, "")}`;
}

function headers(): Record<string, string> {
  const h: Record<string, string> = { "content-type": "application/json" };
  if (settings.token) h.authorization = `Bearer ${settings.token}`;
  return h;
}

async function send(method: string, path: string, body?: unknown): Promise<Response> {
  const response = await fetch(location(path), {
    method,
    headers: headers(),
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!response.ok && response.status !== 404) {
    throw new Error(`${method} ${location(path)}: ${response.status} ${await response.text()}`);
  }
  return response;
}

async function put(inputs: ObjectInputs) {
  await send("PUT", inputs.path, inputs.data);
  return { path: inputs.path, data: inputs.data, url: location(inputs.path) };
}

export default provider<Config>({
  name: "rest",
  version: "0.1.0",
  description: "JSON objects kept by a REST API",
  config: {
    url: t.string({ required: true, description: "The API's base URL, e.g. https://api.example.com/v1" }),
    token: t.string({ secret: true, description: "Sent as a bearer token, if set" }),
  },
  configure(config) {
    if (!/^https?:\/\//.test(config.url)) {
      throw InvalidInputs.of("url", `must be an http:// or https:// URL, not \`${config.url}\``);
    }
    settings = config;
  },
  resources: {
    "rest:Object": {
      description: "A JSON document at <url>/<path>",
      inputs: {
        path: t.string({ required: true, replaceOnChange: true, description: "Where the document lives, below the base URL" }),
        data: t.any({ required: true, description: "The document" }),
      },
      outputs: {
        path: t.string({ required: true }),
        data: t.any({ required: true }),
        url: t.string({ required: true, description: "The document's full URL" }),
      },
      check(inputs: ObjectInputs) {
        if (inputs.path.split("/").some((part) => part === "..")) {
          throw InvalidInputs.of("path", "must not contain `..`");
        }
      },
      async create(inputs: ObjectInputs) {
        return { id: inputs.path, outputs: await put(inputs) };
      },
      async read(state) {
        const response = await send("GET", state.id);
        if (response.status === 404) return null;
        const data = await response.json();
        return {
          inputs: { ...state.inputs, data },
          outputs: { path: state.id, data, url: location(state.id) },
        };
      },
      async update(_olds, news: ObjectInputs) {
        return put(news);
      },
      async delete(state) {
        const response = await send("DELETE", state.id);
        if (response.status === 404) throw new NotFound();
      },
    },
  },
});

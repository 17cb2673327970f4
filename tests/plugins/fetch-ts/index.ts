// A TypeScript provider that catches what its `fetch` throws, for the end-to-end tests of a
// request the sandbox refuses: `fetch:Request` sends `method` to `url` (with `body`, if
// given) and records the status, or the error it caught, as its outputs.
import { provider, t } from "@plinth/sdk";

interface Inputs {
  url: string;
  method: string;
  body?: string;
}

export default provider({
  name: "fetch",
  version: "0.1.0",
  resources: {
    "fetch:Request": {
      inputs: {
        url: t.string({ required: true }),
        method: t.string({ default: "GET" }),
        body: t.string(),
        // What the tests' scenario program gives every resource.
        value: t.string(),
        replace_key: t.string(),
      },
      async create(inputs: Inputs) {
        try {
          const response = await fetch(inputs.url, { method: inputs.method, body: inputs.body });
          return { id: inputs.url, outputs: { status: response.status } };
        } catch (e) {
          const error = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
          return { id: inputs.url, outputs: { caught: error } };
        }
      },
    },
  },
});

// The keeper provider in TypeScript, for the end-to-end tests of write-only inputs: each
// `keeper:Login` writes the write-only `secret_wo` it is sent to the file `/keep/<name>` of the
// directory it is granted, so that a test sees what the provider received (and when) while it
// checks that plinth recorded none of it. Its twin in Python is tests/plugins/keeper-py.
import { existsSync, rmSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { InvalidInputs, provider, t } from "@plinth/sdk";

const KEEP = "/keep";

interface Login {
  name: string;
  secret_wo?: string;
  secret_wo_version?: number;
}

/** Writes what was sent, if anything: `update` gets the value only when its version changed. */
async function keep(inputs: Login): Promise<void> {
  if (inputs.secret_wo !== undefined) {
    await writeFile(join(KEEP, inputs.name), inputs.secret_wo);
  }
}

export default provider({
  name: "keeper",
  version: "0.1.0",
  capabilities: { dirs: [{ guest: KEEP, write: true, why: "each login's secret is written there" }] },
  resources: {
    "keeper:Login": {
      inputs: {
        name: t.string({ required: true, replaceOnChange: true }),
        secret_wo: t.string({ writeOnly: "secret_wo_version", description: "The login's secret." }),
        secret_wo_version: t.integer({ description: "Change it to send a new `secret_wo`." }),
      },
      outputs: {
        name: t.string({ required: true }),
        // Returned by `create` on purpose: the host must drop it.
        secret_wo: t.string(),
      },
      check(inputs: Login) {
        if (inputs.name.includes("/") || inputs.name.startsWith(".")) {
          throw InvalidInputs.of("name", "must be a plain file name");
        }
      },
      async create(inputs: Login) {
        await keep(inputs);
        return { id: inputs.name, outputs: { name: inputs.name, secret_wo: inputs.secret_wo } };
      },
      async update(_olds, news: Login) {
        await keep(news);
        return { name: news.name };
      },
      read(state) {
        return existsSync(join(KEEP, state.id)) ? { outputs: state.outputs } : null;
      },
      delete(state) {
        rmSync(join(KEEP, state.id), { force: true });
      },
    },
  },
});

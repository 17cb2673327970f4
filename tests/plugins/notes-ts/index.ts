// The notes provider in TypeScript, for the end-to-end tests of files from TypeScript: it asks
// for the directory `/notes`, read-write, and keeps each `notes:Note` there as a JSON file
// `<dir>/<name>.json` (`dir` is `/notes` unless an input says otherwise), through Node's own
// `node:fs`, `node:fs/promises` and `node:path`.
import { existsSync, readFileSync, readdirSync, renameSync, rmSync, statSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { provider, t } from "@plinth/sdk";

const NOTES = "/notes";

interface Inputs {
  text: string;
  dir?: string;
}

function file(inputs: Inputs, name: string): string {
  return join(inputs.dir ?? NOTES, `${name}.json`);
}

export default provider({
  name: "notes",
  version: "0.1.0",
  capabilities: { dirs: [{ guest: NOTES, write: true, why: "each note is a JSON file there" }] },
  resources: {
    "notes:Note": {
      inputs: {
        text: t.string({ required: true, replaceOnChange: true }),
        dir: t.string({ replaceOnChange: true }),
        // What the tests' scenario program gives every resource.
        value: t.string(),
        replace_key: t.string(),
      },
      async create(inputs: Inputs, ctx) {
        const path = file(inputs, ctx.name);
        // Written beside, then moved into place: a reader never sees half a note.
        await mkdir(join(inputs.dir ?? NOTES, ".tmp"), { recursive: true });
        const temporary = join(inputs.dir ?? NOTES, ".tmp", `${ctx.name}.json`);
        await writeFile(temporary, JSON.stringify({ text: inputs.text }));
        renameSync(temporary, path);
        const bytes = statSync(path).size;
        return { id: path, outputs: { ...inputs, bytes, notes: readdirSync(NOTES).length } };
      },
      read(state) {
        if (!existsSync(state.id)) return null;
        const note = JSON.parse(readFileSync(state.id, "utf8"));
        return { inputs: { ...state.inputs, text: note.text }, outputs: { ...state.outputs, text: note.text } };
      },
      delete(state) {
        rmSync(state.id, { force: true });
      },
    },
  },
});

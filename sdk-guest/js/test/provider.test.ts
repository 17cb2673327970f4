import assert from "node:assert/strict";
import { test } from "node:test";

import { InvalidInputs } from "../src/errors.js";
import { exportProvider, exportWriteOnly, provider } from "../src/provider.js";
import { t } from "../src/schema.js";
import { Secret, decode, encode, unknown } from "../src/value.js";

const created: unknown[] = [];
const kv = exportProvider(
  provider({
    name: "kv",
    version: "0.1.0",
    resources: {
      "kv:Entry": {
        inputs: { key: t.string({ required: true, replaceOnChange: true }), value: t.any() },
        outputs: { key: t.string(), value: t.any(), size: t.integer() },
        check(inputs: { key: string }) {
          if (inputs.key.includes("/")) throw InvalidInputs.of("key", "must not contain /");
        },
        create(inputs: { key: string; value: unknown }) {
          created.push(inputs);
          return { id: inputs.key, outputs: { ...inputs, size: String(inputs.value).length } };
        },
        update(_olds, news: { key: string; value: unknown }) {
          return { ...news, size: 0 };
        },
      },
    },
  }),
);
const urn = "urn:plinth:dev::p::kv:Entry::e";

async function payload(call: Promise<unknown>): Promise<any> {
  try {
    await call;
  } catch (e) {
    return (e as { payload: unknown }).payload;
  }
  assert.fail("the call should have failed");
}

test("info describes the schema", () => {
  const info = kv.info();
  assert.equal(info.resources[0].token, "kv:Entry");
  assert.equal(info.resources[0].inputs[0].replaceOnChange, true);
});

test("check validates, then runs the provider's own rules", async () => {
  const bad = await kv.check(urn, undefined, encode({ key: 1 }));
  assert.equal(bad.failures[0].property, "key");
  const err = await payload(kv.check(urn, undefined, encode({ key: "a/b" })));
  assert.deepEqual(err, { tag: "invalid", val: [{ property: "key", reason: "must not contain /" }] });
});

test("a preview plans without creating; a secret input keeps its output secret", async () => {
  const planned = await kv.create(urn, encode({ key: "k", value: new Secret("v") }), true);
  assert.equal(created.length, 0);
  const outputs = decode(planned.outputs) as Record<string, unknown>;
  assert.equal(outputs.key, "k");
  assert.ok(outputs.value instanceof Secret);
  assert.equal(outputs.size, unknown);

  const done = await kv.create(urn, encode({ key: "k", value: new Secret("v") }), false);
  assert.deepEqual(created, [{ key: "k", value: "v" }], "the provider sees plaintext");
  assert.ok((decode(done.outputs) as Record<string, unknown>).value instanceof Secret);
});

test("the default diff replaces on replaceOnChange properties only", async () => {
  const old = encode({ key: "k", value: 1 });
  const diff = await kv.diff(urn, "k", old, old, encode({ key: "k2", value: 2 }));
  assert.deepEqual(diff, { changed: ["key", "value"], replaces: ["key"], deleteBeforeReplace: false });
});

test("unknown types and thrown errors become typed errors", async () => {
  const unknownType = await payload(kv.create("urn:plinth:dev::p::kv:Nope::n", encode({}), false));
  assert.deepEqual(unknownType, { tag: "unknown-type", val: "kv:Nope" });
});

test("write-only inputs are stated with their version, and are secret", () => {
  const definition = provider({
    name: "kv",
    version: "0.1.0",
    resources: {
      "kv:Login": {
        inputs: {
          name: t.string({ required: true }),
          token_wo: t.string({ writeOnly: "token_version" }),
          token_version: t.integer(),
        },
        create: () => ({ id: "x", outputs: {} }),
      },
    },
  });
  assert.deepEqual(exportWriteOnly(definition).writeOnlyInputs(), [
    { type: "kv:Login", name: "token_wo", version: "token_version" },
  ]);
  assert.equal(definition.resources["kv:Login"].inputs.token_wo.secret, true);
  assert.equal(definition.resources["kv:Login"].inputs.token_version.secret, false);
});

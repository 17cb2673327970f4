import assert from "node:assert/strict";
import { test } from "node:test";

import { t, typeTree, validate } from "../src/schema.js";
import { Secret, unknown } from "../src/value.js";

const inputs = {
  name: t.string({ required: true }),
  port: t.integer({ default: 80 }),
  mode: t.enum(["fast", "safe"]),
  rules: t.array(t.object({ port: t.integer({ required: true }) }, { name: "Rule" })),
};

test("valid inputs get their defaults", () => {
  const { inputs: out, failures } = validate(inputs, { name: "web", mode: "fast" }, "an input of x:Y");
  assert.deepEqual(failures, []);
  assert.equal(out.port, 80);
});

test("each failure names its property path", () => {
  const { failures } = validate(
    inputs,
    { port: 1.5, mode: "slow", rules: [{ port: "x" }], extra: 1 },
    "an input of x:Y",
  );
  const byPath = Object.fromEntries(failures.map((f) => [f.property, f.reason]));
  assert.match(byPath.extra, /is not an input of x:Y, which takes `name`/);
  assert.match(byPath.port, /expected an integer, got a number/);
  assert.match(byPath.mode, /one of `fast`, `safe`/);
  assert.match(byPath["rules[0].port"], /expected an integer, got a string/);
  assert.equal(byPath.name, "is required");
});

test("unknowns pass, secrets are checked inside and stay secret", () => {
  const { inputs: out, failures } = validate(inputs, { name: unknown, port: new Secret(8080) });
  assert.deepEqual(failures, []);
  assert.ok(out.port instanceof Secret);
});

test("types flatten into trees that refer to their children by index", () => {
  const tree = typeTree(inputs.rules.type);
  assert.deepEqual(tree.nodes[0], { tag: "array", val: 1 });
  const object = tree.nodes[1] as { tag: string; val: { name: string; properties: { type: number }[] } };
  assert.equal(object.val.name, "Rule");
  assert.deepEqual(tree.nodes[object.val.properties[0].type], { tag: "integer" });
});

import assert from "node:assert/strict";
import { test } from "node:test";

import { Float, OutputRef, Secret, decode, encode, equal, plain, reveal, unknown } from "../src/value.js";

test("integers stay integers and floats floats", () => {
  const wit = encode({ port: 8402, ratio: 0.5, whole: new Float(3), big: 2n ** 60n });
  const tags = Object.fromEntries(
    (wit.nodes[0] as { val: [string, number][] }).val.map(([k, i]) => [k, wit.nodes[i]]),
  );
  assert.deepEqual(tags.port, { tag: "integer", val: 8402n });
  assert.deepEqual(tags.ratio, { tag: "number", val: 0.5 });
  assert.deepEqual(tags.whole, { tag: "number", val: 3 });
  assert.deepEqual(tags.big, { tag: "integer", val: 2n ** 60n });
  const back = decode(wit) as Record<string, unknown>;
  assert.equal(back.port, 8402);
  assert.equal(back.big, 2n ** 60n, "beyond 2^53 an integer reads as a bigint");
});

test("secrets, unknowns and references round-trip typed", () => {
  const ref = new OutputRef(7n, { tag: "property", val: ["result"] });
  const value = { password: new Secret("hunter2"), later: unknown, ref, list: [1, null, "x"] };
  const back = decode(encode(value)) as Record<string, any>;
  assert.ok(back.password instanceof Secret);
  assert.equal(back.password.value, "hunter2");
  assert.equal(back.later, unknown);
  assert.deepEqual(back.ref, ref);
  assert.deepEqual(back.list, [1, null, "x"]);
  assert.deepEqual(reveal(back.password), "hunter2");
  assert.equal(JSON.stringify(back.password), '"[secret]"', "a secret never prints");
});

test("values that cannot travel are errors naming the property", () => {
  assert.throws(() => encode({ a: { b: Number.NaN } }), /`a.b`: NaN is not a finite number/);
  assert.throws(() => encode({ f: (() => 1) as never }), /`f`: a function/);
  assert.throws(() => encode(2n ** 64n), /64-bit/);
  assert.throws(() => decode({ nodes: [{ tag: "array", val: [5] }] }), /malformed/);
});

test("equality ignores the integer/float distinction and key order", () => {
  assert.ok(equal({ a: 1, b: [new Float(2)] }, { b: [2], a: 1 }));
  assert.ok(!equal({ a: 1 }, { a: 1, b: 2 }));
  assert.ok(!equal(new Secret("x"), "x"));
  assert.deepEqual(plain({ s: new Secret(new Float(1.5)) }), { s: 1.5 });
});

// The provider's unit tests: `npm test` runs them with node's test runner.
import assert from "node:assert/strict";
import { test } from "node:test";

import { message, refusal } from "./greeting.js";

test("a greeting names its name", () => {
  assert.equal(message({ name: "world", excited: true }), "Hello, world!");
  assert.equal(message({ name: "world" }), "Hello, world.");
});

test("an empty name is refused", () => {
  assert.equal(refusal({ name: "  " }), "must not be empty");
  assert.equal(refusal({ name: "world" }), undefined);
});

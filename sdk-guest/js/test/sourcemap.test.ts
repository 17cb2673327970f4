import assert from "node:assert/strict";
import { test } from "node:test";

import { decodeMappings, mapStack } from "../src/sourcemap.js";

// Generated line 1 maps column 0 to index.ts 3:0 and column 10 to index.ts 4:2; generated
// line 2 maps to the SDK.
const map = { sources: ["index.ts", "@plinth/sdk/program.ts"], mappings: "AAEA,UACE;ACFF" };

test("VLQ mappings decode to absolute positions", () => {
  assert.deepEqual(decodeMappings(map.mappings), [
    [[0, 0, 2, 0], [10, 0, 3, 2]],
    [[0, 1, 1, 0]],
  ]);
});

test("frames map to their source lines, and SDK frames are left out", () => {
  const lines = decodeMappings(map.mappings);
  const frames = mapStack("main@bundle.js:1:12\nrun@bundle.js:2:1\n", { map, lines });
  assert.deepEqual(frames, ["main (index.ts:4:3)"]);
  assert.deepEqual(mapStack("f@other.js:9:9", { map, lines }), ["f (other.js:9:9)"]);
  // componentize-js's wrapper, in the build's scratch directory, is not shown.
  const wrapped = mapStack("main@bundle.js:1:12\ncall@/tmp/build-1/initializer.js:40:5", { map, lines });
  assert.deepEqual(wrapped, ["main (index.ts:4:3)"]);
});

test("on the prebuilt runtime, only the evaluated bundle's frames are mapped and shown", () => {
  const lines = decodeMappings(map.mappings);
  const scope = globalThis as { __plinthEvaluated?: boolean };
  scope.__plinthEvaluated = true;
  try {
    const stack = [
      "main@bundle.js line 266 > eval:1:12",
      "__esm@bundle.js line 266 > eval:7:1",
      "guest@bundle.js:270:5",
    ].join("\n");
    assert.deepEqual(mapStack(stack, { map, lines }), ["main (index.ts:4:3)"]);
  } finally {
    delete scope.__plinthEvaluated;
  }
});

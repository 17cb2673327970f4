// The SDK's `node:fs` where no directory can be granted (programs, policy packs): every path
// is refused with EACCES, saying that only a provider can be granted one.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, promises } from "../src/node/fs.ts";

test("a guest that cannot be granted directories is told so", async () => {
  for (const read of [() => readFileSync("/etc/passwd", "utf8"), () => promises.readFile("/etc/passwd")]) {
    await assert.rejects(async () => read(), (e: NodeJS.ErrnoException) => {
      assert.equal(e.code, "EACCES");
      assert.equal(e.path, "/etc/passwd");
      assert.match(e.message, /programs and policy packs are granted no directory; only a provider can be/);
      return true;
    });
  }
});

// The SDK's `node:path` agrees with Node's own POSIX paths.
import { test } from "node:test";
import assert from "node:assert/strict";
import { posix } from "node:path";
import path from "../src/node/path.ts";

const samples = ["", ".", "/", "a", "/a/b/", "a//b/./c/..", "../a/../../b", "/a/../..", "/notes/x.json", "a/b.tar.gz", ".hidden", "/a/b/"];

test("normalize, dirname, basename, extname, isAbsolute and parse agree with Node's", () => {
  for (const p of samples) {
    if (p !== "") assert.equal(path.normalize(p), posix.normalize(p), `normalize(${p})`);
    assert.equal(path.dirname(p), posix.dirname(p), `dirname(${p})`);
    assert.equal(path.basename(p), posix.basename(p), `basename(${p})`);
    assert.equal(path.extname(p), posix.extname(p), `extname(${p})`);
    assert.equal(path.isAbsolute(p), posix.isAbsolute(p), `isAbsolute(${p})`);
    assert.deepEqual(path.parse(p), posix.parse(p), `parse(${p})`);
  }
  assert.equal(path.basename("/a/b.json", ".json"), "b");
});

test("join, resolve and relative agree with Node's from the root", () => {
  for (const a of samples) {
    for (const b of samples) {
      assert.equal(path.join(a, b), posix.join(a, b), `join(${a}, ${b})`);
      assert.equal(path.resolve("/", a, b), posix.resolve("/", a, b), `resolve(${a}, ${b})`);
      assert.equal(path.relative(`/${a}`, `/${b}`), posix.relative(`/${a}`, `/${b}`), `relative(${a}, ${b})`);
    }
  }
});

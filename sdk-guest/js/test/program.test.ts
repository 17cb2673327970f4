import assert from "node:assert/strict";
import { test } from "node:test";

import { Context, Output, exportProgram } from "../src/program.js";
import { OutputRef, Secret, decode, encode, unknown } from "../src/value.js";
import { calls } from "./fake-monitor.js";

test("known values apply at once; secrets make secret results", () => {
  const doubled = Output.of(21).apply((n) => n * 2);
  assert.equal(doubled.value, 42);
  const hidden = Output.secret("pw").apply((p) => `${p}!`);
  assert.ok(hidden.value instanceof Secret);
  assert.equal((hidden.value as Secret).value, "pw!");
  assert.equal(new Output(unknown).apply(() => assert.fail("not run")).value, unknown);
});

test("unresolved outputs register an apply the engine resumes", async () => {
  const ref = new Output<string>(new OutputRef(9n, { tag: "property", val: ["result"] }));
  const both = Output.all([ref, "x"]).apply(([a, b]) => `${a}-${b}`);
  const handle = (both.value as OutputRef).handle;
  assert.equal(calls.applies.length, 1);
  const { resume } = exportProgram(() => {});
  const result = await resume(handle, [encode("pet"), encode("x")]);
  assert.equal(decode(result), "pet-x");
  await assert.rejects(resume(handle, [encode(1), encode(2)]), (e: any) => /no apply/.test(e.payload));
});

test("an async apply on known values is resumed through the engine too", async () => {
  const later = Output.of(2).apply(async (n) => n + 1);
  const handle = (later.value as OutputRef).handle;
  const { resume } = exportProgram(() => {});
  assert.equal(decode(await resume(handle, [encode(2)])), 3);
});

test("run registers resources with options and sends the stack outputs", async () => {
  calls.config.greeting = encode("hi");
  const { run } = exportProgram(async (ctx: Context) => {
    const parent = ctx.component("acme:Site", "site");
    const r = ctx.resource("random:RandomPet", "pet", { length: 2 }, {
      parent,
      protect: true,
      customTimeouts: { create: 1.5 },
    });
    ctx.export("pet", r.output("result"));
    ctx.export("greeting", ctx.config("greeting"));
  });
  await run();
  const pet = calls.registered.find((r) => r.name === "pet");
  assert.equal(pet.options.protect, true);
  assert.equal(pet.options.customTimeouts.createSeconds, 2);
  assert.equal(typeof pet.options.parent, "bigint");
  const outputs = decode(calls.outputs.at(-1)!) as Record<string, unknown>;
  assert.equal(outputs.greeting, "hi");
  assert.ok(outputs.pet instanceof OutputRef);
});

test("a missing required config value names the command to set it", async () => {
  const { run } = exportProgram((ctx) => {
    ctx.requireSecretConfig("password");
  });
  await assert.rejects(run(), (e: any) => /plinth config set password <value> --secret/.test(e.payload));
});

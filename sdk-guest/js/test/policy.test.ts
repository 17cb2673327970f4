import assert from "node:assert/strict";
import { test } from "node:test";

import { PolicyPack, exportPolicyPack } from "../src/policy.js";
import { Secret, encode, unknown } from "../src/value.js";

const seen: unknown[] = [];
const pack = exportPolicyPack(
  new PolicyPack("passwords", {
    version: "1.2.0",
    policies: [
      {
        name: "password-length",
        description: "Passwords are long enough.",
        enforcementLevel: "mandatory",
        configSchema: { properties: { minimum: { type: "integer", minimum: 1, default: 16 } } },
        validateResource: (args, reportViolation) => {
          seen.push(args.props);
          const { minimum } = args.getConfig<{ minimum: number }>();
          const length = args.props.length;
          if (args.type === "random:RandomPassword" && typeof length === "number" && length < minimum) {
            reportViolation(`${args.name} is ${length} characters long; make it at least ${minimum}`, "length");
          }
        },
      },
      {
        name: "count",
        description: "Says how many resources the stack holds.",
        validateStack: ({ resources }, reportViolation) => {
          reportViolation(`${resources.length} resources`);
          reportViolation("the first", resources[0]?.urn, "length");
        },
      },
    ],
  }),
);

const urn = "urn:plinth:dev::p::random:RandomPassword::pw";
const witResource = (inputs: Record<string, unknown>) => ({
  type: "random:RandomPassword",
  urn,
  inputs: encode(inputs as never),
  dependencies: [],
});

async function payload(call: () => unknown): Promise<unknown> {
  try {
    await call();
  } catch (e) {
    return (e as { payload: unknown }).payload;
  }
  assert.fail("the call should have failed");
}

test("info describes the pack, its levels and config schemas", () => {
  const info = pack.info();
  assert.equal(info.name, "passwords");
  assert.equal(info.version, "1.2.0");
  assert.deepEqual(
    info.policies.map((p) => [p.name, p.enforcementLevel]),
    [["password-length", "mandatory"], ["count", "advisory"]],
  );
  const schema = JSON.parse(info.policies[0].configSchema);
  assert.equal(schema.type, "object");
  assert.equal(schema.additionalProperties, false);
  assert.equal(info.policies[1].configSchema, "");
});

test("a resource is judged with the schema's defaults, then the user's configuration", async () => {
  const short = await pack.analyzeResource(witResource({ length: 12 }));
  assert.deepEqual(short, [
    { policy: "password-length", message: "pw is 12 characters long; make it at least 16", property: "length", urn: "" },
  ]);
  assert.deepEqual(await pack.analyzeResource(witResource({ length: 20 })), []);
  pack.configure([{ policy: "password-length", config: '{"minimum": 32}' }]);
  const now = await pack.analyzeResource(witResource({ length: 20 }));
  assert.match(now[0].message, /make it at least 32/);
  pack.configure([{ policy: "password-length", config: "{}" }]);
});

test("secrets reach a policy as secrets that print as [secret]; unknowns as unknown", async () => {
  seen.length = 0;
  await pack.analyzeResource(witResource({ length: unknown, seed: new Secret("hunter2") }));
  const props = seen[0] as Record<string, unknown>;
  assert.equal(props.length, unknown);
  assert.ok(props.seed instanceof Secret);
  assert.equal(`${props.seed}`, "[secret]");
  assert.equal(JSON.stringify(props), '{"length":{},"seed":"[secret]"}');
});

test("a configuration the schema refuses is an error naming what was wrong", async () => {
  for (const [config, expected] of [
    ['{"minimum": "long"}', '`password-length`: `minimum` must be an integer, not "long"'],
    ['{"minimum": 0}', "`password-length`: `minimum` must be at least 1, not 0"],
    ['{"minimun": 32}', "`password-length`: it takes no setting `minimun` (it takes: minimum)"],
    ["[1]", "`password-length`: the configuration must be a JSON object"],
    ["{", "`password-length`: the configuration is not JSON"],
  ]) {
    const error = await payload(() => pack.configure([{ policy: "password-length", config }]));
    assert.ok(String(error).startsWith(expected), `${config}: ${error}`);
  }
  assert.equal(await payload(() => pack.configure([{ policy: "nope", config: "{}" }])), "this pack has no policy `nope`");
});

test("the stack's policies report violations of the stack and of its resources", async () => {
  const violations = await pack.analyzeStack([witResource({ length: 1 })]);
  assert.deepEqual(violations, [
    { policy: "count", message: "1 resources", property: "", urn: "" },
    { policy: "count", message: "the first", property: "length", urn },
  ]);
});

test("a malformed pack is refused when it is made", () => {
  const check = () => {};
  assert.throws(
    () => new PolicyPack("p", { policies: [{ name: "a", description: "", validateStack: check }, { name: "a", description: "", validateStack: check }] }),
    /two policies are named `a`/,
  );
  assert.throws(
    () => new PolicyPack("p", { policies: [{ name: "a", description: "", enforcementLevel: "strict" as never, validateStack: check }] }),
    /the enforcement level "strict" is not one of/,
  );
  assert.throws(() => new PolicyPack("p", { policies: [{ name: "a", description: "" }] }), /neither validateResource nor validateStack/);
});

test("a policy that throws fails the call (the pack fails, the change does not pass)", async () => {
  const broken = exportPolicyPack(
    new PolicyPack("broken", {
      policies: [{ name: "throws", description: "", validateResource: () => { throw new TypeError("no"); } }],
    }),
  );
  await assert.rejects(broken.analyzeResource(witResource({})), /no/);
});

// {{ name }}: a plinth policy pack. It judges each resource a deployment is about to create,
// update or replace (and the whole stack once the program has ended); a mandatory violation
// fails `preview` and stops `up` before the step runs. plinth builds this directory into a
// component (`@plinth/sdk` is provided by plinth) and runs it sandboxed, granted nothing. From
// a project that uses the `random` provider:
//
//   plinth preview --policy-pack path/to/{{ name }}
//   echo '{"string-length": {"minimum": 12}}' > policy.json
//   plinth preview --policy-pack path/to/{{ name }} --policy-pack-config policy.json
import { PolicyPack } from "@plinth/sdk";

export default new PolicyPack("{{ name }}", {
  version: "0.1.0",
  policies: [
    {
      name: "string-length",
      description: "A random:RandomString is at least `minimum` (default 8) characters long.",
      enforcementLevel: "mandatory",
      configSchema: {
        properties: { minimum: { type: "integer", minimum: 1, default: 8 } },
      },
      validateResource: (resource, reportViolation) => {
        if (resource.type !== "random:RandomString") return;
        const { minimum } = resource.getConfig<{ minimum: number }>();
        // In a preview, a length computed from another resource's output is not known yet:
        // `up` judges it again once it is.
        const length = resource.props.length;
        if (typeof length === "number" && length < minimum) {
          reportViolation(`\`${resource.name}\` is ${length} characters long; make it at least ${minimum}`, "length");
        }
      },
    },
    {
      name: "one-pet",
      description: "A stack names itself with at most one random:RandomPet.",
      enforcementLevel: "advisory",
      validateStack: (stack, reportViolation) => {
        const pets = stack.resources.filter((r) => r.type === "random:RandomPet");
        for (const pet of pets.slice(1)) {
          reportViolation(`\`${pet.name}\` is one pet too many: keep one`, pet.urn);
        }
      },
    },
  ],
});

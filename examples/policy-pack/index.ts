// password-rules, a policy pack in TypeScript for the `random` provider's passwords:
//
// - `password-length` (mandatory): a `random:RandomPassword`'s `length` is at least the
//   configured `minimum` (16 unless configured);
// - `password-rotation` (advisory): a password has `keepers`, so that changing one (a rotation
//   date, say) replaces it; without them it is never rotated.
//
// plinth builds this directory into a component (nothing to install but `scripts/setup`'s
// componentizer) and runs it sandboxed, granted nothing. From a project using `random`:
//
//   plinth preview --policy-pack ../../examples/policy-pack
//   echo '{"password-length": {"minimum": 32}}' > policy.json
//   plinth preview --policy-pack ../../examples/policy-pack --policy-pack-config policy.json
import { PolicyPack } from "@plinth/sdk";

const PASSWORD = "random:RandomPassword";

export default new PolicyPack("password-rules", {
  version: "0.1.0",
  policies: [
    {
      name: "password-length",
      description: "A random:RandomPassword is at least `minimum` (default 16) characters long.",
      enforcementLevel: "mandatory",
      configSchema: {
        properties: { minimum: { type: "integer", minimum: 1, default: 16 } },
      },
      validateResource: (resource, reportViolation) => {
        if (resource.type !== PASSWORD) return;
        const { minimum } = resource.getConfig<{ minimum: number }>();
        // In a preview, a length computed from another resource's output is not known yet:
        // `up` judges it again once it is.
        const length = resource.props.length;
        if (typeof length === "number" && length < minimum) {
          reportViolation(`the password is ${length} characters long; make it at least ${minimum}`, "length");
        }
      },
    },
    {
      name: "password-rotation",
      description: "A random:RandomPassword has `keepers`, so that it can be rotated.",
      enforcementLevel: "advisory",
      validateResource: (resource, reportViolation) => {
        if (resource.type === PASSWORD && resource.props.keepers === undefined) {
          reportViolation(
            "this password is never rotated: give it `keepers` (a rotation date, say), whose change replaces it",
            "keepers",
          );
        }
      },
    },
  ],
});

// {{ name }}: a plinth provider. Its resource types, with the schema of their inputs and
// outputs: what `plinth plugin inspect` shows, what the default `check` validates inputs
// against and what `plinth gen-sdk` turns into typed SDKs for programs. plinth builds this
// directory into a component (`@plinth/sdk` is provided by plinth) and runs it sandboxed.
//
//   npm test                                          # greeting.test.ts, natively
//   plinth plugin inspect .                           # builds the component, shows its types
//   plinth gen-sdk . --lang ts --out sdks/ts          # a typed SDK for programs (or rust, python)
import { InvalidInputs, provider, t } from "@plinth/sdk";
import { type GreetingInputs, type GreetingOutputs, message, refusal } from "./greeting.js";

export default provider({
  name: "{{ name }}",
  version: "0.1.0",
  description: "Greetings, made by `plinth new typescript-provider`.",
  // Nothing outside the sandbox: ask for directories, hosts or variables here.
  capabilities: {},
  resources: {
    "{{ name }}:Greeting": {
      description: "A greeting of a name.",
      inputs: {
        name: t.string({ required: true, description: "Who is greeted." }),
        excited: t.boolean({ default: false, description: "End with `!` rather than `.`." }),
      },
      outputs: { message: t.string({ description: "The greeting." }) },
      // Rules the schema cannot say; its checks (required, types) ran before.
      check(inputs: GreetingInputs) {
        const reason = refusal(inputs);
        if (reason) throw InvalidInputs.of("name", reason);
      },
      // During a preview the outputs are known from the inputs: say so.
      plan(inputs: GreetingInputs): GreetingOutputs {
        return { message: message(inputs) };
      },
      create(inputs: GreetingInputs, ctx) {
        return { id: ctx.name, outputs: { message: message(inputs) } };
      },
      update(_olds, news: GreetingInputs): GreetingOutputs {
        return { message: message(news) };
      },
      // `read` returns the recorded state and `delete` does nothing, by default: a greeting
      // exists only in the state.
    },
  },
});

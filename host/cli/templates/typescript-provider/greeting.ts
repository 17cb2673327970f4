// The provider's logic, apart from the SDK so that its unit tests (greeting.test.ts) run
// natively with node: `npm test`.

/** What a program gives a `{{ name }}:Greeting`. */
export interface GreetingInputs {
  /** Who is greeted. */
  name: string;
  /** End with `!` rather than `.`. */
  excited?: boolean;
}

/** What a `{{ name }}:Greeting` gives back. */
export interface GreetingOutputs {
  message: string;
}

/** The greeting of `inputs`. */
export function message(inputs: GreetingInputs): string {
  return `Hello, ${inputs.name}${inputs.excited ? "!" : "."}`;
}

/** Why `inputs` cannot make a greeting, or undefined: rules the schema cannot say. */
export function refusal(inputs: GreetingInputs): string | undefined {
  return inputs.name.trim() === "" ? "must not be empty" : undefined;
}

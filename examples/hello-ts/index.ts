// hello, in TypeScript: the same program as examples/hello (Rust) and examples/hello-py.
//
// A plinth program declares the resources it wants; plinth compares them with what the stack
// already has and asks the providers (here `random`) to create, update or delete resources to
// match. Try it from this directory:
//
//   plinth stack init dev
//   plinth preview                       # what would be created (results are unknown yet)
//   plinth up                            # create the resources and print the stack outputs
//   plinth config set suffix_length 10   # a new length replaces the suffix, and only it
//   plinth up
//   plinth destroy
//
// The resource classes come from the SDK generated from the `random` provider's schema
// (`plinth gen-sdk ../../plugins/random --lang ts`, in sdks/random/ts): typed inputs, typed
// outputs, and a misspelt input is a compile error. package.json depends on it by path.
import { type Context, Output } from "@plinth/sdk";
import { RandomInteger, RandomPassword, RandomPet, RandomString } from "@plinth/random";

export default function main(ctx: Context): void {
  // A pet name such as `joyful-lemur`. Registering returns at once: the engine does the work.
  const pet = new RandomPet(ctx, "pet", { length: 2 });

  // Configuration comes from the stack (`plinth config set suffix_length 10`).
  const suffixLength = ctx.configNumber("suffix_length") ?? 6;

  // An input can be another resource's output: the suffix waits for the pet, and a new pet
  // gives a new suffix.
  const suffix = new RandomString(ctx, "suffix", {
    length: suffixLength,
    upper: false,
    special: false,
    keepers: { pet: pet.result },
  });

  // A password: its result is a secret, hidden in every display and output listing.
  const password = new RandomPassword(ctx, "password", { length: 20, minSpecial: 2 });

  // A port number between 8000 and 8999: an integer, in the state and in every display.
  const port = new RandomInteger(ctx, "port", { min: 8000, max: 8999 });

  // Outputs are not known while the program runs: transform them with `apply`, which runs once
  // the value is known (and not at all during a preview).
  const greeting = pet.result.apply((name) => `Hello, ${name ?? "stranger"}!`);

  // `Output.all` waits for several outputs and hands their values to one function, in order.
  const hostname = Output.all([pet.result, suffix.result])
    .apply(([name, tail]) => `${name}-${tail}`);

  ctx.export("greeting", greeting);
  ctx.export("hostname", hostname);
  ctx.export("port", port.result);
  // The password stays a secret as a stack output too.
  ctx.export("password", password.result);
}

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
import { type Context, Output } from "@plinth/sdk";

export default function main(ctx: Context): void {
  // A pet name such as `joyful-lemur`. Registering returns at once: the engine does the work.
  const pet = ctx.resource("random:RandomPet", "pet", { length: 2 });

  // Configuration comes from the stack (`plinth config set suffix_length 10`).
  const suffixLength = ctx.configNumber("suffix_length") ?? 6;

  // An input can be another resource's output: the suffix waits for the pet, and a new pet
  // gives a new suffix.
  const suffix = ctx.resource("random:RandomString", "suffix", {
    length: suffixLength,
    upper: false,
    special: false,
    keepers: { pet: pet.output("result") },
  });

  // A password: its result is a secret, hidden in every display and output listing.
  const password = ctx.resource("random:RandomPassword", "password", { length: 20, min_special: 2 });

  // A port number between 8000 and 8999: an integer, in the state and in every display.
  const port = ctx.resource("random:RandomInteger", "port", { min: 8000, max: 8999 });

  // Outputs are not known while the program runs: transform them with `apply`, which runs once
  // the value is known (and not at all during a preview).
  const greeting = pet.output<string>("result").apply((name) => `Hello, ${name ?? "stranger"}!`);

  // `Output.all` waits for several outputs and hands their values to one function, in order.
  const hostname = Output.all([pet.output<string>("result"), suffix.output<string>("result")])
    .apply(([name, tail]) => `${name}-${tail}`);

  ctx.export("greeting", greeting);
  ctx.export("hostname", hostname);
  ctx.export("port", port.output("result"));
  // The password stays a secret as a stack output too.
  ctx.export("password", password.output("result"));
}

// {{ name }}: a plinth program. It declares the resources it wants; `plinth up` asks the
// providers (here `random`) to create, update or delete resources to match.
//
// `@plinth/sdk` is provided by plinth when it builds the program; `@plinth/random` is the SDK
// generated from the random provider's schema (`plinth gen-sdk random --lang ts --out
// sdks/random/ts`): regenerate it when you upgrade the provider.
import type { Context } from "@plinth/sdk";
import { RandomPet, RandomString } from "@plinth/random";

export default function main(ctx: Context): void {
  // A pet name such as `joyful-lemur`.
  const pet = new RandomPet(ctx, "pet", { length: 2 });

  // Configuration comes from the stack: `plinth config set suffix_length 10`.
  const suffixLength = ctx.configNumber("suffix_length") ?? 6;
  const suffix = new RandomString(ctx, "suffix", {
    length: suffixLength,
    upper: false,
    special: false,
  });

  // Outputs are known once the resource exists: transform them with `apply`.
  ctx.export("greeting", pet.result.apply((name) => `Hello, ${name}!`));
  ctx.export("suffix", suffix.result);
}

"""{{ name }}: a plinth program.

It declares the resources it wants; `plinth up` asks the providers (here `random`) to create,
update or delete resources to match. plinth provides the `plinth` module when it builds the
program.
"""

from plinth import Context
from plinth_random import RandomPet, RandomString


def main(ctx: Context) -> None:
    # A pet name such as `joyful-lemur`.
    pet = RandomPet(ctx, "pet", length=2)

    # Configuration comes from the stack: `plinth config set suffix_length 10`.
    suffix_length = ctx.config_int("suffix_length", 6)
    suffix = RandomString(ctx, "suffix", suffix_length, upper=False, special=False)

    # Outputs are known once the resource exists: transform them with `apply`.
    ctx.export("greeting", pet.result.apply(lambda name: f"Hello, {name}!"))
    ctx.export("suffix", suffix.result)

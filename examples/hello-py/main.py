"""hello, in Python: the same program as examples/hello (Rust) and examples/hello-ts.

A plinth program declares the resources it wants; plinth compares them with what the stack
already has and asks the providers (here `random`) to create, update or delete resources to
match. Try it from this directory:

    plinth stack init dev
    plinth preview                       # what would be created (results are unknown yet)
    plinth up                            # create the resources and print the stack outputs
    plinth config set suffix_length 10   # a new length replaces the suffix, and only it
    plinth up
    plinth destroy

The resource classes come from the SDK generated from the `random` provider's schema
(`plinth gen-sdk ../../plugins/random --lang python`, in sdks/random/python): typed inputs and
outputs, keyword arguments. pyproject.toml puts it on the module path.
"""

from plinth import Context, Output
from plinth_random import RandomInteger, RandomPassword, RandomPet, RandomString


def main(ctx: Context) -> None:
    # A pet name such as `joyful-lemur`. Registering returns at once: the engine does the work.
    pet = RandomPet(ctx, "pet", length=2)

    # Configuration comes from the stack (`plinth config set suffix_length 10`).
    suffix_length = ctx.config_int("suffix_length", 6)

    # An input can be another resource's output: the suffix waits for the pet, and a new pet
    # gives a new suffix.
    suffix = RandomString(ctx, "suffix", suffix_length, upper=False, special=False,
                          keepers={"pet": pet.result})

    # A password: its result is a secret, hidden in every display and output listing.
    password = RandomPassword(ctx, "password", 20, min_special=2)

    # A port number between 8000 and 8999: an integer, in the state and in every display.
    port = RandomInteger(ctx, "port", min=8000, max=8999)

    # Outputs are not known while the program runs: transform them with `apply`, which runs
    # once the value is known (and not at all during a preview).
    greeting = pet.result.apply(lambda name: f"Hello, {name or 'stranger'}!")

    # `Output.all` waits for several outputs and hands their values to one function, in order.
    hostname = Output.all(pet.result, suffix.result).apply(
        lambda parts: f"{parts[0]}-{parts[1]}")

    ctx.export("greeting", greeting)
    ctx.export("hostname", hostname)
    ctx.export("port", port.result)
    # The password stays a secret as a stack output too.
    ctx.export("password", password.result)

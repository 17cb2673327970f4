//! {{ name }}: a plinth program. It declares the resources it wants; `plinth up` asks the
//! providers (here `random`) to create, update or delete resources to match.

use plinth_random_sdk::{RandomPet, RandomString};
use plinth_sdk::{Context, Error};

/// Runs on every `preview` and `up`: it only declares resources, and registering one returns at
/// once with a handle whose outputs are known later.
fn main(ctx: &Context) -> Result<(), Error> {
    // A pet name such as `joyful-lemur`.
    let pet = RandomPet::builder(ctx, "pet").length(2).register()?;

    // Configuration comes from the stack: `plinth config set suffix_length 10`.
    let suffix_length: i64 = ctx.config_as("suffix_length")?.unwrap_or(6);
    let suffix = RandomString::builder(ctx, "suffix", suffix_length)
        .upper(false)
        .special(false)
        .register()?;

    // Outputs are known once the resource exists: transform them with `apply`.
    ctx.export("greeting", pet.result().apply(|name| format!("Hello, {name}!")));
    ctx.export("suffix", suffix.result());
    Ok(())
}

plinth_sdk::export_program!(main);

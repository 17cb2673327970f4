//! # hello — a first plinth program
//!
//! A plinth program is a Rust library built as a WebAssembly component. It declares the
//! resources it wants; plinth compares them with what the stack already has and asks the
//! providers (here the `random` provider) to create, update or delete resources to match.
//!
//! Try it from this directory:
//!
//! ```text
//! plinth preview                          # what would be created (results are unknown yet)
//! plinth up                               # create the resources and print the stack outputs
//! plinth config set suffix_length 10      # a new length replaces the suffix, and only it
//! plinth up
//! plinth destroy
//! ```
//!
//! Running `up` twice in a row changes nothing: random values are generated once, when their
//! resource is created, and kept in the stack's state.

use std::collections::BTreeMap;

use plinth_random_sdk::{RandomInteger, RandomPassword, RandomPet, RandomString};
use plinth_sdk::{Context, Error, Output, Value};

/// The program's body. plinth calls it on every `preview` and `up`; it must only *declare*
/// resources. Registering a resource returns at once with a handle — the work happens in the
/// engine, in parallel where it can.
///
/// The resources come from `plinth-random-sdk`, the typed SDK generated from the random
/// provider's schema (`plinth gen-sdk random --lang rust`, committed under `sdks/random/rust`):
/// required inputs are arguments of `builder`, optional ones are methods, and outputs are typed
/// (`pet.result()` is an `Output<String>`). A misspelt input or a string given for a number
/// does not compile.
fn main(ctx: &Context) -> Result<(), Error> {
    // A pet name such as `joyful-lemur`.
    let pet = RandomPet::builder(ctx, "pet").length(2).register()?;

    // Configuration comes from the stack (`plinth config set suffix_length 10`). `config_as`
    // parses the value; `?` stops the program with a message naming the key if it is not a
    // number, and `unwrap_or` supplies the default when it is not set.
    let suffix_length: i64 = ctx.config_as("suffix_length")?.unwrap_or(6);

    // An input can be another resource's output: `keepers` holds the pet's name, which is not
    // known until the pet exists. plinth orders the two resources accordingly, and a new pet
    // (say, after `plinth destroy`) also gives a new suffix.
    let keepers = BTreeMap::from([("pet".to_owned(), Value::from(pet.result()))]);
    let suffix = RandomString::builder(ctx, "suffix", suffix_length)
        .upper(false)
        .special(false)
        .keepers(keepers)
        .register()?;

    // A password: its result is a secret (`Output<Secret<String>>`), hidden in every display
    // and output listing.
    let password = RandomPassword::builder(ctx, "password", 20)
        .min_special(2)
        .register()?;

    // A port number between 8000 and 8999: an integer, in the state and in every display.
    let port = RandomInteger::builder(ctx, "port", 8000, 8999).register()?;

    // Outputs are not known while the program runs, so transform them with `apply`: the
    // closure runs once the value is known (and not at all during a preview, where the result
    // stays unknown). A typed output hands the closure its type: here a `String`.
    let greeting = pet.result().apply(|name| format!("Hello, {name}!"));

    // `Output::all` waits for several outputs and hands their values to one closure, in order.
    let hostname = Output::all([pet.result(), suffix.result()]).apply(|parts| {
        let part = |i: usize| parts[i].as_str().unwrap_or_default().to_owned();
        format!("{}-{}", part(0), part(1))
    });

    // Stack outputs: printed after `plinth up`, readable by scripts and other stacks.
    ctx.export("greeting", greeting);
    ctx.export("hostname", hostname);
    ctx.export("port", port.result());
    // The password stays a secret as a stack output too.
    ctx.export("password", password.result());
    Ok(())
}

// Makes `main` the component's entry point.
plinth_sdk::export_program!(main);

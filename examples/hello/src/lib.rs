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

use plinth_sdk::{Context, Error, Output, Value};

/// The program's body. plinth calls it on every `preview` and `up`; it must only *declare*
/// resources. Registering a resource returns at once with a handle — the work happens in the
/// engine, in parallel where it can.
fn main(ctx: &Context) -> Result<(), Error> {
    // A pet name such as `joyful-lemur`. Inputs are set one by one with `input`.
    let pet = ctx
        .resource("random:RandomPet", "pet")
        .input("length", 2)
        .register();

    // Configuration comes from the stack (`plinth config set suffix_length 10`). `config_as`
    // parses the value; `?` stops the program with a message naming the key if it is not a
    // number, and `unwrap_or` supplies the default when it is not set.
    let suffix_length: i64 = ctx.config_as("suffix_length")?.unwrap_or(6);

    // An input can be another resource's output: `keepers` holds the pet's name, which is not
    // known until the pet exists. plinth orders the two resources accordingly, and a new pet
    // (say, after `plinth destroy`) also gives a new suffix.
    let suffix = ctx
        .resource("random:RandomString", "suffix")
        .input("length", suffix_length)
        .input("upper", false)
        .input("special", false)
        .input("keepers", Value::object([("pet", pet.output("result"))]))
        .register();

    // A password: its result is a secret, hidden in every display and output listing.
    let password = ctx
        .resource("random:RandomPassword", "password")
        .input("length", 20)
        .input("min_special", 2)
        .register();

    // A port number between 8000 and 8999: an integer, in the state and in every display.
    let port = ctx
        .resource("random:RandomInteger", "port")
        .input("min", 8000)
        .input("max", 8999)
        .register();

    // Outputs are not known while the program runs, so transform them with `apply`: the
    // closure runs once the value is known (and not at all during a preview, where the result
    // stays unknown).
    let greeting = pet
        .output("result")
        .apply(|name| format!("Hello, {}!", name.as_str().unwrap_or("stranger")));

    // `Output::all` waits for several outputs and hands their values to one closure, in order.
    let hostname =
        Output::all(vec![pet.output("result"), suffix.output("result")]).apply(|parts| {
            let part = |i: usize| parts[i].as_str().unwrap_or_default().to_owned();
            format!("{}-{}", part(0), part(1))
        });

    // Stack outputs: printed after `plinth up`, readable by scripts and other stacks.
    ctx.export("greeting", greeting);
    ctx.export("hostname", hostname);
    ctx.export("port", port.output("result"));
    // The password stays a secret as a stack output too.
    ctx.export("password", password.output("result"));
    Ok(())
}

// Makes `main` the component's entry point.
plinth_sdk::export_program!(main);

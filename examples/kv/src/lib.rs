//! # kv — a program on the key-value store
//!
//! Two entries in `./data`, declared with the typed SDK generated from the kv provider's
//! schema (`plinth gen-sdk examples/kv/provider --lang rust`, under `sdks/kv/rust`).
//!
//! ```text
//! plinth stack init dev
//! plinth up                              # writes data/greeting and data/copy
//! plinth config set greeting bonjour     # both entries are updated in place
//! plinth up
//! plinth destroy                         # removes them
//! ```

use plinth_kv_sdk::Entry;
use plinth_sdk::{Context, Error};

fn main(ctx: &Context) -> Result<(), Error> {
    let greeting = ctx.config_or("greeting", "hello");
    // Required inputs are the arguments of `builder`: a key and a value.
    let first = Entry::builder(ctx, "greeting", "greeting", greeting).register()?;
    // A value taken from another entry's output (an `Output<String>`): the copy is written
    // after the first entry, and updated whenever it changes.
    let copy = Entry::builder(ctx, "copy", "copy", first.value()).register()?;
    ctx.export("size", copy.size());
    Ok(())
}

plinth_sdk::export_program!(main);

//! The end-to-end test program for numbers: integers through a 0.3 provider (`random`), a 0.2
//! provider (`scale`, whose numbers are floats) and back, and a typed input of the wrong type.
//!
//! | resource | type | inputs |
//! |---|---|---|
//! | `n` | `random:RandomInteger` | `min` = `max` = config `count` (default 8402): its result is `count` |
//! | `product` | `scale:Product` (0.2) | `value` = `n`'s result, `factor` = 2 |
//! | `m` | `random:RandomInteger` | `min` = `max` = `product`'s product (a float from the 0.2 guest) |
//! | `big` | `random:RandomInteger` | `min` = `max` = 2^53 + 1, which no float holds |
//! | `bad` | `random:RandomPet` | only with config `wrong` = `true`: `separator` = 5, a number for a string |
//! | `odd` | `random:RandomPet` | only with config `not_finite` = `nan`, `inf` or `-inf`: `tuning` = `[1, that number]`, which JSON cannot hold |
//!
//! Stack outputs: `n`, `product`, `m`, `big` (their results) and `ratio`, the float 0.5.

use plinth_sdk::{Context, Error, Output};
use serde::Serialize;

/// The inputs of a `random:RandomInteger`, typed.
#[derive(Serialize)]
struct Range {
    min: Output,
    max: Output,
}

impl Range {
    /// The range holding exactly `value`.
    fn exactly(value: Output) -> Range {
        Range {
            min: value.clone(),
            max: value,
        }
    }
}

fn main(ctx: &Context) -> Result<(), Error> {
    let count: i64 = ctx.config_as("count")?.unwrap_or(8402);
    let n = ctx
        .resource("random:RandomInteger", "n")
        .inputs_from(&Range::exactly(Output::new(count)))?
        .register();
    let product = ctx
        .resource("scale:Product", "product")
        .input("value", n.output("result"))
        .input("factor", 2)
        .register();
    let m = ctx
        .resource("random:RandomInteger", "m")
        .inputs_from(&Range::exactly(product.output("product")))?
        .register();
    let big = ctx
        .resource("random:RandomInteger", "big")
        .inputs_from(&Range::exactly(Output::new((1i64 << 53) + 1)))?
        .register();
    if ctx.config("wrong").as_deref() == Some("true") {
        ctx.resource("random:RandomPet", "bad")
            .input("separator", 5)
            .register();
    }
    let not_finite = match ctx.config("not_finite").as_deref() {
        Some("nan") => Some(f64::NAN),
        Some("inf") => Some(f64::INFINITY),
        Some("-inf") => Some(f64::NEG_INFINITY),
        _ => None,
    };
    if let Some(number) = not_finite {
        ctx.resource("random:RandomPet", "odd")
            .input("tuning", vec![1.0, number])
            .register();
    }
    ctx.export("n", n.output("result"));
    ctx.export("product", product.output("product"));
    ctx.export("m", m.output("result"));
    ctx.export("big", big.output("result"));
    ctx.export("ratio", 0.5);
    Ok(())
}

plinth_sdk::export_program!(main);

//! The benchmark's program: `count` items of type `bench:Item`, in groups of [`GROUP`].
//!
//! Configuration:
//! - `count`: how many items (default 100);
//! - `shape`: `chains` (each item of a group depends on the one before it), `fanout` (every
//!   item of a group depends on the group's first) or `independent` (default `chains`);
//! - `changed`: the percentage of items whose payload differs from the first run (default 0):
//!   the first item of every group when it is 10;
//! - `secrets`: `true` gives every item a distinct secret input `secret`, as a stack of many
//!   generated passwords has (default none).
//!
//! Dependencies go through the id, which an update keeps: a changed item does not change the
//! inputs of the items after it, so `changed` is exactly the share of items updated.

use plinth_sdk::{Context, Error, Resource, Value};

/// Items per chain or fan-out.
const GROUP: u64 = 10;

#[derive(Clone, Copy)]
enum Shape {
    Chains,
    Fanout,
    Independent,
}

fn main(ctx: &Context) -> Result<(), Error> {
    let count: u64 = ctx.config_as("count")?.unwrap_or(100);
    let changed: u64 = ctx.config_as("changed")?.unwrap_or(0);
    let secrets = ctx.config("secrets").as_deref() == Some("true");
    let shape = match ctx.config_or("shape", "chains").as_str() {
        "chains" => Shape::Chains,
        "fanout" => Shape::Fanout,
        "independent" => Shape::Independent,
        other => {
            return Err(Error::new(format!(
                "unknown shape `{other}`: use chains, fanout or independent"
            )));
        }
    };
    let mut root: Option<Resource> = None;
    let mut previous: Option<Resource> = None;
    for index in 0..count {
        if index % GROUP == 0 {
            root = None;
            previous = None;
        }
        let payload = if (index * changed) % 100 < changed {
            format!("payload of item {index}, changed")
        } else {
            format!("payload of item {index}")
        };
        let mut item = ctx
            .resource("bench:Item", &format!("item-{index}"))
            .input("index", index as i64)
            .input("payload", payload);
        let after = match shape {
            Shape::Chains => previous.as_ref(),
            Shape::Fanout => root.as_ref(),
            Shape::Independent => None,
        };
        if let Some(after) = after {
            item = item.input("after", after.id());
        }
        if secrets {
            item = item.input(
                "secret",
                Value::secret(format!("secret-{index:06}-of-the-bench")),
            );
        }
        let item = item.register();
        root.get_or_insert(item);
        previous = Some(item);
    }
    ctx.export("count", count as i64);
    Ok(())
}

plinth_sdk::export_program!(main);

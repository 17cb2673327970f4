//! The end-to-end test program: one binary whose resources are chosen by configuration.
//!
//! | key | default | effect |
//! |---|---|---|
//! | `resources` | `a,b` | comma-separated names; one resource of type `kind` per name |
//! | `kind` | `echo` | `echo`: the named resources are `testkit:Echo`; `record`: `testkit:Record` |
//! | `delay_ms` | — | passed to each named resource as its `delay_ms` input (a number) |
//! | `value_<name>` | `v` | the resource's `value` input |
//! | `replace_<name>` | `r` | the resource's `replace_key` input (a change replaces an Echo) |
//! | `token_<name>` | — | the resource's `token` input, read with `secret_config`: a secret |
//! | `chain` | — | `true`: each resource after the first gets `prev` = the previous one's `value` output |
//! | `fault` | — | `panic`, `trap`, `fail` or `partial`: also registers a resource of that testkit type named `faulty` |
//!
//! Stack outputs: `names`, the named resources' `value` outputs joined by commas (through
//! `Output::all(..).apply(..)`), and `count`, the number of named resources.

use plinth_sdk::{Context, Error, Output};

fn main(ctx: &Context) -> Result<(), Error> {
    let names = ctx.config_or("resources", "a,b");
    let chain = ctx.config("chain").as_deref() == Some("true");
    let kind = kind_type(&ctx.config_or("kind", "echo"))?;
    let delay_ms = match ctx.config("delay_ms") {
        Some(ms) => Some(
            ms.parse::<u32>()
                .map_err(|_| Error::new(format!("`delay_ms` must be a number, not `{ms}`")))?,
        ),
        None => None,
    };

    let mut values: Vec<Output> = Vec::new();
    for name in names.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let mut echo = ctx
            .resource(kind, name)
            .input("value", ctx.config_or(&format!("value_{name}"), "v"))
            .input(
                "replace_key",
                ctx.config_or(&format!("replace_{name}"), "r"),
            );
        if let Some(ms) = delay_ms {
            echo = echo.input("delay_ms", ms);
        }
        if let Some(token) = ctx.secret_config(&format!("token_{name}")) {
            echo = echo.input("token", token);
        }
        if let (true, Some(previous)) = (chain, values.last()) {
            echo = echo.input("prev", previous.clone());
        }
        values.push(echo.register().output("value"));
    }

    if let Some(fault) = ctx.config("fault") {
        ctx.resource(fault_type(&fault)?, "faulty").register();
    }

    ctx.export("count", values.len());
    ctx.export(
        "names",
        Output::all(values).apply(|values| {
            values
                .iter()
                .map(|v| v.as_str().unwrap_or_default())
                .collect::<Vec<_>>()
                .join(",")
        }),
    );
    Ok(())
}

/// The testkit type of the named resources.
fn kind_type(kind: &str) -> Result<&'static str, Error> {
    match kind {
        "echo" => Ok("testkit:Echo"),
        "record" => Ok("testkit:Record"),
        other => Err(Error::new(format!(
            "unknown kind `{other}`: expected echo or record"
        ))),
    }
}

/// The testkit type that produces `fault`.
fn fault_type(fault: &str) -> Result<&'static str, Error> {
    Ok(match fault {
        "panic" => "testkit:Panic",
        "trap" => "testkit:Trap",
        "fail" => "testkit:Fail",
        "partial" => "testkit:Partial",
        other => {
            return Err(Error::new(format!(
                "unknown fault `{other}`: expected panic, trap, fail or partial"
            )));
        }
    })
}

plinth_sdk::export_program!(main);

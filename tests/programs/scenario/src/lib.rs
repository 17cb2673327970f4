//! The end-to-end test program: one binary whose resources are chosen by configuration.
//!
//! | key | default | effect |
//! |---|---|---|
//! | `resources` | `a,b` | comma-separated names; one `testkit:Echo` per name |
//! | `value_<name>` | `v` | the Echo's `value` input |
//! | `replace_<name>` | `r` | the Echo's `replace_key` input (a change replaces it) |
//! | `chain` | — | `true`: each Echo after the first gets `prev` = the previous one's `value` output |
//! | `fault` | — | `panic`, `trap`, `fail` or `partial`: also registers a resource of that testkit type named `faulty` |
//!
//! Stack outputs: `names`, the Echoes' `value` outputs joined by commas (through
//! `Output::all(..).apply(..)`), and `count`, the number of Echoes.

use plinth_sdk::{Context, Error, Output};

fn main(ctx: &Context) -> Result<(), Error> {
    let names = ctx.config_or("resources", "a,b");
    let chain = ctx.config("chain").as_deref() == Some("true");

    let mut values: Vec<Output> = Vec::new();
    for name in names.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let mut echo = ctx
            .resource("testkit:Echo", name)
            .input("value", ctx.config_or(&format!("value_{name}"), "v"))
            .input(
                "replace_key",
                ctx.config_or(&format!("replace_{name}"), "r"),
            );
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

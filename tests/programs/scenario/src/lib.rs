//! The end-to-end test program: one binary whose resources are chosen by configuration.
//!
//! | key | default | effect |
//! |---|---|---|
//! | `resources` | `a,b` | comma-separated names; one resource of type `kind` per name |
//! | `kind` | `echo` | `echo`: the named resources are `testkit:Echo`; `record`: `testkit:Record` |
//! | `type_<name>` | — | the resource's type instead of `kind`'s, e.g. `adversary:ReadFile` |
//! | `inputs_<name>` | — | more string inputs of the resource: `key=value` pairs separated by `;` |
//! | `read_<name>` | — | an id: the resource is read (`read-resource`) with that id instead of managed |
//! | `protect` | — | comma-separated names registered with the `protect` option |
//! | `dbr` | — | comma-separated names registered with `delete_before_replace` |
//! | `replace_on` | — | comma-separated inputs whose change replaces any named resource |
//! | `alias_<name>` | — | an old name of the resource (the `aliases` option) |
//! | `import_<name>` | — | a provider id: the resource is adopted (the `import` option) |
//! | `provider_region` | — | the named resources are managed by an explicit `plinth:providers:testkit` resource named `explicit`, configured with this `region` |
//! | `component` | — | a name: the named resources are children of a `scenario:Group` component of that name, whose outputs are `count` |
//! | `delay_ms` | — | passed to each named resource as its `delay_ms` input (a number) |
//! | `value_<name>` | `v` | the resource's `value` input |
//! | `replace_<name>` | `r` | the resource's `replace_key` input (a change replaces an Echo) |
//! | `token_<name>` | — | the resource's `token` input, read with `secret_config`: a secret |
//! | `print_<name>` | — | an output of the resource, printed (revealed) to stdout and stderr once known |
//! | `password_length` | — | also registers a `random:RandomPassword` named `password` of that length, exported as `password` (the project must have the `random` plugin) |
//! | `chain` | — | `true`: each resource after the first gets `prev` = the previous one's `value` output |
//! | `require` | — | a key: the program requires that configuration value (`require_config`) |
//! | `fault` | — | `panic`, `trap`, `fail` or `partial`: also registers a resource of that testkit type named `faulty` |
//!
//! Stack outputs: `names`, the named resources' `value` outputs joined by commas (through
//! `Output::all(..).apply(..)`), and `count`, the number of named resources.

use plinth_sdk::{Context, Error, Output, Resource, Value};

fn main(ctx: &Context) -> Result<(), Error> {
    if let Some(key) = ctx.config("require") {
        ctx.require_config(&key)?;
    }
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

    let protected = list(ctx, "protect");
    let delete_first = list(ctx, "dbr");
    let replace_on = list(ctx, "replace_on");
    let explicit = ctx.config("provider_region").map(|region| {
        ctx.resource("plinth:providers:testkit", "explicit")
            .input("region", region)
            .register()
    });
    let group = ctx
        .config("component")
        .map(|name| ctx.component("scenario:Group", &name).register());

    let mut values: Vec<Output> = Vec::new();
    for name in names.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let ty = ctx.config(&format!("type_{name}"));
        let ty = ty.as_deref().unwrap_or(kind);
        let mut echo = match ctx.config(&format!("read_{name}")) {
            Some(id) => ctx.read(ty, name, &id),
            None => ctx.resource(ty, name),
        };
        echo = echo
            .inputs(extra_inputs(ctx, name)?)
            .input("value", ctx.config_or(&format!("value_{name}"), "v"))
            .input(
                "replace_key",
                ctx.config_or(&format!("replace_{name}"), "r"),
            );
        if let Some(ms) = delay_ms {
            echo = echo.input("delay_ms", ms);
        }
        if protected.iter().any(|p| p == name) {
            echo = echo.protect(true);
        }
        if delete_first.iter().any(|p| p == name) {
            echo = echo.delete_before_replace(true);
        }
        if !replace_on.is_empty() {
            echo = echo.replace_on_changes(replace_on.clone());
        }
        if let Some(old) = ctx.config(&format!("alias_{name}")) {
            echo = echo.alias(old);
        }
        if let Some(id) = ctx.config(&format!("import_{name}")) {
            echo = echo.import(id);
        }
        if let Some(group) = &group {
            echo = echo.parent(group);
        }
        if let Some(provider) = &explicit {
            echo = echo.provider(provider);
        }
        if let Some(token) = ctx.secret_config(&format!("token_{name}")) {
            echo = echo.input("token", token);
        }
        if let (true, Some(previous)) = (chain, values.last()) {
            echo = echo.input("prev", previous.clone());
        }
        let registered = echo.register();
        print_output(ctx, name, &registered);
        values.push(registered.output("value"));
    }

    if let Some(length) = ctx.config("password_length") {
        let length: u32 = (length.parse()).map_err(|_| {
            Error::new(format!(
                "`password_length` must be a number, not `{length}`"
            ))
        })?;
        let password = ctx
            .resource("random:RandomPassword", "password")
            .input("length", length)
            .register();
        print_output(ctx, "password", &password);
        ctx.export("password", password.output("result"));
    }

    if let Some(fault) = ctx.config("fault") {
        ctx.resource(fault_type(&fault)?, "faulty").register();
    }

    if let Some(group) = &group {
        group.register_outputs([("count", values.len())]);
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

/// Prints the output of `resource` (named `name`) that config `print_<name>` names, revealed,
/// to stdout and stderr once it is known: a careless program.
fn print_output(ctx: &Context, name: &str, resource: &Resource) {
    let Some(field) = ctx.config(&format!("print_{name}")) else {
        return;
    };
    let label = format!("{name}.{field}");
    resource.output(field).apply(move |value| {
        let text = value.revealed().as_str().unwrap_or_default().to_owned();
        println!("program prints {label}: {text}");
        eprintln!("program warns {label}: {text}");
        Value::Null
    });
}

/// A comma-separated list in config `key`.
fn list(ctx: &Context, key: &str) -> Vec<String> {
    (ctx.config(key).unwrap_or_default().split(','))
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The `inputs_<name>` of resource `name`: `key=value` pairs separated by `;`.
fn extra_inputs(ctx: &Context, name: &str) -> Result<Vec<(String, String)>, Error> {
    let key = format!("inputs_{name}");
    let Some(text) = ctx.config(&key) else {
        return Ok(Vec::new());
    };
    text.split(';')
        .filter(|pair| !pair.trim().is_empty())
        .map(|pair| match pair.split_once('=') {
            Some((k, v)) => Ok((k.trim().to_owned(), v.to_owned())),
            None => Err(Error::new(format!(
                "`{key}`: `{pair}` is not a `key=value` pair"
            ))),
        })
        .collect()
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

//! Declares two `shapes:Firewall`s through the generated SDK: the first from values, the second
//! from the first's typed outputs. Exports what came back, each through a typed `apply`.

use std::collections::BTreeMap;

use plinth_sdk::{Context, Error, Secret, Value};
use plinth_shapes_sdk::{Firewall, FirewallType, PortsOfArgs, Rule, RuleProtocol, ports_of};

fn main(ctx: &Context) -> Result<(), Error> {
    let rules = vec![
        Rule {
            port: 443,
            protocol: RuleProtocol::Tcp,
            r#match: Some("10.0.0.0/8".into()),
        },
        Rule {
            port: 53,
            protocol: RuleProtocol::Udp,
            r#match: None,
        },
    ];
    let ports = ports_of(
        ctx,
        &PortsOfArgs {
            rules: rules.clone(),
        },
    )?;
    let edge = Firewall::builder(ctx, "edge", rules, FirewallType::DenyAll)
        .labels(BTreeMap::from([("tier".to_owned(), "edge".to_owned())]))
        .token(Secret::new("s3cret".to_owned()))
        .extra(Value::object([("anything", 1)]))
        .weight(0.5)
        .register()?;
    // Typed outputs flow into typed inputs as they are.
    let copy = Firewall::builder(ctx, "copy", edge.rules(), edge.r#type()).register()?;

    ctx.export(
        "ports",
        Value::Array(ports.into_iter().map(Value::from).collect()),
    );
    ctx.export("count", copy.rule_count());
    ctx.export(
        "first",
        edge.first().apply(|first: Option<Rule>| {
            first.map_or_else(String::new, |r| format!("{}/{:?}", r.port, r.protocol))
        }),
    );
    ctx.export(
        "policy",
        copy.r#type().apply(|policy| format!("{policy:?}")),
    );
    ctx.export("labels", edge.labels().apply(|labels| labels.len() as i64));
    ctx.export("fingerprint", edge.fingerprint());
    ctx.export("weight", edge.weight());
    Ok(())
}

plinth_sdk::export_program!(main);

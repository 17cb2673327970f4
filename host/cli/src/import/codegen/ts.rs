//! TypeScript: `const x = new Type(ctx, "name", { input: v }, { parent });` on the SDK package
//! `@plinth/<provider>`; its `import` lines go at the top of the module.

use std::collections::BTreeSet;

use super::parts::{Declaration, Language, Secrets, options, script_string, skipped_note, written};
use super::script::Script;
use crate::gen_sdk::code::Writer;
use crate::gen_sdk::ts::property_key;

const TYPESCRIPT: Script = Script {
    null: "null",
    booleans: ["false", "true"],
    not_a_number: "NaN",
    infinity: "Infinity",
    require_secret: "ctx.requireSecretConfig",
    key,
    padding: " ",
};

pub(super) fn declare(
    declaration: &Declaration,
    variable: &str,
    secrets: &mut Secrets,
    imports: &mut BTreeSet<String>,
) -> Vec<String> {
    let class = declaration.resource.name.pascal();
    let module = crate::gen_sdk::ts::package_name(declaration.package);
    imports.insert(format!(
        "import {{ {class} }} from {};",
        script_string(&module)
    ));
    let args = (written(declaration).into_iter()).map(|(property, value)| {
        let literal = TYPESCRIPT.input(property, value, secrets);
        format!("{}: {literal}", property_key(&property.name.camel()))
    });
    let args = Writer::new("  ").block(0, args.collect::<Vec<_>>());
    let options: Vec<String> = (options(Language::TypeScript, declaration).into_iter())
        .map(|(option, variable)| format!("{option}: {variable}"))
        .collect();
    let options = if options.is_empty() {
        String::new()
    } else {
        format!(", {{ {} }}", options.join(", "))
    };
    let name = script_string(&declaration.name);
    let statement = format!("const {variable} = new {class}(ctx, {name}, {args}{options});");
    let mut lines: Vec<String> =
        (skipped_note(Language::TypeScript, declaration).into_iter()).collect();
    lines.extend(statement.lines().map(str::to_owned));
    lines
}

/// An object literal's key: bare or quoted, and computed for `__proto__`, which a literal key
/// would turn into the object's prototype instead of a property.
fn key(text: &str) -> String {
    if text == "__proto__" {
        format!("[{}]", script_string(text))
    } else if property_key(text) == text {
        text.to_owned()
    } else {
        script_string(text)
    }
}

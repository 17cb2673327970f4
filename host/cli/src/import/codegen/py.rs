//! Python: `x = Type(ctx, "name", input=v, opts=ResourceOptions(parent=...))` on the SDK
//! module `plinth_<provider>`, to paste into the program's function (an import may sit there
//! too).

use std::collections::BTreeSet;

use super::parts::{Declaration, Language, Secrets, options, script_string, skipped_note, written};
use super::script::Script;
use crate::gen_sdk::code::Writer;
use crate::gen_sdk::py::{IDENTS, field_ident};

const PYTHON: Script = Script {
    null: "None",
    booleans: ["False", "True"],
    not_a_number: "float(\"nan\")",
    infinity: "float(\"inf\")",
    require_secret: "ctx.require_secret_config",
    key: script_string,
    padding: "",
};

pub(super) fn declare(
    declaration: &Declaration,
    variable: &str,
    secrets: &mut Secrets,
    imports: &mut BTreeSet<String>,
) -> Vec<String> {
    let class = IDENTS.pascal(&declaration.resource.name);
    let module = crate::gen_sdk::py::module_name(declaration.package);
    imports.insert(format!("from {module} import {class}"));
    let mut args = vec!["ctx".to_owned(), script_string(&declaration.name)];
    for (property, value) in written(declaration) {
        let literal = PYTHON.input(property, value, secrets);
        args.push(format!("{}={literal}", field_ident(&property.name)));
    }
    let options: Vec<String> = (options(Language::Python, declaration).into_iter())
        .map(|(option, variable)| format!("{option}={variable}"))
        .collect();
    if !options.is_empty() {
        imports.insert("from plinth import ResourceOptions".to_owned());
        args.push(format!("opts=ResourceOptions({})", options.join(", ")));
    }
    let call = Writer::new("    ").delimited(0, "(", ")", args);
    let mut lines: Vec<String> = skipped_note(Language::Python, declaration)
        .into_iter()
        .collect();
    lines.extend(
        format!("{variable} = {class}{call}")
            .lines()
            .map(str::to_owned),
    );
    lines
}

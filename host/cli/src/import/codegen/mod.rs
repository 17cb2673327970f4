//! The code `plinth import` prints: each imported resource declared on the provider's generated
//! SDK, in the program's language, with the inputs read back. Names and strings come from the
//! provider and the user, so every identifier goes through the SDK emitters' own escaping and
//! every value is written as a literal of the language; a secret is never written: the code
//! reads it from the stack's configuration instead.

mod parts;
mod py;
mod rust;
mod script;
mod ts;

use std::collections::BTreeSet;

use parts::Secrets;
pub use parts::{Code, Declaration, Language, Reference, commented, variable_name};

/// The code declaring `declarations` in `language`.
pub fn generate(language: Language, declarations: &[Declaration]) -> Code {
    let mut names = Variables::default();
    let mut body = Vec::new();
    let mut imports = BTreeSet::new();
    for (i, declaration) in declarations.iter().enumerate() {
        if i > 0 {
            body.push(String::new());
        }
        let variable = names.fresh(language, &declaration.name);
        let mut secrets = Secrets::new(&variable);
        let mut lines = match language {
            Language::Rust => rust::declare(declaration, &variable, &mut secrets, &mut imports),
            Language::TypeScript => ts::declare(declaration, &variable, &mut secrets, &mut imports),
            Language::Python => py::declare(declaration, &variable, &mut secrets, &mut imports),
        };
        let comment = language.comment();
        let mut notes = vec![format!(
            "{comment} Imported by `plinth import`: {} `{}` (id `{}`).",
            commented(&declaration.resource.token),
            commented(&declaration.name),
            commented(&declaration.id)
        )];
        for reference in [&declaration.parent, &declaration.provider]
            .into_iter()
            .flatten()
        {
            notes.push(format!(
                "{comment} `{}` is your program's variable for {}.",
                variable_name(language, &reference.name),
                commented(&reference.urn)
            ));
        }
        for (path, key) in &secrets.keys {
            notes.push(format!(
                "{comment} `{}` is a secret, not printed: the program reads it from the stack's \
                 configuration; set it with `plinth config set --secret {key} VALUE`.",
                commented(path)
            ));
        }
        notes.append(&mut lines);
        body.append(&mut notes);
    }
    Code {
        imports: imports.into_iter().collect(),
        body,
    }
}

/// The variable names taken so far, so that two resources never share one.
#[derive(Default)]
struct Variables(BTreeSet<String>);

impl Variables {
    fn fresh(&mut self, language: Language, name: &str) -> String {
        let base = variable_name(language, name);
        let mut candidate = base.clone();
        let mut n = 2;
        while !self.0.insert(candidate.clone()) {
            candidate = format!("{base}{}{n}", if base.ends_with('_') { "" } else { "_" });
            n += 1;
        }
        candidate
    }
}

#[cfg(test)]
mod tests;

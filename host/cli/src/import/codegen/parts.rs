//! The pieces the code generator and its three languages share: what to declare, the code
//! made, variable names, comments and strings safe to write, secrets read from configuration.

use plinth_engine::value::{PropertyMap, Value};

use crate::gen_sdk::model::{Name, Package, Property, Resource, TypeRef};

/// The languages code is generated in, by guest language id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Language {
    Rust,
    TypeScript,
    Python,
}

impl Language {
    /// The language of a guest language id (`rust`, `ts`, `python`).
    pub fn of_id(id: &str) -> Option<Language> {
        match id {
            "rust" => Some(Language::Rust),
            "ts" => Some(Language::TypeScript),
            "python" => Some(Language::Python),
            _ => None,
        }
    }

    /// What starts a line comment.
    pub fn comment(self) -> &'static str {
        match self {
            Language::Python => "#",
            Language::Rust | Language::TypeScript => "//",
        }
    }

    /// The guest language id, which is also its SDK emitter's.
    pub fn id(self) -> &'static str {
        match self {
            Language::Rust => "rust",
            Language::TypeScript => "ts",
            Language::Python => "python",
        }
    }
}

/// A resource of the stack the code refers to by a variable of the program: a parent or a
/// provider resource.
#[derive(Debug, Clone)]
pub struct Reference {
    pub urn: String,
    /// Its resource name, which names the variable.
    pub name: String,
}

/// One imported resource.
#[derive(Debug, Clone)]
pub struct Declaration<'a> {
    pub package: &'a Package,
    pub resource: &'a Resource,
    /// The resource's name in the program.
    pub name: String,
    pub id: String,
    /// The inputs read back.
    pub inputs: PropertyMap,
    pub parent: Option<Reference>,
    pub provider: Option<Reference>,
}

/// Generated code: the lines that bring the SDKs' types into scope, then the declarations.
#[derive(Debug, Clone, PartialEq)]
pub struct Code {
    pub imports: Vec<String>,
    pub body: Vec<String>,
}

impl Code {
    pub fn text(&self) -> String {
        let mut text = self.imports.join("\n");
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        text.push_str(&self.body.join("\n"));
        text.push('\n');
        text
    }
}

/// The variable for a resource named `name`: its words cased the language's way (ASCII
/// letters and digits only), `_` first when it starts with a digit, `resource` when it has no
/// word, a keyword escaped.
pub fn variable_name(language: Language, name: &str) -> String {
    let words = Name::split(name);
    let cased = match language {
        Language::TypeScript => words.camel(),
        Language::Rust | Language::Python => words.snake(),
    };
    let cased: String = (cased.chars())
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    let cased = match cased.chars().next() {
        None => "resource".to_owned(),
        Some(c) if c.is_ascii_digit() => format!("_{cased}"),
        Some(_) => cased,
    };
    match language {
        Language::Rust => crate::gen_sdk::rust::IDENTS.ident(cased),
        Language::TypeScript => crate::gen_sdk::ts::IDENTS.ident(cased),
        Language::Python => crate::gen_sdk::py::IDENTS.ident(cased),
    }
}

/// Text put in a line comment: control characters (line ends among them), the line and
/// paragraph separators and the bidirectional overrides Rust refuses in comments, as `?`.
pub fn commented(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() || is_bidi_control(c) || matches!(c, '\u{2028}' | '\u{2029}') {
                '?'
            } else {
                c
            }
        })
        .collect()
}

/// A string literal of JavaScript or Python: JSON's, with the characters that are valid in it
/// but end a line for some readers or reorder how the line shows (Trojan Source) escaped too.
pub fn script_string(text: &str) -> String {
    let mut literal = String::with_capacity(text.len() + 2);
    for c in crate::gen_sdk::code::json_string(text).chars() {
        if matches!(c, '\u{85}' | '\u{2028}' | '\u{2029}') || is_bidi_control(c) {
            literal.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            literal.push(c);
        }
    }
    literal
}

/// The bidirectional formatting characters: embeddings, overrides, isolates and marks.
pub(super) fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{61c}')
}

/// The configuration keys that stand for the secrets of one resource's inputs.
pub struct Secrets {
    variable: String,
    /// Property path → key, in the order met.
    pub(super) keys: Vec<(String, String)>,
}

impl Secrets {
    pub(super) fn new(variable: &str) -> Secrets {
        Secrets {
            variable: variable.trim_start_matches("r#").to_owned(),
            keys: Vec::new(),
        }
    }

    /// The key for the secret at `path` (`password`, `users[0].token`): the variable and the
    /// path's words, joined by `_`, which `plinth config set` takes.
    pub(super) fn key(&mut self, path: &str) -> String {
        let words = Name::split(&format!("{} {path}", self.variable)).snake();
        let mut key: String = (words.chars())
            .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if key.is_empty() {
            key = "secret".into();
        }
        let base = key.clone();
        let mut n = 2;
        while self.keys.iter().any(|(_, k)| *k == key) {
            key = format!("{base}_{n}");
            n += 1;
        }
        self.keys.push((path.to_owned(), key.clone()));
        key
    }
}

/// The inputs a declaration writes: each known property read back, except those left unset or
/// at the schema's default (the provider's check applies it again), in the SDK's order.
pub(super) fn written<'a>(declaration: &'a Declaration) -> Vec<(&'a Property, &'a Value)> {
    (declaration.resource.inputs.iter())
        .filter_map(|p| Some((p, declaration.inputs.get(&p.wire)?)))
        .filter(|(p, v)| p.required || (!matches!(v, Value::Null) && p.default.as_ref() != Some(v)))
        .collect()
}

/// The comment that names the keys read back that the SDK's resource does not declare, which
/// the code leaves out; `None` if there are none.
pub(super) fn skipped_note(language: Language, declaration: &Declaration) -> Option<String> {
    let skipped: Vec<String> = (declaration.inputs.keys())
        .filter(|k| !declaration.resource.inputs.iter().any(|p| &p.wire == *k))
        .map(|k| commented(k))
        .collect();
    (!skipped.is_empty()).then(|| {
        format!(
            "{} Read back but unknown to the SDK, so left out: {}.",
            language.comment(),
            skipped.join(", ")
        )
    })
}

/// The resource options a declaration sets, as (option, the program's variable): its parent
/// and its provider.
pub(super) fn options(
    language: Language,
    declaration: &Declaration,
) -> Vec<(&'static str, String)> {
    [
        ("parent", &declaration.parent),
        ("provider", &declaration.provider),
    ]
    .into_iter()
    .filter_map(|(option, reference)| {
        Some((option, variable_name(language, &reference.as_ref()?.name)))
    })
    .collect()
}

/// Whether `value` is of the schema's type `ty`; when not (a provider reading back something
/// else than it declares), the code writes it by its own kind.
pub(super) fn fits(ty: &TypeRef, value: &Value) -> bool {
    match (ty, value) {
        (_, Value::Secret(inner)) => fits(ty, inner),
        (TypeRef::Any, _) => true,
        (TypeRef::String | TypeRef::Enum(_), Value::String(_)) => true,
        (TypeRef::Integer, Value::Integer(_)) => true,
        (TypeRef::Integer, Value::Number(n)) => n.fract() == 0.0 && n.abs() < 9.0e15,
        (TypeRef::Number, Value::Integer(_) | Value::Number(_)) => true,
        (TypeRef::Boolean, Value::Bool(_)) => true,
        (TypeRef::Array(_), Value::Array(_)) => true,
        (TypeRef::Map(_) | TypeRef::Object(_), Value::Object(_)) => true,
        _ => false,
    }
}

/// `path` extended by a property or an index, for secret keys and notes.
pub(super) fn child_path(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

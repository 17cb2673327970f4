//! What every emitter writes code with: a writer of indented lines, identifiers kept clear of
//! a language's keywords, string literals, and a property's documentation.

use std::fmt::Write as _;

use super::model::{Name, Property};

/// A generated file's text, written line by line at an indentation of `unit`s.
pub struct Writer {
    text: String,
    unit: &'static str,
}

impl Writer {
    /// A writer that indents by `unit` (two or four spaces) per level.
    pub fn new(unit: &'static str) -> Writer {
        Writer {
            text: String::new(),
            unit,
        }
    }

    /// `text` at `indent` levels, or an empty line (without trailing spaces) for no text.
    pub fn line(&mut self, indent: usize, text: &str) {
        if text.is_empty() {
            self.text.push('\n');
        } else {
            let _ = writeln!(self.text, "{}{text}", self.unit.repeat(indent));
        }
    }

    /// `{`, one `entry,` per line a level deeper, then `}` at `indent`: an object or dict
    /// literal; `{}` when there are no entries.
    pub fn block(&self, indent: usize, entries: impl IntoIterator<Item = String>) -> String {
        let mut text = String::from("{\n");
        let mut empty = true;
        for entry in entries {
            empty = false;
            let _ = writeln!(text, "{}{entry},", self.unit.repeat(indent + 1));
        }
        if empty {
            return "{}".into();
        }
        let _ = write!(text, "{}}}", self.unit.repeat(indent));
        text
    }

    pub fn finish(self) -> String {
        self.text
    }
}

/// How one language turns a name into an identifier: cased its way, a keyword escaped.
pub struct Identifiers {
    keywords: &'static [&'static str],
    /// The identifier for a keyword.
    escape: fn(&str) -> String,
}

impl Identifiers {
    pub const fn new(keywords: &'static [&'static str], escape: fn(&str) -> String) -> Self {
        Identifiers { keywords, escape }
    }

    /// `name` itself, or escaped when it is a keyword.
    pub fn ident(&self, name: String) -> String {
        if self.keywords.contains(&name.as_str()) {
            (self.escape)(&name)
        } else {
            name
        }
    }

    pub fn snake(&self, name: &Name) -> String {
        self.ident(name.snake())
    }

    pub fn camel(&self, name: &Name) -> String {
        self.ident(name.camel())
    }

    pub fn pascal(&self, name: &Name) -> String {
        self.ident(name.pascal())
    }
}

/// A keyword with a trailing `_` (PEP 8's way, and JavaScript's habit).
pub fn trailing_underscore(keyword: &str) -> String {
    format!("{keyword}_")
}

/// A string literal of JavaScript or Python: JSON's escapes are theirs, for every string JSON
/// can write.
pub fn json_string(text: &str) -> String {
    serde_json::to_string(text).expect("a string")
}

/// A property's description, with what the schema says beyond its type.
pub fn property_doc(property: &Property) -> String {
    let mut doc = property.description.trim().to_owned();
    let mut facts = Vec::new();
    if let Some(default) = &property.default {
        facts.push(format!("Default: `{default}`."));
    }
    if property.replace_on_change {
        facts.push("Changing it replaces the resource.".to_owned());
    }
    if property.secret {
        facts.push("Always a secret.".to_owned());
    }
    if !facts.is_empty() {
        if !doc.is_empty() {
            doc.push_str("\n\n");
        }
        doc.push_str(&facts.join(" "));
    }
    if doc.is_empty() {
        format!("`{}`.", property.wire)
    } else {
        doc
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_indents_its_entries_one_level_deeper() {
        let writer = Writer::new("  ");
        assert_eq!(writer.block(1, Vec::new()), "{}");
        assert_eq!(
            writer.block(1, ["a: 1".to_owned(), "b: 2".to_owned()]),
            "{\n    a: 1,\n    b: 2,\n  }"
        );
    }

    #[test]
    fn keywords_are_escaped_the_language_s_way() {
        let python = Identifiers::new(&["class"], trailing_underscore);
        assert_eq!(python.ident("class".into()), "class_");
        assert_eq!(python.ident("klass".into()), "klass");
    }
}

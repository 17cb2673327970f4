//! Property types: what values a property takes.

use std::fmt;

use super::PropertySchema;

/// The type of a property. Language-neutral: the engine shows it, SDKs for programs are
/// generated from it, and the default `check` validates inputs against it.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Type {
    /// Any value: what a property says when its schema says nothing.
    #[default]
    Any,
    /// A UTF-8 string.
    String,
    /// A 64-bit whole number.
    Integer,
    /// A number, whole or not: an integer is a number too.
    Number,
    /// `true` or `false`.
    Boolean,
    /// A list of values of one type.
    Array(Box<Type>),
    /// An object with any keys, whose values are of one type.
    Map(Box<Type>),
    /// An object with named properties.
    Object(ObjectType),
    /// One of these strings.
    Enum(Vec<String>),
}

/// An object type: named properties, each with its own type.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ObjectType {
    /// A name for the type (`Rule`), which generated SDKs use; `None` for an anonymous object.
    pub name: Option<String>,
    /// What the object is, for documentation.
    pub description: String,
    /// Its properties. `replace_on_change` means nothing here: a change anywhere inside a
    /// top-level property is that property's change.
    pub properties: Vec<PropertySchema>,
}

impl Type {
    /// A list of `items`.
    pub fn array(items: Type) -> Type {
        Type::Array(Box::new(items))
    }

    /// An object with any keys and values of type `values`.
    pub fn map(values: Type) -> Type {
        Type::Map(Box::new(values))
    }

    /// An object type named `name` with `properties`.
    pub fn object(name: impl Into<String>, properties: Vec<PropertySchema>) -> Type {
        Type::Object(ObjectType {
            name: Some(name.into()),
            description: String::new(),
            properties,
        })
    }

    /// One of `values`.
    pub fn one_of<S: Into<String>>(values: impl IntoIterator<Item = S>) -> Type {
        Type::Enum(values.into_iter().map(Into::into).collect())
    }

    /// The type with an article, for messages: `a string`, `an array of integers`, ...
    pub(crate) fn expected(&self) -> String {
        match self {
            Type::Any => "any value".to_owned(),
            Type::String => "a string".to_owned(),
            Type::Integer => "an integer".to_owned(),
            Type::Number => "a number".to_owned(),
            Type::Boolean => "a boolean".to_owned(),
            Type::Array(items) => format!("an array of {}", items.plural()),
            Type::Map(values) => format!("an object of {}", values.plural()),
            Type::Object(object) => match &object.name {
                Some(name) => format!("an object ({name})"),
                None => "an object".to_owned(),
            },
            Type::Enum(values) => format!("one of {}", quoted(values)),
        }
    }

    fn plural(&self) -> String {
        match self {
            Type::Any => "any values".to_owned(),
            Type::String => "strings".to_owned(),
            Type::Integer => "integers".to_owned(),
            Type::Number => "numbers".to_owned(),
            Type::Boolean => "booleans".to_owned(),
            other => format!("({})", other.expected()),
        }
    }
}

/// `"a", "b"`.
pub(crate) fn quoted(values: &[String]) -> String {
    values
        .iter()
        .map(|v| format!("{v:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.expected())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_say_what_they_expect() {
        assert_eq!(
            Type::array(Type::Integer).to_string(),
            "an array of integers"
        );
        assert_eq!(
            Type::map(Type::array(Type::String)).to_string(),
            "an object of (an array of strings)"
        );
        assert_eq!(
            Type::object("Rule", Vec::new()).to_string(),
            "an object (Rule)"
        );
        assert_eq!(
            Type::one_of(["tcp", "udp"]).to_string(),
            r#"one of "tcp", "udp""#
        );
    }
}

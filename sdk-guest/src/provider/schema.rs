//! Schemas: what a resource type takes and produces, and the checks and diffs that follow from
//! them alone.

use super::{CheckFailure, Diff};
use crate::{PropertyMap, Value};

/// Describes one property of a resource type. Build it with [`PropertySchema::new`] and the
/// flag methods.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PropertySchema {
    /// The property name.
    pub name: String,
    /// What the property means, for documentation.
    pub description: String,
    /// The property must be given (as an input) or is always set (as an output).
    pub required: bool,
    /// The property is always a secret, such as a generated password.
    pub secret: bool,
    /// A change to this input replaces the resource instead of updating it.
    pub replace_on_change: bool,
}

impl PropertySchema {
    /// An optional, plain property.
    pub fn new(name: impl Into<String>) -> PropertySchema {
        PropertySchema {
            name: name.into(),
            description: String::new(),
            required: false,
            secret: false,
            replace_on_change: false,
        }
    }

    /// Sets the description.
    pub fn describe(mut self, description: impl Into<String>) -> PropertySchema {
        self.description = description.into();
        self
    }

    /// Marks the property as required.
    pub fn required(mut self) -> PropertySchema {
        self.required = true;
        self
    }

    /// Marks the property as always secret.
    pub fn secret(mut self) -> PropertySchema {
        self.secret = true;
        self
    }

    /// Marks the property as replacing the resource when it changes.
    pub fn replace_on_change(mut self) -> PropertySchema {
        self.replace_on_change = true;
        self
    }
}

/// Describes one resource type: its token, inputs and outputs.
///
/// ```
/// use plinth_sdk::{PropertySchema, ResourceSchema};
///
/// let schema = ResourceSchema::new("random:RandomInteger")
///     .describe("A random integer in a range.")
///     .input(PropertySchema::new("min").required().replace_on_change())
///     .input(PropertySchema::new("max").required().replace_on_change())
///     .output(PropertySchema::new("result").required());
/// assert_eq!(schema.token, "random:RandomInteger");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceSchema {
    /// The type token, `<package>:<Type>`, e.g. `random:RandomString`.
    pub token: String,
    /// What the resource is, for documentation.
    pub description: String,
    /// The input properties.
    pub inputs: Vec<PropertySchema>,
    /// The output properties.
    pub outputs: Vec<PropertySchema>,
}

impl ResourceSchema {
    /// A schema for `token` with no properties yet.
    pub fn new(token: impl Into<String>) -> ResourceSchema {
        ResourceSchema {
            token: token.into(),
            description: String::new(),
            inputs: Vec::new(),
            outputs: Vec::new(),
        }
    }

    /// Sets the description.
    pub fn describe(mut self, description: impl Into<String>) -> ResourceSchema {
        self.description = description.into();
        self
    }

    /// Adds an input property.
    pub fn input(mut self, property: PropertySchema) -> ResourceSchema {
        self.inputs.push(property);
        self
    }

    /// Adds an output property.
    pub fn output(mut self, property: PropertySchema) -> ResourceSchema {
        self.outputs.push(property);
        self
    }

    /// A failure for every required input that is missing or null.
    pub fn missing_required(&self, inputs: &PropertyMap) -> Vec<CheckFailure> {
        self.inputs
            .iter()
            .filter(|p| p.required && inputs.get(&p.name).is_none_or(Value::is_null))
            .map(|p| CheckFailure::new(&p.name, "a value is required"))
            .collect()
    }

    /// Compares inputs key by key: a key is changed if its value differs (a missing key equals
    /// null), and changed keys flagged `replace_on_change` require a replacement.
    pub fn diff(&self, olds: &PropertyMap, news: &PropertyMap) -> Diff {
        let null = Value::Null;
        let mut changed: Vec<String> = olds
            .keys()
            .chain(news.keys().filter(|k| !olds.contains_key(*k)))
            .filter(|k| olds.get(*k).unwrap_or(&null) != news.get(*k).unwrap_or(&null))
            .cloned()
            .collect();
        changed.sort();
        let replaces = changed
            .iter()
            .filter(|k| {
                self.inputs
                    .iter()
                    .any(|p| p.replace_on_change && &p.name == *k)
            })
            .cloned()
            .collect();
        Diff {
            changed,
            replaces,
            delete_before_replace: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> ResourceSchema {
        ResourceSchema::new("test:Thing")
            .input(PropertySchema::new("size").required().replace_on_change())
            .input(PropertySchema::new("label"))
    }

    fn map(entries: &[(&str, Value)]) -> PropertyMap {
        entries
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect()
    }

    #[test]
    fn builder_sets_flags() {
        let p = PropertySchema::new("pw").describe("The password.").secret();
        assert!(p.secret && !p.required && !p.replace_on_change);
        assert_eq!(p.description, "The password.");
        assert_eq!(schema().inputs.len(), 2);
    }

    #[test]
    fn required_inputs_must_be_present_and_not_null() {
        let s = schema();
        assert_eq!(s.missing_required(&map(&[])).len(), 1);
        assert_eq!(
            s.missing_required(&map(&[("size", Value::Null)]))[0].property,
            "size"
        );
        assert!(s.missing_required(&map(&[("size", 1.into())])).is_empty());
        assert!(
            s.missing_required(&map(&[("size", Value::Unknown)]))
                .is_empty()
        );
    }

    #[test]
    fn diff_separates_updates_from_replacements() {
        let s = schema();
        let olds = map(&[("size", 1.into()), ("label", "a".into())]);
        assert_eq!(s.diff(&olds, &olds), Diff::default());

        let news = map(&[("size", 1.into()), ("label", "b".into())]);
        let d = s.diff(&olds, &news);
        assert_eq!(d.changed, vec!["label"]);
        assert!(d.replaces.is_empty());

        let news = map(&[("size", 2.into()), ("extra", true.into())]);
        let d = s.diff(&olds, &news);
        assert_eq!(d.changed, vec!["extra", "label", "size"]);
        assert_eq!(d.replaces, vec!["size"]);
    }

    #[test]
    fn missing_equals_null_and_unknown_is_a_change() {
        let s = schema();
        let olds = map(&[("label", Value::Null)]);
        assert!(s.diff(&olds, &map(&[])).changed.is_empty());
        let d = s.diff(
            &map(&[("size", 1.into())]),
            &map(&[("size", Value::Unknown)]),
        );
        assert_eq!(d.replaces, vec!["size"]);
    }
}

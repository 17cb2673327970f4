//! Schemas: what a resource type (or a function, or the configuration) takes and produces, with
//! a type for every property, and the checks and diffs that follow from them alone.
//!
//! Build them by hand with the builders here, or derive them from Rust types (see
//! [`ResourceSchema::derive`]).

mod derive;
mod types;
mod validate;

pub(crate) use derive::SECRET as SECRET_EXTENSION;
pub use derive::properties_of;
pub use types::{ObjectType, Type};
pub(crate) use validate::{normalize_stored, validate_properties};

use super::{CheckFailure, Checked, Diff, TypedResource};
use crate::{PropertyMap, Value};

/// Describes one property: of a resource's inputs or outputs, of a function's arguments, of the
/// provider's configuration, or of a nested object. Build it with [`PropertySchema::new`] and
/// the methods below.
///
/// ```
/// use plinth_sdk::{PropertySchema, Type};
///
/// let port = PropertySchema::new("port")
///     .of(Type::Integer)
///     .describe("The port to listen on.")
///     .default_value(8080);
/// assert_eq!(port.ty, Type::Integer);
/// assert!(!port.required);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct PropertySchema {
    /// The property name.
    pub name: String,
    /// What the property means, for documentation.
    pub description: String,
    /// The property must be given (as an input) or is always set (as an output).
    pub required: bool,
    /// The property is always a secret, such as a generated password. An input given in plain
    /// text is made a secret by the default `check`.
    pub secret: bool,
    /// A change to this input replaces the resource instead of updating it. Top-level
    /// properties only.
    pub replace_on_change: bool,
    /// What values the property takes.
    pub ty: Type,
    /// The value the default `check` stores when the input is not given.
    pub default: Option<Value>,
    /// A write-only input (a password that is sent, never stored): the name of the input, a
    /// version the program changes to send a new value. See [`PropertySchema::write_only`].
    pub write_only_version: Option<String>,
}

impl PropertySchema {
    /// An optional, plain property of any type.
    pub fn new(name: impl Into<String>) -> PropertySchema {
        PropertySchema {
            name: name.into(),
            description: String::new(),
            required: false,
            secret: false,
            replace_on_change: false,
            ty: Type::Any,
            default: None,
            write_only_version: None,
        }
    }

    /// Sets the type.
    pub fn of(mut self, ty: Type) -> PropertySchema {
        self.ty = ty;
        self
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

    /// Marks a top-level input write-only, paired with the input `version`: the host sends its
    /// value to `create`, and to `update` only when `version` changed, and never records, diffs
    /// or shows it; it is always secret. `update` therefore receives it only to set it anew,
    /// `read` and `delete` never, and a value returned under its name is dropped. Declare
    /// `version` as an input too (an integer or a string the program changes whenever it
    /// changes this one).
    ///
    /// ```
    /// use plinth_sdk::{PropertySchema, Type};
    ///
    /// let password = PropertySchema::new("password_wo")
    ///     .of(Type::String)
    ///     .write_only("password_wo_version");
    /// assert!(password.secret);
    /// ```
    pub fn write_only(mut self, version: impl Into<String>) -> PropertySchema {
        self.write_only_version = Some(version.into());
        self.secret = true;
        self
    }

    /// Sets the value used when the input is not given; the property is then not required.
    pub fn default_value(mut self, value: impl Into<Value>) -> PropertySchema {
        self.default = Some(value.into());
        self.required = false;
        self
    }
}

/// Describes one resource type: its token, inputs and outputs.
///
/// ```
/// use plinth_sdk::{PropertySchema, ResourceSchema, Type};
///
/// let schema = ResourceSchema::new("random:RandomInteger")
///     .describe("A random integer in a range.")
///     .input(PropertySchema::new("min").of(Type::Integer).required().replace_on_change())
///     .input(PropertySchema::new("max").of(Type::Integer).required().replace_on_change())
///     .output(PropertySchema::new("result").of(Type::Integer).required());
/// assert_eq!(schema.token, "random:RandomInteger");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceSchema {
    /// The type token, `<package>:<Type>`, e.g. `random:RandomString`.
    pub token: String,
    /// What the resource is, for documentation.
    pub description: String,
    /// The input properties.
    pub inputs: Vec<PropertySchema>,
    /// The output properties.
    pub outputs: Vec<PropertySchema>,
    /// The default `check` accepts inputs the schema does not declare (a dynamic resource whose
    /// inputs are not known in advance). Off by default: an undeclared input is an error.
    pub open: bool,
    /// The type's `diff` never reports a change when the new inputs equal the stored ones,
    /// whatever the id and outputs: true of the default diff, and of a diff that only compares
    /// inputs (by value or by meaning). The host then skips the call for unchanged inputs,
    /// which makes an unchanged resource cheap to plan. Off by default.
    pub equal_inputs_mean_no_change: bool,
}

impl ResourceSchema {
    /// A schema for `token` with no properties yet.
    pub fn new(token: impl Into<String>) -> ResourceSchema {
        ResourceSchema {
            token: token.into(),
            description: String::new(),
            inputs: Vec::new(),
            outputs: Vec::new(),
            open: false,
            equal_inputs_mean_no_change: false,
        }
    }

    /// The schema of the typed resource `R` as `token`: its inputs and outputs derived from
    /// `R::Inputs` and `R::Outputs` (see [`TypedResource`]).
    pub fn derive<R: TypedResource + ?Sized>(token: impl Into<String>) -> ResourceSchema {
        ResourceSchema {
            inputs: properties_of::<R::Inputs>(),
            outputs: derive::output_properties_of::<R::Outputs>(),
            ..ResourceSchema::new(token)
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

    /// Accepts inputs the schema does not declare (see [`ResourceSchema::open`]).
    pub fn open(mut self) -> ResourceSchema {
        self.open = true;
        self
    }

    /// States that `diff` finds no change when the inputs are unchanged (see
    /// [`ResourceSchema::equal_inputs_mean_no_change`]), so that the host need not ask. Do not
    /// state it for a type whose `diff` looks at the id or outputs to report a change.
    pub fn equal_inputs_mean_no_change(mut self) -> ResourceSchema {
        self.equal_inputs_mean_no_change = true;
        self
    }

    /// What the default `check` does: validates `inputs` against the schema and normalizes
    /// them. Missing required inputs, values of the wrong type at any depth (named by their path,
    /// such as `rules[0].port`), inputs the schema does not declare (with the nearest declared
    /// name as a suggestion) and strings outside an enum are failures that say what was
    /// expected and what was given; defaults are applied, whole numbers given as floats become
    /// integers where integers are expected, and inputs the schema marks secret are made
    /// secrets. Values not known yet (during a preview) are accepted as they are.
    ///
    /// A provider that overrides `check` calls this first and adds its own rules:
    ///
    /// ```
    /// use plinth_sdk::{PropertyMap, PropertySchema, ResourceSchema, Type, Value};
    ///
    /// let schema = ResourceSchema::new("kv:Entry")
    ///     .input(PropertySchema::new("key").of(Type::String).required())
    ///     .input(PropertySchema::new("ttl").of(Type::Integer).default_value(60));
    /// let inputs = PropertyMap::from([("kye".to_owned(), Value::from("a"))]);
    /// let checked = schema.validate(inputs);
    /// let reasons: Vec<String> = checked.failures.iter().map(|f| f.to_string()).collect();
    /// assert_eq!(
    ///     reasons,
    ///     [
    ///         "kye: is not an input of kv:Entry; did you mean `key`?",
    ///         "key: a value is required (a string)",
    ///     ]
    /// );
    /// assert_eq!(checked.inputs["ttl"], Value::from(60));
    /// ```
    pub fn validate(&self, inputs: PropertyMap) -> Checked {
        validate::validate(self, inputs)
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
    /// null; an integer equals the same number as a float), and changed keys flagged
    /// `replace_on_change` require a replacement.
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

/// Describes one function the provider's `invoke` accepts.
#[derive(Debug, Clone, PartialEq)]
pub struct FunctionSchema {
    /// The function token, `<package>:<function>`.
    pub token: String,
    /// What the function does, for documentation.
    pub description: String,
    /// The arguments.
    pub inputs: Vec<PropertySchema>,
    /// The type of the result.
    pub output: Type,
}

impl FunctionSchema {
    /// A function `token` with untyped arguments and result.
    pub fn new(token: impl Into<String>) -> FunctionSchema {
        FunctionSchema {
            token: token.into(),
            description: String::new(),
            inputs: Vec::new(),
            output: Type::Any,
        }
    }

    /// Sets the description.
    pub fn describe(mut self, description: impl Into<String>) -> FunctionSchema {
        self.description = description.into();
        self
    }

    /// Adds an argument.
    pub fn input(mut self, property: PropertySchema) -> FunctionSchema {
        self.inputs.push(property);
        self
    }

    /// Sets the result's type.
    pub fn returns(mut self, ty: Type) -> FunctionSchema {
        self.output = ty;
        self
    }
}

impl From<&str> for FunctionSchema {
    fn from(token: &str) -> FunctionSchema {
        FunctionSchema::new(token)
    }
}

impl From<String> for FunctionSchema {
    fn from(token: String) -> FunctionSchema {
        FunctionSchema::new(token)
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
        assert_eq!(p.ty, Type::Any);
        assert_eq!(schema().inputs.len(), 2);
        let p = PropertySchema::new("n").required().default_value(3);
        assert!(!p.required, "a default makes a property optional");
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
    fn a_float_from_old_state_equals_the_same_integer() {
        let s = schema();
        let olds = map(&[("size", Value::Number(8.0))]);
        let news = map(&[("size", Value::Integer(8))]);
        assert_eq!(s.diff(&olds, &news), Diff::default());
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

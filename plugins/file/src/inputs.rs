//! The inputs of the file resources: what each takes, the typed schema that follows, the checks
//! every input gets (the schema's: known key, required, right type; then the normal form of
//! `path` and `mode`) and the readers the resource code uses after `check`.

use plinth_sdk::{
    Checked, PropertyMap, PropertySchema, ProviderError, ResourceSchema, Type, Value,
};

use crate::mode;
use crate::relpath::RelPath;

/// What values an input accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Str,
    /// An object of any values: template variables.
    Object,
}

impl Kind {
    fn ty(self) -> Type {
        match self {
            Kind::Str => Type::String,
            Kind::Object => Type::map(Type::Any),
        }
    }
}

/// Validates a string input and returns its normal form, or why it is refused.
pub(crate) type Normalize = fn(&str) -> Result<String, String>;

/// One input property.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Input {
    pub(crate) name: &'static str,
    pub(crate) description: &'static str,
    pub(crate) kind: Kind,
    pub(crate) required: bool,
    /// A change replaces the resource; otherwise it is updated in place.
    pub(crate) replaces: bool,
    /// Validates a string input and returns its normal form.
    pub(crate) normalize: Option<Normalize>,
}

/// `path`, which every resource has and which replaces it when changed.
pub(crate) const PATH: Input = Input {
    name: "path",
    description: "Where the resource is, relative to the root; `..` and absolute paths are refused.",
    kind: Kind::Str,
    required: true,
    replaces: true,
    normalize: Some(normalize_path),
};

/// `mode`, recorded but not applied (see [`crate::mode`]).
pub(crate) const MODE: Input = Input {
    name: "mode",
    description: "Unix permissions as octal digits (\"0644\"). WASI cannot set permissions: the \
                  mode is recorded as desired state only.",
    kind: Kind::Str,
    required: false,
    replaces: false,
    normalize: Some(mode::normalize),
};

fn normalize_path(path: &str) -> Result<String, String> {
    RelPath::parse(path).map(|p| p.to_string())
}

/// The schema of a resource with these inputs and outputs (name, type, description).
pub(crate) fn schema(
    token: &str,
    description: &str,
    inputs: &[Input],
    outputs: &[(&str, Type, &str)],
) -> ResourceSchema {
    let mut schema = ResourceSchema::new(token).describe(description);
    for input in inputs {
        let mut property = PropertySchema::new(input.name)
            .of(input.kind.ty())
            .describe(input.description);
        if input.required {
            property = property.required();
        }
        if input.replaces {
            property = property.replace_on_change();
        }
        schema = schema.input(property);
    }
    for (name, ty, description) in outputs {
        schema = schema.output(
            PropertySchema::new(*name)
                .of(ty.clone())
                .describe(*description),
        );
    }
    schema
}

/// Checks the inputs against the schema (as the default `check` does), then normalizes the
/// string inputs that say how (`path`, `mode`). Values not known yet (during a preview) pass as
/// they are.
pub(crate) fn check(schema: &ResourceSchema, declared: &[Input], inputs: PropertyMap) -> Checked {
    let mut checked = schema.validate(inputs);
    for input in declared {
        let Some(normalize) = input.normalize else {
            continue;
        };
        let Some(value) = checked.inputs.get_mut(input.name) else {
            continue;
        };
        let Some(text) = value.as_str() else {
            // Unknown, or of the wrong type (which the schema reported).
            continue;
        };
        match normalize(text) {
            Ok(text) => {
                let text = Value::from(text);
                *value = if value.is_secret() {
                    Value::secret(text)
                } else {
                    text
                };
            }
            Err(reason) => checked.fail(input.name, reason),
        }
    }
    checked
}

/// True if `value` or anything inside it is a secret.
pub(crate) fn has_secret(value: &Value) -> bool {
    value.is_secret()
        || value
            .as_array()
            .is_some_and(|items| items.iter().any(has_secret))
        || value
            .as_object()
            .is_some_and(|map| map.values().any(has_secret))
}

/// The checked `path`.
pub(crate) fn path(inputs: &PropertyMap) -> Result<RelPath, ProviderError> {
    let text = inputs
        .get(PATH.name)
        .and_then(Value::as_str)
        .ok_or_else(|| ProviderError::invalid(PATH.name, "a value is required"))?;
    RelPath::parse(text).map_err(|reason| ProviderError::invalid(PATH.name, reason))
}

/// The path a resource's id names: the id of every file resource is its path.
pub(crate) fn id_path(id: &str) -> Result<RelPath, ProviderError> {
    RelPath::parse(id).map_err(|reason| {
        ProviderError::failed(format!("the id `{id}` is not a path in the root: {reason}"))
    })
}

/// The string input `name`, which `check` has validated.
pub(crate) fn text<'a>(inputs: &'a PropertyMap, name: &str) -> Result<&'a str, ProviderError> {
    inputs
        .get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| ProviderError::invalid(name, "must be a string"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONTENT: Input = Input {
        name: "content",
        description: "The text.",
        kind: Kind::Str,
        required: true,
        replaces: false,
        normalize: None,
    };
    const VARS: Input = Input {
        name: "vars",
        description: "Values.",
        kind: Kind::Object,
        required: false,
        replaces: false,
        normalize: None,
    };
    const DECLARED: &[Input] = &[PATH, CONTENT, MODE, VARS];

    fn map(entries: &[(&str, Value)]) -> PropertyMap {
        entries
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect()
    }

    fn reasons(checked: &Checked) -> Vec<String> {
        checked.failures.iter().map(ToString::to_string).collect()
    }

    fn checked(entries: &[(&str, Value)]) -> Checked {
        let schema = schema("file:File", "A file.", DECLARED, &[]);
        check(&schema, DECLARED, map(entries))
    }

    #[test]
    fn normalizes_path_and_mode() {
        let checked = checked(&[
            ("path", "./a//b.txt".into()),
            ("content", "x".into()),
            ("mode", "644".into()),
            ("vars", Value::Null),
        ]);
        assert!(checked.failures.is_empty(), "{:?}", checked.failures);
        assert_eq!(checked.inputs.get("path"), Some(&Value::from("a/b.txt")));
        assert_eq!(checked.inputs.get("mode"), Some(&Value::from("0644")));
        assert!(!checked.inputs.contains_key("vars"));
    }

    #[test]
    fn reports_every_problem() {
        let checked = checked(&[
            ("path", "../x".into()),
            ("mode", 644.into()),
            ("vars", "a=b".into()),
            ("contnet", "red".into()),
        ]);
        assert_eq!(
            reasons(&checked),
            vec![
                "contnet: is not an input of file:File; did you mean `content`?",
                "content: a value is required (a string)",
                "mode: expected a string, got the integer 644",
                r#"vars: expected an object of any values, got the string "a=b""#,
                "path: `../x` contains `..`: a path must stay inside the root",
            ]
        );
    }

    #[test]
    fn unknowns_pass_and_secrets_stay_secret() {
        let checked = checked(&[
            ("path", Value::secret("./k.txt")),
            ("content", Value::Unknown),
        ]);
        assert!(checked.failures.is_empty(), "{:?}", checked.failures);
        assert_eq!(checked.inputs.get("path"), Some(&Value::secret("k.txt")));
        assert_eq!(checked.inputs.get("content"), Some(&Value::Unknown));
        assert!(has_secret(&Value::object([(
            "a",
            Value::Array(vec![Value::secret(1)])
        )])));
        assert!(!has_secret(&Value::object([("a", 1)])));
    }

    #[test]
    fn schema_replaces_only_on_path() {
        let s = schema(
            "file:File",
            "A file.",
            DECLARED,
            &[("sha256", Type::String, "The digest.")],
        );
        let replaced: Vec<&str> = s
            .inputs
            .iter()
            .filter(|p| p.replace_on_change)
            .map(|p| p.name.as_str())
            .collect();
        assert_eq!(replaced, vec!["path"]);
        assert!(s.inputs[0].required && s.inputs[1].required && !s.inputs[2].required);
        assert_eq!(s.outputs[0].name, "sha256");
        assert_eq!(s.inputs[0].ty, Type::String);
        assert_eq!(s.inputs[3].ty, Type::map(Type::Any));
    }
}

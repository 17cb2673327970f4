//! What every random resource shares: `keepers`, every input replacing the resource, and range
//! checks with messages that say what was given.
//!
//! Every input replaces the resource when it changes, so the generated value stays stable until
//! the user asks for a new one (typically by changing `keepers`).

use std::collections::BTreeMap;
use std::sync::OnceLock;

use plinth_sdk::{CheckFailure, ResourceSchema, Value};

/// Arbitrary values that, when changed, generate a new value.
pub(crate) type Keepers = BTreeMap<String, Value>;

/// The schema `make` derives, derived once: deriving walks the structs' JSON Schemas, and the SDK
/// asks for every schema again after each `configure`.
pub(crate) fn schema_once(
    cell: &'static OnceLock<ResourceSchema>,
    make: impl FnOnce() -> ResourceSchema,
) -> ResourceSchema {
    cell.get_or_init(make).clone()
}

/// `schema` with every input replacing the resource when it changes. The diff stays the
/// schema's, so unchanged inputs mean no change, which the schema states.
pub(crate) fn every_input_replaces(mut schema: ResourceSchema) -> ResourceSchema {
    for input in &mut schema.inputs {
        input.replace_on_change = true;
    }
    schema.equal_inputs_mean_no_change()
}

/// A failure of `property` unless `value` is in `min..=max`.
pub(crate) fn in_range(property: &str, value: i64, min: i64, max: i64) -> Option<CheckFailure> {
    (!(min..=max).contains(&value)).then(|| {
        CheckFailure::new(
            property,
            format!("must be from {min} to {max}, not {value}"),
        )
    })
}

/// `true`, for serde defaults.
pub(crate) fn yes() -> bool {
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use plinth_sdk::PropertySchema;

    #[test]
    fn every_input_replaces_the_resource() {
        let schema = every_input_replaces(
            ResourceSchema::new("t:T")
                .input(PropertySchema::new("a"))
                .output(PropertySchema::new("b")),
        );
        assert!(schema.inputs[0].replace_on_change);
        assert!(!schema.outputs[0].replace_on_change);
        assert!(schema.equal_inputs_mean_no_change);
    }

    #[test]
    fn ranges_say_what_was_given() {
        assert_eq!(in_range("n", 3, 1, 5), None);
        assert_eq!(
            in_range("n", 0, 1, 5).map(|f| f.to_string()),
            Some("n: must be from 1 to 5, not 0".to_owned())
        );
    }
}

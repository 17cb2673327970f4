//! What every random resource returns: its inputs plus `result`.

use plinth_sdk::{Created, PropertyMap, Value};

/// The plan during a preview: the value is generated only when the resource is created.
pub(crate) fn planned(mut inputs: PropertyMap) -> Created {
    inputs.insert("result".to_owned(), Value::Unknown);
    Created {
        id: String::new(),
        outputs: inputs,
    }
}

/// The created resource: `id`, and the inputs plus `result`.
pub(crate) fn created(id: String, mut inputs: PropertyMap, result: Value) -> Created {
    inputs.insert("result".to_owned(), result);
    Created {
        id,
        outputs: inputs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_are_the_inputs_plus_result() {
        let inputs = PropertyMap::from([("length".to_owned(), Value::from(4))]);
        let plan = planned(inputs.clone());
        assert_eq!(plan.outputs.get("result"), Some(&Value::Unknown));
        let done = created("id".into(), inputs, "abcd".into());
        assert_eq!(done.id, "id");
        assert_eq!(done.outputs.len(), 2);
    }
}

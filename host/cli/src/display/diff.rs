//! A step's property-level diff: each property that a step adds, removes or changes, by its
//! path, with old and new values. Derived from the step's old and new inputs, so `--diff` and
//! `--json` show the same changes. Secrets are compared but never opened: a changed secret is
//! one change of `[secret]` to `[secret]`.

use std::collections::BTreeSet;

use plinth_engine::events::{StepInfo, StepOp};
use plinth_engine::value::{PropertyMap, Value};
use serde::Serialize;

/// What happens to one property.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ChangeKind {
    Add,
    Delete,
    Update,
}

/// One property that changes, at `path` (`a.b[0]`; keys are the program's, unescaped).
#[derive(Debug, Clone, PartialEq)]
pub struct PropertyChange {
    pub path: String,
    pub kind: ChangeKind,
    pub old: Option<Value>,
    pub new: Option<Value>,
    /// The provider said a change of this (top-level) property forces a replacement.
    pub replaces: bool,
}

/// The properties `step` changes: every input a create sets, every input a delete removes, the
/// differences of an update, a replacement or a drift; nothing for a step that changes nothing.
pub fn step_diff(step: &StepInfo) -> Vec<PropertyChange> {
    let empty = PropertyMap::new();
    let (old, new) = match step.op {
        StepOp::Same => return Vec::new(),
        StepOp::Create | StepOp::Import => (&empty, step.new_inputs.as_ref().unwrap_or(&empty)),
        StepOp::Delete | StepOp::DeleteReplaced | StepOp::Gone => {
            (step.old_inputs.as_ref().unwrap_or(&empty), &empty)
        }
        StepOp::Update | StepOp::Replace | StepOp::Drift => (
            step.old_inputs.as_ref().unwrap_or(&empty),
            step.new_inputs.as_ref().unwrap_or(&empty),
        ),
    };
    let mut changes = Vec::new();
    let keys: BTreeSet<&String> = old.keys().chain(new.keys()).collect();
    for key in keys {
        let before = changes.len();
        compare(key.clone(), old.get(key), new.get(key), &mut changes);
        let replaces = step.replaces.contains(key);
        changes[before..]
            .iter_mut()
            .for_each(|c| c.replaces = replaces);
    }
    changes
}

/// Appends the differences of `old` and `new` at `path`, looking into objects and arrays on
/// both sides (not into secrets).
fn compare(path: String, old: Option<&Value>, new: Option<&Value>, out: &mut Vec<PropertyChange>) {
    let change = |kind| PropertyChange {
        path: path.clone(),
        kind,
        old: old.cloned(),
        new: new.cloned(),
        replaces: false,
    };
    match (old, new) {
        (None, None) => {}
        (None, Some(_)) => out.push(change(ChangeKind::Add)),
        (Some(_), None) => out.push(change(ChangeKind::Delete)),
        (Some(o), Some(n)) if o == n => {}
        (Some(Value::Object(o)), Some(Value::Object(n))) => {
            let keys: BTreeSet<&String> = o.keys().chain(n.keys()).collect();
            for key in keys {
                compare(format!("{path}.{key}"), o.get(key), n.get(key), out);
            }
        }
        (Some(Value::Array(o)), Some(Value::Array(n))) => {
            for i in 0..o.len().max(n.len()) {
                compare(format!("{path}[{i}]"), o.get(i), n.get(i), out);
            }
        }
        (Some(_), Some(_)) => out.push(change(ChangeKind::Update)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use plinth_engine::urn::Urn;

    fn step(op: StepOp, old: PropertyMap, new: PropertyMap) -> StepInfo {
        StepInfo {
            op,
            urn: Urn::new("dev", "p", None, "file:File", "notes"),
            parent: None,
            custom: true,
            old_inputs: Some(old),
            new_inputs: Some(new),
            changed: vec![],
            replaces: vec!["path".into()],
            write_only: Vec::new(),
        }
    }

    #[test]
    fn nested_changes_are_listed_by_path_and_replacements_marked() {
        let secret = |s: &str| Value::Secret(Box::new(Value::from(s)));
        let old: PropertyMap = [
            ("path".to_owned(), Value::from("a")),
            (
                "tags".to_owned(),
                Value::Object([("env".to_owned(), Value::from("dev"))].into()),
            ),
            (
                "list".to_owned(),
                Value::Array(vec![Value::from(1i64), Value::from(2i64)]),
            ),
            ("token".to_owned(), secret("old")),
            ("same".to_owned(), Value::from(true)),
        ]
        .into();
        let new: PropertyMap = [
            ("path".to_owned(), Value::from("b")),
            (
                "tags".to_owned(),
                Value::Object([("env".to_owned(), Value::from("prod"))].into()),
            ),
            ("list".to_owned(), Value::Array(vec![Value::from(1i64)])),
            ("token".to_owned(), secret("new")),
            ("same".to_owned(), Value::from(true)),
        ]
        .into();
        let changes = step_diff(&step(StepOp::Update, old, new));
        let shown: Vec<(&str, ChangeKind, bool)> = (changes.iter())
            .map(|c| (c.path.as_str(), c.kind, c.replaces))
            .collect();
        assert_eq!(
            shown,
            [
                ("list[1]", ChangeKind::Delete, false),
                ("path", ChangeKind::Update, true),
                ("tags.env", ChangeKind::Update, false),
                ("token", ChangeKind::Update, false),
            ]
        );
    }

    #[test]
    fn a_create_adds_every_input_and_a_delete_removes_them() {
        let inputs: PropertyMap = [("path".to_owned(), Value::from("a"))].into();
        let create = step_diff(&step(StepOp::Create, PropertyMap::new(), inputs.clone()));
        assert_eq!(create.len(), 1);
        assert_eq!(create[0].kind, ChangeKind::Add);
        let delete = step_diff(&step(StepOp::Delete, inputs.clone(), inputs.clone()));
        assert_eq!(delete[0].kind, ChangeKind::Delete);
        assert!(step_diff(&step(StepOp::Same, inputs.clone(), inputs)).is_empty());
    }
}

//! The scheduler's graph: a node per registration, the slot its handle fills once settled,
//! and what each node does once everything it refers to is known.

use std::sync::Arc;

use foldhash::{HashSet, HashSetExt};

use super::step::result::{StepError, StepResult};
use crate::program::ProgramError;
use crate::urn::Urn;
use crate::value::{PropertyMap, Value};

/// What a settled registration makes known.
#[derive(Debug, Clone)]
pub(super) struct Resolved {
    /// A resource's outputs object, or an apply's result.
    pub(super) value: ResolvedValue,
    pub(super) id: Value,
    pub(super) urn: Option<Urn>,
    /// The recorded resources this value derives from: dependents depend on these.
    pub(super) dependencies: Vec<Urn>,
    /// The resource's step replaced it (create-before-delete or delete-before-replace).
    pub(super) replaced: bool,
    /// The resource does not exist: not targeted, it was not created.
    pub(super) absent: bool,
}

#[derive(Debug, Clone)]
pub(super) enum ResolvedValue {
    Value(Value),
    /// The outputs object base resource `i` recorded, unchanged: read from the base, which the
    /// deployment holds anyway, rather than copied for every resource.
    BaseOutputs(usize),
}

pub(super) enum Slot {
    Waiting,
    Resolved(Arc<Resolved>),
    /// Failed or skipped; dependents are skipped.
    Failed,
}

/// What a node does once everything it refers to is resolved.
pub(super) enum Work {
    Resource(crate::program::RegisterRequest),
    Read {
        ty: String,
        name: String,
        id: String,
        inputs: PropertyMap,
        parent: Option<u64>,
        provider: Option<u64>,
    },
    Apply(Vec<Value>),
    /// An apply result that itself refers to other registrations.
    Value {
        value: Value,
        secret: bool,
        dependencies: Vec<Urn>,
    },
    Outputs {
        target: Option<u64>,
        outputs: PropertyMap,
    },
}

pub(super) struct Node {
    pub(super) handle: Option<u64>,
    /// Boxed: a node outlives its work, and the scheduler keeps a node per registration.
    pub(super) work: Option<Box<Work>>,
    pub(super) missing: usize,
}

pub(super) enum Completion {
    ProgramDone(Result<(), ProgramError>),
    Resumed {
        node: usize,
        result: Result<Value, ProgramError>,
        secret: bool,
        dependencies: Vec<Urn>,
    },
    Step {
        node: usize,
        urn: Urn,
        record: bool,
        result: Result<StepResult, StepError>,
    },
    ComponentOutputs(Result<(), String>),
}

impl Completion {
    /// Whether this ends a call into the program (its body or a resume).
    pub(super) fn is_program_call(&self) -> bool {
        matches!(
            self,
            Completion::ProgramDone(_) | Completion::Resumed { .. }
        )
    }
}

/// An apply closure to resume, with what its result inherits from its inputs.
pub(super) struct ResumeRequest {
    pub(super) node: usize,
    pub(super) apply: u64,
    pub(super) inputs: Vec<Value>,
    pub(super) secret: bool,
    pub(super) dependencies: Vec<Urn>,
}

pub(super) fn resolved_value(value: Value, dependencies: Vec<Urn>) -> Resolved {
    Resolved {
        value: ResolvedValue::Value(value),
        id: Value::Null,
        urn: None,
        dependencies,
        replaced: false,
        absent: false,
    }
}

/// What an untargeted resource that was not created makes known: nothing.
pub(super) fn absent(urn: Urn) -> Resolved {
    Resolved {
        value: ResolvedValue::Value(Value::Unknown),
        id: Value::Unknown,
        urn: Some(urn),
        dependencies: Vec::new(),
        replaced: false,
        absent: true,
    }
}

pub(super) fn collect_handles(value: &Value, out: &mut Vec<u64>) {
    value.for_each_output(&mut |r| out.push(r.handle));
}

pub(super) fn dedup_in_order(urns: &mut Vec<Urn>) {
    let mut seen = HashSet::new();
    urns.retain(|u| seen.insert(u.clone()));
}

/// Closures see plaintext; secrecy is restored on their result.
pub(super) fn reveal(value: Value) -> Value {
    match value {
        Value::Secret(inner) => reveal(*inner),
        Value::Array(items) => Value::Array(items.into_iter().map(reveal).collect()),
        Value::Object(map) => Value::Object(map.into_iter().map(|(k, v)| (k, reveal(v))).collect()),
        other => other,
    }
}

pub(super) fn make_secret(value: Value) -> Value {
    match value {
        Value::Secret(_) | Value::Unknown => value,
        other => Value::Secret(Box::new(other)),
    }
}

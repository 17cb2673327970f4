//! Events the engine emits while it works, for displays and event logs. Secret values appear
//! only as `Value::Secret`, which every display renders as `[secret]`.

use std::time::Duration;

use tokio::sync::mpsc;

use crate::policy::{PackRun, Violation};
use crate::urn::Urn;
use crate::value::PropertyMap;

/// What a step does to a resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StepOp {
    Same,
    Create,
    Update,
    Replace,
    Delete,
    /// Delete of a resource replaced earlier in the update (create-before-delete).
    DeleteReplaced,
    /// An existing resource adopted into the stack (the `import` option).
    Import,
    /// `refresh` found the resource changed out of band; the state takes what exists.
    Drift,
    /// `refresh` found the resource gone; it leaves the state.
    Gone,
}

impl StepOp {
    pub fn is_change(self) -> bool {
        self != StepOp::Same
    }
}

/// A planned or performed step, as shown to the user.
#[derive(Debug, Clone)]
pub struct StepInfo {
    pub op: StepOp,
    pub urn: Urn,
    /// The parent resource: displays list children under it.
    pub parent: Option<Urn>,
    pub custom: bool,
    /// Old and new inputs of a step that changes something (`None` for `Same`).
    pub old_inputs: Option<PropertyMap>,
    pub new_inputs: Option<PropertyMap>,
    /// Properties the provider reported as changed, and the subset forcing replacement.
    pub changed: Vec<String>,
    pub replaces: Vec<String>,
    /// The write-only inputs the step sends to the provider: shown by name, never by value
    /// (their values are in neither `old_inputs` nor `new_inputs`).
    pub write_only: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    Debug,
    Info,
    Warning,
    Error,
}

/// Counts of steps by kind for the summary.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ChangeSummary {
    pub same: usize,
    pub create: usize,
    pub update: usize,
    pub replace: usize,
    pub delete: usize,
    #[serde(default)]
    pub import: usize,
}

impl ChangeSummary {
    pub fn record(&mut self, op: StepOp) {
        match op {
            StepOp::Same => self.same += 1,
            StepOp::Create => self.create += 1,
            StepOp::Update => self.update += 1,
            StepOp::Replace => self.replace += 1,
            StepOp::Delete | StepOp::Gone => self.delete += 1,
            StepOp::Drift => self.update += 1,
            StepOp::Import => self.import += 1,
            StepOp::DeleteReplaced => {}
        }
    }

    /// Number of resources that change.
    pub fn changes(&self) -> usize {
        self.create + self.update + self.replace + self.delete + self.import
    }
}

#[derive(Debug, Clone)]
pub enum Event {
    /// A step is about to run (or, in preview, is planned).
    StepStarted(StepInfo),
    /// A step finished; `outputs` are a created resource's outputs (`None` for other steps).
    StepDone {
        step: StepInfo,
        outputs: Option<PropertyMap>,
        duration: Duration,
    },
    StepFailed {
        step: StepInfo,
        error: String,
    },
    Diagnostic {
        urn: Option<Urn>,
        severity: Severity,
        message: String,
    },
    /// The outputs a component registered (`register_outputs`), beside those it had.
    ComponentOutputs {
        urn: Urn,
        old: PropertyMap,
        new: PropertyMap,
    },
    /// The stack's outputs (its root's) before and after the run; in preview, what they would
    /// be.
    Outputs {
        old: PropertyMap,
        new: PropertyMap,
    },
    Summary {
        changes: ChangeSummary,
        duration: Duration,
        preview: bool,
        failed: bool,
    },
    /// A policy's objection to a resource or to the stack (not for disabled policies).
    PolicyViolation(Violation),
    /// The packs that ran, once the stack's analysis is done (only when packs ran).
    PolicySummary(Vec<PackRun>),
    /// Cancellation was requested: no new steps start.
    Cancelled,
}

/// Where events go. Cloning is cheap; a dropped receiver is fine.
#[derive(Debug, Clone)]
pub struct EventSink(Option<mpsc::UnboundedSender<Event>>);

impl EventSink {
    pub fn new() -> (EventSink, mpsc::UnboundedReceiver<Event>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (EventSink(Some(tx)), rx)
    }

    /// A sink that discards events.
    pub fn discard() -> EventSink {
        EventSink(None)
    }

    pub fn emit(&self, event: Event) {
        if let Some(tx) = &self.0 {
            let _ = tx.send(event);
        }
    }

    pub fn diagnostic(&self, urn: Option<&Urn>, severity: Severity, message: impl Into<String>) {
        self.emit(Event::Diagnostic {
            urn: urn.cloned(),
            severity,
            message: message.into(),
        });
    }
}

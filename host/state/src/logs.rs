//! The events of each update, kept for `plinth logs`: what ran, how long it took, what failed,
//! what providers and programs said. Values are never logged, so no secret can leak into a log.

use std::time::Instant;

use plinth_engine::events::{ChangeSummary, Event, Severity, StepInfo};
use plinth_engine::policy::{EnforcementLevel, PackRun};
use plinth_engine::shown::escape_controls;
use serde::{Deserialize, Serialize};

use crate::history::HistoryEntry;

/// One event of an update, as logged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogEntry {
    /// Its place in the update's events, from 1.
    pub seq: u64,
    /// Milliseconds since the update's events began.
    pub at_ms: u64,
    #[serde(flatten)]
    pub event: LoggedEvent,
}

/// What happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
pub enum LoggedEvent {
    StepStarted {
        op: String,
        urn: String,
    },
    StepDone {
        op: String,
        urn: String,
        duration_ms: u64,
    },
    StepFailed {
        op: String,
        urn: String,
        error: String,
    },
    Diagnostic {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        urn: Option<String>,
        severity: String,
        message: String,
    },
    Summary {
        changes: ChangeSummary,
        duration_ms: u64,
        failed: bool,
    },
    /// A policy's objection (its text masked by the host before it got here).
    PolicyViolation {
        pack: String,
        policy: String,
        level: EnforcementLevel,
        /// The resource at fault; none for the stack as a whole.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        urn: Option<String>,
        message: String,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        property: String,
    },
    /// The packs that ran and what they found.
    PolicySummary {
        packs: Vec<PackRun>,
    },
    Cancelled,
}

impl LogEntry {
    /// The event as `plinth logs` prints it: after its time since the update's start, on one
    /// line (what a guest or the log file supplied cannot start another).
    pub fn line(&self) -> String {
        let entry = self;
        let at = format!("+{}.{:03}s", entry.at_ms / 1000, entry.at_ms % 1000);
        let what = match &entry.event {
            LoggedEvent::StepStarted { op, urn } => format!("{op} {urn} started"),
            LoggedEvent::StepDone {
                op,
                urn,
                duration_ms,
            } => format!("{op} {urn} done in {duration_ms}ms"),
            LoggedEvent::StepFailed { op, urn, error } => format!("{op} {urn} failed: {error}"),
            LoggedEvent::Diagnostic {
                urn,
                severity,
                message,
            } => match urn {
                Some(urn) => format!("{severity}: {urn}: {message}"),
                None => format!("{severity}: {message}"),
            },
            LoggedEvent::Summary {
                changes,
                duration_ms,
                failed,
            } => format!(
                "{} after {duration_ms}ms: {} created, {} updated, {} replaced, {} deleted, {} unchanged",
                if *failed { "failed" } else { "done" },
                changes.create,
                changes.update,
                changes.replace,
                changes.delete,
                changes.same
            ),
            LoggedEvent::PolicyViolation {
                pack,
                policy,
                level,
                urn,
                message,
                property,
            } => {
                let on = urn.as_ref().map_or(String::new(), |urn| format!("{urn}: "));
                let at = if property.is_empty() {
                    String::new()
                } else {
                    format!(" (property `{property}`)")
                };
                format!("policy violation: {on}[{level}] policy `{pack}/{policy}`: {message}{at}")
            }
            LoggedEvent::PolicySummary { packs } => {
                let packs: Vec<String> = (packs.iter())
                    .map(|p| {
                        format!(
                            "{} {} (sha256 {}): {} mandatory, {} advisory",
                            p.name, p.version, p.digest, p.mandatory, p.advisory
                        )
                    })
                    .collect();
                format!("policy packs ran: {}", packs.join("; "))
            }
            LoggedEvent::Cancelled => "cancelled: no new steps started".to_owned(),
        };
        // One line per event: what a guest or the log file supplied cannot start another.
        format!("{at:>10}  {}", escape_controls(&what))
    }
}

impl LoggedEvent {
    /// The event as logged; `None` for what a log does not keep (the outputs: values).
    pub fn of(event: &Event) -> Option<LoggedEvent> {
        let op = |step: &StepInfo| {
            serde_json::to_value(step.op)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default()
        };
        let millis = |d: std::time::Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        Some(match event {
            Event::StepStarted(step) => LoggedEvent::StepStarted {
                op: op(step),
                urn: step.urn.to_string(),
            },
            Event::StepDone { step, duration, .. } => LoggedEvent::StepDone {
                op: op(step),
                urn: step.urn.to_string(),
                duration_ms: millis(*duration),
            },
            Event::StepFailed { step, error } => LoggedEvent::StepFailed {
                op: op(step),
                urn: step.urn.to_string(),
                error: error.clone(),
            },
            Event::Diagnostic {
                urn,
                severity,
                message,
            } => LoggedEvent::Diagnostic {
                urn: urn.as_ref().map(ToString::to_string),
                severity: match severity {
                    Severity::Debug => "debug",
                    Severity::Info => "info",
                    Severity::Warning => "warning",
                    Severity::Error => "error",
                }
                .to_owned(),
                message: message.clone(),
            },
            Event::Summary {
                changes,
                duration,
                failed,
                ..
            } => LoggedEvent::Summary {
                changes: changes.clone(),
                duration_ms: millis(*duration),
                failed: *failed,
            },
            Event::PolicyViolation(v) => LoggedEvent::PolicyViolation {
                pack: v.pack.clone(),
                policy: v.policy.clone(),
                level: v.level,
                urn: v.urn.as_ref().map(ToString::to_string),
                message: v.message.clone(),
                property: v.property.clone(),
            },
            Event::PolicySummary(packs) => LoggedEvent::PolicySummary {
                packs: packs.clone(),
            },
            Event::Cancelled => LoggedEvent::Cancelled,
            Event::Outputs { .. } | Event::ComponentOutputs { .. } => return None,
        })
    }
}

/// An update's events, with its history entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UpdateLog {
    /// The update's number, as history counts them (the first being 1).
    pub number: u64,
    pub entry: HistoryEntry,
    pub events: Vec<LogEntry>,
}

/// Numbers logged events as they come.
#[derive(Debug)]
pub struct EventNumbering {
    next: u64,
    began: Instant,
}

impl Default for EventNumbering {
    fn default() -> Self {
        EventNumbering {
            next: 1,
            began: Instant::now(),
        }
    }
}

impl EventNumbering {
    /// The event as logged, numbered; `None` for an event logs do not keep.
    pub fn entry(&mut self, event: &Event) -> Option<LogEntry> {
        let event = LoggedEvent::of(event)?;
        let seq = self.next;
        self.next += 1;
        let at_ms = u64::try_from(self.began.elapsed().as_millis()).unwrap_or(u64::MAX);
        Some(LogEntry { seq, at_ms, event })
    }
}

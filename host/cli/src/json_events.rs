//! `--json`: a run's events as JSON, one object per line on stdout, for machines. Each line is
//! an [`Line`]: the schema version, its place in the stream, the time, and an event tagged by
//! `type` (docs/events.schema.json describes them all). Derived from the engine's events, never
//! from the human display. Values are data (serde escapes what a guest wrote); secrets are the
//! string `"[secret]"`, values not known yet `"[unknown]"`.
//!
//! Nothing else may reach stdout, not even from a child process (a guest build's compiler): so
//! the stream takes the real stdout for itself and points the process's stdout at stderr.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::fd::{AsFd, FromRawFd, OwnedFd};
use std::sync::Mutex;

use anyhow::{Context, Result};
use plinth_engine::events::{ChangeSummary, Event, Severity, StepInfo, StepOp};
use plinth_engine::policy::{EnforcementLevel, PackRun};
use plinth_engine::urn::Urn;
use plinth_engine::value::{PropertyMap, Value};
use serde::Serialize;
use serde_json::Value as Json;
use tokio::sync::mpsc;

use crate::display::diff::{ChangeKind, step_diff};

/// The version of the lines' shape: raised when a field changes meaning or goes away (new
/// event types and new fields do not raise it).
pub const SCHEMA_VERSION: u32 = 1;

/// What a consumer reads on one line.
#[derive(Serialize)]
struct Line<'a> {
    schema_version: u32,
    /// The line's place in the stream, from 1.
    sequence: u64,
    /// When it was written (RFC 3339, UTC).
    timestamp: String,
    #[serde(flatten)]
    event: &'a JsonEvent,
}

/// One event of the stream.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum JsonEvent {
    /// A phase of the command begins: a preview, an update, a refresh or a destroy.
    PhaseStarted {
        command: String,
        project: String,
        stack: String,
        kind: String,
        preview: bool,
    },
    StepStarted {
        #[serde(flatten)]
        step: JsonStep,
    },
    StepEnded {
        #[serde(flatten)]
        step: JsonStep,
        /// `null` in a preview: nothing ran.
        duration_seconds: Option<f64>,
        /// A created resource's outputs.
        outputs: Option<Json>,
    },
    StepFailed {
        #[serde(flatten)]
        step: JsonStep,
        error: String,
    },
    Diagnostic {
        urn: Option<String>,
        severity: &'static str,
        message: String,
    },
    ComponentOutputs {
        urn: String,
        old: Json,
        new: Json,
    },
    /// The stack's outputs before and after (in a preview, what they would be).
    Outputs {
        old: Json,
        new: Json,
    },
    /// The end of a phase.
    Summary {
        changes: ChangeSummary,
        duration_seconds: f64,
        preview: bool,
        failed: bool,
    },
    /// A policy's objection to a resource (`urn`) or to the stack (`urn` null).
    PolicyViolation {
        pack: String,
        policy: String,
        level: EnforcementLevel,
        urn: Option<String>,
        message: String,
        /// The offending property; `null` for the whole resource.
        property: Option<String>,
    },
    /// The policy packs that ran, their digests and their violations by level.
    PolicySummary {
        packs: Vec<PackRun>,
    },
    Cancelled,
    /// The command failed: the last line of a failed run.
    Error {
        message: String,
    },
}

/// A step as the stream shows it.
#[derive(Serialize)]
pub struct JsonStep {
    urn: String,
    resource_type: String,
    name: String,
    op: StepOp,
    parent: Option<String>,
    /// Properties the provider reported changed, and those forcing a replacement.
    changed: Vec<String>,
    replaces: Vec<String>,
    /// Every property the step changes, old and new.
    diff: Vec<JsonChange>,
    /// The write-only inputs the step sends, by name (their values are never shown).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    write_only: Vec<String>,
}

#[derive(Serialize)]
struct JsonChange {
    path: String,
    kind: ChangeKind,
    old: Option<Json>,
    new: Option<Json>,
    replaces: bool,
}

impl JsonStep {
    fn of(step: &StepInfo) -> JsonStep {
        let diff = (step_diff(step).into_iter())
            .map(|c| JsonChange {
                path: c.path,
                kind: c.kind,
                old: c.old.as_ref().map(masked),
                new: c.new.as_ref().map(masked),
                replaces: c.replaces,
            })
            .collect();
        JsonStep {
            urn: step.urn.to_string(),
            resource_type: step.urn.ty().to_owned(),
            name: step.urn.name().to_owned(),
            op: step.op,
            parent: step.parent.as_ref().map(Urn::to_string),
            changed: step.changed.clone(),
            replaces: step.replaces.clone(),
            diff,
            write_only: step.write_only.clone(),
        }
    }
}

/// `value` as JSON with every secret `"[secret]"` and every value not known `"[unknown]"`.
pub fn masked(value: &Value) -> Json {
    match value {
        Value::Null => Json::Null,
        Value::Bool(b) => Json::Bool(*b),
        Value::Integer(n) => Json::from(*n),
        // A float JSON cannot hold (NaN, infinities) is `null`.
        Value::Number(n) => serde_json::Number::from_f64(*n).map_or(Json::Null, Json::Number),
        Value::String(s) => Json::String(s.clone()),
        Value::Array(items) => Json::Array(items.iter().map(masked).collect()),
        Value::Object(map) => masked_map(map),
        Value::Secret(_) => Json::String("[secret]".into()),
        Value::Unknown | Value::Output(_) => Json::String("[unknown]".into()),
    }
}

fn masked_map(map: &PropertyMap) -> Json {
    Json::Object(map.iter().map(|(k, v)| (k.clone(), masked(v))).collect())
}

impl JsonEvent {
    /// The stream's form of an engine event.
    pub fn of(event: &Event) -> JsonEvent {
        match event {
            Event::StepStarted(step) => JsonEvent::StepStarted {
                step: JsonStep::of(step),
            },
            Event::StepDone {
                step,
                outputs,
                duration,
            } => JsonEvent::StepEnded {
                step: JsonStep::of(step),
                duration_seconds: Some(duration.as_secs_f64()),
                outputs: outputs.as_ref().map(masked_map),
            },
            Event::StepFailed { step, error } => JsonEvent::StepFailed {
                step: JsonStep::of(step),
                error: error.clone(),
            },
            Event::Diagnostic {
                urn,
                severity,
                message,
            } => JsonEvent::Diagnostic {
                urn: urn.as_ref().map(Urn::to_string),
                severity: match severity {
                    Severity::Debug => "debug",
                    Severity::Info => "info",
                    Severity::Warning => "warning",
                    Severity::Error => "error",
                },
                message: message.clone(),
            },
            Event::ComponentOutputs { urn, old, new } => JsonEvent::ComponentOutputs {
                urn: urn.to_string(),
                old: masked_map(old),
                new: masked_map(new),
            },
            Event::Outputs { old, new } => JsonEvent::Outputs {
                old: masked_map(old),
                new: masked_map(new),
            },
            Event::Summary {
                changes,
                duration,
                preview,
                failed,
            } => JsonEvent::Summary {
                changes: changes.clone(),
                duration_seconds: duration.as_secs_f64(),
                preview: *preview,
                failed: *failed,
            },
            Event::PolicyViolation(v) => JsonEvent::PolicyViolation {
                pack: v.pack.clone(),
                policy: v.policy.clone(),
                level: v.level,
                urn: v.urn.as_ref().map(Urn::to_string),
                message: v.message.clone(),
                property: (!v.property.is_empty()).then(|| v.property.clone()),
            },
            Event::PolicySummary(packs) => JsonEvent::PolicySummary {
                packs: packs.clone(),
            },
            Event::Cancelled => JsonEvent::Cancelled,
        }
    }
}

/// Events [`JsonStream::render`] takes from the channel at once: their lines go out in one
/// write (a write per line was two system calls per resource).
const BATCH: usize = 256;

/// Where the lines go: the process's real stdout, taken for the stream alone.
pub struct JsonStream {
    out: Mutex<(BufWriter<File>, u64)>,
}

impl JsonStream {
    /// Takes stdout for the stream; from now on the process's stdout (`println!`, children that
    /// inherit it) writes to stderr.
    pub fn take_stdout() -> Result<JsonStream> {
        let stdout = std::io::stdout();
        let mut locked = stdout.lock();
        locked.flush().context("cannot flush stdout")?;
        let ours: OwnedFd = locked
            .as_fd()
            .try_clone_to_owned()
            .context("cannot duplicate stdout for --json")?;
        // SAFETY: dup2 of two descriptors this process holds open (stdout and stderr), while
        // stdout is locked, so no Rust writer is writing to it meanwhile.
        if unsafe { libc::dup2(libc::STDERR_FILENO, libc::STDOUT_FILENO) } < 0 {
            return Err(std::io::Error::last_os_error())
                .context("cannot point stdout at stderr for --json");
        }
        drop(locked);
        // SAFETY: `ours` is an open descriptor this function owns; the File takes it over.
        let file = unsafe { File::from_raw_fd(std::os::fd::IntoRawFd::into_raw_fd(ours)) };
        Ok(JsonStream {
            out: Mutex::new((BufWriter::new(file), 0)),
        })
    }

    /// Writes one line. A consumer that went away ends nothing: the run goes on.
    pub fn write(&self, event: &JsonEvent) {
        self.write_all(std::slice::from_ref(event));
    }

    /// Writes a line for each of `events`, then flushes them: a consumer reads them as soon
    /// as they are written.
    fn write_all(&self, events: &[JsonEvent]) {
        let Ok(mut out) = self.out.lock() else {
            return;
        };
        let (out, sequence) = &mut *out;
        for event in events {
            *sequence += 1;
            let line = Line {
                schema_version: SCHEMA_VERSION,
                sequence: *sequence,
                timestamp: jiff::Timestamp::now().to_string(),
                event,
            };
            if let Ok(mut text) = serde_json::to_string(&line) {
                text.push('\n');
                let _ = out.write_all(text.as_bytes());
            }
        }
        let _ = out.flush();
    }

    /// Writes the events of one phase until its summary (or until the engine is done). A
    /// preview's steps have no duration. Returns the step failures, as the engine words them in
    /// its errors, as the human display does.
    pub async fn render(
        &self,
        mut events: mpsc::UnboundedReceiver<Event>,
        preview: bool,
    ) -> Vec<String> {
        let mut failures = Vec::new();
        let mut batch = Vec::with_capacity(BATCH);
        let mut lines = Vec::with_capacity(BATCH);
        while events.recv_many(&mut batch, BATCH).await > 0 {
            let mut summary = false;
            for event in batch.drain(..) {
                let mut shown = JsonEvent::of(&event);
                match (&event, &mut shown) {
                    (
                        _,
                        JsonEvent::StepEnded {
                            duration_seconds, ..
                        },
                    ) if preview => *duration_seconds = None,
                    (Event::StepFailed { step, error }, _) => {
                        failures.push(format!("{}: {error}", step.urn));
                        failures.push(error.clone());
                    }
                    _ => {}
                }
                lines.push(shown);
                summary = matches!(event, Event::Summary { .. });
                if summary {
                    break;
                }
            }
            self.write_all(&lines);
            lines.clear();
            if summary {
                break;
            }
        }
        failures
    }
}

//! Renders engine events for a person: the plan, progress while steps run, outputs and a
//! summary. Secrets render as `[secret]`, unknowns as `[unknown]`.
//!
//! Two layouts: a tree (the stack's root, its components, their children, indented), printed
//! once the phase is over, while a spinner names the steps in progress; or flat, one line per
//! step as it finishes, which reads better in logs. The tree is the default on a terminal.

pub mod diff;
mod step_line;
mod tree;

use std::io::{IsTerminal, Write};
use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use console::{Style, style};
use indicatif::{ProgressBar, ProgressStyle};
use plinth_engine::events::{ChangeSummary, Event, Severity, StepInfo, StepOp};
use plinth_engine::policy::EnforcementLevel;
use plinth_engine::shown::{escape_controls, escape_controls_keeping_lines};
use plinth_engine::urn::Urn;
use plinth_engine::value::{PropertyMap, Value};
use tokio::sync::mpsc;

use step_line::step_line;

/// What a run does to resources, for the summary's words.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum RunKind {
    /// `up`, `preview`, `destroy`: resources are created, updated, replaced, deleted.
    Change,
    /// `refresh`: resources are found drifted or gone.
    Refresh,
}

/// How steps are shown.
#[derive(Debug, Clone, Copy)]
pub struct View {
    /// Also list steps that change nothing.
    pub show_sames: bool,
    /// As a tree, printed at the end of the phase; otherwise flat, as steps finish.
    pub tree: bool,
    /// Under each step, every property it changes, old and new (`--diff`).
    pub diff: bool,
}

/// The layout `--flat` and `--tree` ask for: a tree on a terminal, flat lines otherwise.
pub fn tree_wanted(flat: bool, tree: bool) -> bool {
    tree || (!flat && std::io::stdout().is_terminal())
}

/// Events taken from the channel at once: printed with one write to the terminal.
const BATCH: usize = 256;

/// Prints events until the summary (or until the channel closes). Returns the step failures it
/// showed, as the engine words them in its errors (`URN: message`, or the message alone), so
/// the command's error need not repeat them.
pub async fn render(
    mut events: mpsc::UnboundedReceiver<Event>,
    preview: bool,
    view: View,
    kind: RunKind,
    command_started: Instant,
) -> Vec<String> {
    let mut renderer = Renderer {
        screen: Screen::new(),
        tree: view.tree.then(tree::Tree::default),
        view,
        preview,
        kind,
        command_started,
        running: 0,
        last_started: None,
        shown: Vec::new(),
    };
    let mut batch = Vec::with_capacity(BATCH);
    while events.recv_many(&mut batch, BATCH).await > 0 {
        for event in batch.drain(..) {
            if renderer.show(event).is_break() {
                renderer.screen.finish();
                return renderer.shown;
            }
        }
        renderer.batch_shown();
    }
    renderer.screen.finish();
    renderer.shown
}

/// What [`render`] keeps from one event to the next.
struct Renderer {
    screen: Screen,
    /// The tree being built, when the view is a tree, until it is printed.
    tree: Option<tree::Tree>,
    view: View,
    preview: bool,
    kind: RunKind,
    command_started: Instant,
    /// Steps started and not yet ended.
    running: usize,
    /// The step started last since the spinner last changed.
    last_started: Option<StepInfo>,
    /// The failures shown, as [`render`] returns them.
    shown: Vec<String>,
}

impl Renderer {
    /// Shows `event`; breaks at the summary, the phase's last event.
    fn show(&mut self, event: Event) -> ControlFlow<()> {
        let show_sames = self.view.show_sames;
        let screen = &mut self.screen;
        match event {
            Event::StepStarted(step) => {
                self.running += 1;
                self.last_started = Some(step);
            }
            Event::StepDone {
                step,
                outputs,
                duration,
            } => {
                self.running = self.running.saturating_sub(1);
                let duration = (!self.preview).then_some(duration);
                let details = if self.view.diff {
                    diff_lines(&step, outputs.as_ref())
                } else {
                    detail_lines(&step, outputs.as_ref(), self.preview)
                };
                if let Some(tree) = &mut self.tree {
                    tree.step(step, duration, details);
                } else if step.op.is_change() || show_sames {
                    screen.line(step_line(&step, duration));
                    details.into_iter().for_each(|l| screen.line(l));
                }
            }
            Event::ComponentOutputs { urn, old, new } => {
                let lines = output_lines(&old, &new, "       ");
                if let Some(tree) = &mut self.tree {
                    tree.outputs(urn, lines, old != new);
                } else if old != new || show_sames {
                    screen.line(format!("     {} outputs:", shown_urn(&urn)));
                    lines.into_iter().for_each(|l| screen.line(l));
                }
            }
            Event::StepFailed { step, error } => {
                self.running = self.running.saturating_sub(1);
                // On stderr, with the command's error: scripts and logs that keep only errors
                // keep the step's.
                // The error's lines are plinth's; what a plugin wrote in them is escaped already.
                screen.error_line(format!(
                    "  {} {}: {}",
                    style("✗").red().bold(),
                    escape_controls(&format!("{}::{}", step.urn.ty(), step.urn.name())),
                    style(escape_controls_keeping_lines(&error)).red()
                ));
                self.shown.push(format!("{}: {error}", step.urn));
                self.shown.push(error);
            }
            Event::Diagnostic {
                urn,
                severity,
                message,
            } => {
                let label = match severity {
                    Severity::Debug => style("debug").dim(),
                    Severity::Info => style("info").cyan(),
                    Severity::Warning => style("warning").yellow(),
                    Severity::Error => style("error").red(),
                };
                let origin = (urn.map(|u| format!(" {}", escape_controls(u.name()))))
                    .unwrap_or_default();
                // A program's log line: on one line, whatever it holds.
                screen.line(format!("  {label}{origin}: {}", escape_controls(&message)));
            }
            Event::PolicyViolation(violation) => {
                let label = match violation.level {
                    EnforcementLevel::Mandatory => style("policy").red(),
                    _ => style("policy").yellow(),
                };
                let origin = (violation.urn.as_ref())
                    .map(|u| format!(" {}", escape_controls(u.name())))
                    .unwrap_or_default();
                // The violation escapes what the pack wrote: one line.
                screen.line(format!("  {label}{origin}: {violation}"));
            }
            Event::PolicySummary(packs) => {
                for pack in packs {
                    screen.line(format!(
                        "  {} {} {}: {} mandatory, {} advisory violation(s)",
                        style("policy pack").dim(),
                        escape_controls(&pack.name),
                        escape_controls(&pack.version),
                        pack.mandatory,
                        pack.advisory
                    ));
                }
            }
            Event::Outputs { old, new } => {
                if let Some(tree) = self.tree.take() {
                    tree.lines(show_sames).into_iter().for_each(|l| screen.line(l));
                }
                let lines = output_lines(&old, &new, "  ");
                if !lines.is_empty() {
                    screen.line(format!("\n{}", style("Outputs:").bold()));
                    lines.into_iter().for_each(|l| screen.line(l));
                }
            }
            Event::Summary {
                changes,
                preview,
                failed,
                ..
            } => {
                if let Some(tree) = self.tree.take() {
                    tree.lines(show_sames).into_iter().for_each(|l| screen.line(l));
                }
                let summary = summary_line(&changes, preview, self.kind, failed);
                screen.line(format!("\n{summary}"));
                let verdict = if failed {
                    style("failed").red().bold()
                } else {
                    style("done").green()
                };
                let duration = self.command_started.elapsed().as_secs_f64();
                screen.line(format!("Duration: {duration:.2}s ({verdict})"));
                return ControlFlow::Break(());
            }
            Event::Cancelled => screen.line(style(
                "Cancelling: no new steps start; waiting for steps in flight (Ctrl-C again to abort)",
            )
            .yellow()),
        }
        ControlFlow::Continue(())
    }

    /// Writes what a batch of events showed, and names the step started last by the spinner.
    fn batch_shown(&mut self) {
        if let Some(step) = self.last_started.take() {
            let name = escape_controls(step.urn.name());
            (self.screen.spinner).set_message(format!("{} in progress: {name}", self.running));
        }
        self.screen.flush();
    }
}

/// The terminal: lines gathered while a batch of events renders, then written at once above
/// the spinner (at 100,000 steps, a write per line was 200,000 system calls).
struct Screen {
    spinner: ProgressBar,
    pending: String,
}

impl Screen {
    fn new() -> Screen {
        let spinner = ProgressBar::new_spinner();
        spinner.set_style(ProgressStyle::with_template("{spinner} {msg}").expect("valid template"));
        spinner.enable_steady_tick(Duration::from_millis(100));
        Screen {
            spinner,
            pending: String::new(),
        }
    }

    /// A line for standard output, written with the batch.
    fn line(&mut self, line: impl std::fmt::Display) {
        use std::fmt::Write;
        let _ = writeln!(self.pending, "{line}");
    }

    /// A line for standard error, after the lines gathered before it.
    fn error_line(&mut self, line: String) {
        self.flush();
        self.spinner.suspend(|| eprintln!("{line}"));
    }

    /// Writes the lines gathered.
    fn flush(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        self.spinner.suspend(|| {
            let mut stdout = std::io::stdout().lock();
            // Output that cannot be written (a full disk) must not stop the update; a closed
            // pipe ends the process, as SIGPIPE does by default.
            let _ = (stdout.write_all(self.pending.as_bytes())).and_then(|()| stdout.flush());
        });
        self.pending.clear();
    }

    /// Clears the spinner, then writes what is left.
    fn finish(&mut self) {
        self.spinner.finish_and_clear();
        self.flush();
    }
}

/// A resource as `type name`, escaped: a program chose both.
fn shown_urn(urn: &Urn) -> String {
    escape_controls(&format!("{} {}", urn.ty(), urn.name())).into_owned()
}

/// Outputs as they change: `+` added, `~` changed (old => new), `-` removed, and unchanged ones
/// as they are, keys aligned; each line starts with `indent`.
fn output_lines(old: &PropertyMap, new: &PropertyMap, indent: &str) -> Vec<String> {
    let keys: std::collections::BTreeSet<&String> = old.keys().chain(new.keys()).collect();
    let width = keys
        .iter()
        .map(|k| escape_controls(k).chars().count())
        .max()
        .unwrap_or(0);
    keys.into_iter()
        .map(|key| (key, escape_controls(key)))
        .map(|(key, k)| match (old.get(key), new.get(key)) {
            (None, Some(v)) => style(format!("{indent}+ {k:width$}: {}", render_value(v)))
                .green()
                .to_string(),
            (Some(o), None) => style(format!("{indent}- {k:width$}: {}", render_value(o)))
                .red()
                .to_string(),
            (Some(o), Some(v)) if o != v => style(format!(
                "{indent}~ {k:width$}: {} => {}",
                render_value(o),
                render_value(v)
            ))
            .yellow()
            .to_string(),
            (_, v) => format!(
                "{indent}  {k:width$}: {}",
                v.map_or(String::new(), render_value)
            ),
        })
        .collect()
}

/// What changed: old → new for updates and replacements; for creates, the inputs they will
/// apply (in a plan) and the outputs that are not inputs.
fn detail_lines(step: &StepInfo, outputs: Option<&PropertyMap>, preview: bool) -> Vec<String> {
    let mut lines = Vec::new();
    if preview
        && step.op == StepOp::Create
        && let Some(inputs) = &step.new_inputs
    {
        for (k, v) in inputs {
            let k = escape_controls(k);
            lines.push(
                style(format!("       + {k}: {}", render_value(v)))
                    .green()
                    .to_string(),
            );
        }
    }
    if let (Some(old), Some(new)) = (&step.old_inputs, &step.new_inputs) {
        for key in &step.changed {
            let forces = if step.replaces.contains(key) {
                style(" (forces replacement)").magenta().to_string()
            } else {
                String::new()
            };
            lines.push(format!(
                "       {}: {} => {}{forces}",
                escape_controls(key),
                old.get(key).map_or("(none)".into(), render_value),
                new.get(key).map_or("(none)".into(), render_value)
            ));
        }
    }
    lines.extend(write_only_lines(step));
    if step.op == StepOp::Create
        && let Some(outputs) = outputs
    {
        for (k, v) in outputs {
            if step.new_inputs.as_ref().and_then(|i| i.get(k)) != Some(v) {
                lines.push(format!(
                    "       {}: {}",
                    escape_controls(k),
                    render_value(v)
                ));
            }
        }
    }
    lines
}

/// The write-only inputs the step sends: by name, since plinth never holds their values to
/// show or compare.
fn write_only_lines(step: &StepInfo) -> impl Iterator<Item = String> + '_ {
    (step.write_only.iter()).map(|k| {
        format!(
            "       ~ {}: (write-only: sent, not recorded)",
            escape_controls(k)
        )
    })
}

/// `--diff`: every property the step changes (`+` added, `-` removed, `~` old => new), nested
/// ones by path; then, for a create, the outputs that are not inputs.
fn diff_lines(step: &StepInfo, outputs: Option<&PropertyMap>) -> Vec<String> {
    let mut lines: Vec<String> = (diff::step_diff(step).iter())
        .map(|change| {
            let path = escape_controls(&change.path);
            let forces = if change.replaces {
                " (forces replacement)"
            } else {
                ""
            };
            let shown = |v: &Option<Value>| v.as_ref().map_or("(none)".into(), render_value);
            let (line, colour) = match change.kind {
                diff::ChangeKind::Add => (
                    format!("       + {path}: {}{forces}", shown(&change.new)),
                    Style::new().green(),
                ),
                diff::ChangeKind::Delete => (
                    format!("       - {path}: {}{forces}", shown(&change.old)),
                    Style::new().red(),
                ),
                diff::ChangeKind::Update => (
                    format!(
                        "       ~ {path}: {} => {}{forces}",
                        shown(&change.old),
                        shown(&change.new)
                    ),
                    Style::new().yellow(),
                ),
            };
            colour.apply_to(line).to_string()
        })
        .collect();
    lines.extend(write_only_lines(step));
    if step.op == StepOp::Create
        && let Some(outputs) = outputs
    {
        for (k, v) in outputs {
            if step.new_inputs.as_ref().and_then(|i| i.get(k)) != Some(v) {
                let k = escape_controls(k);
                lines.push(format!("         {k}: {}", render_value(v)));
            }
        }
    }
    lines
}

/// A Unix time as a local date and time, to the second (`2026-11-23 09:01:02`).
pub fn local_time(unix_seconds: u64) -> String {
    let Ok(timestamp) = jiff::Timestamp::from_second(unix_seconds as i64) else {
        return format!("{unix_seconds} (unix)");
    };
    timestamp
        .to_zoned(jiff::tz::TimeZone::system())
        .strftime("%Y-%m-%d %H:%M:%S")
        .to_string()
}

/// A duration in whole seconds, as a person reads it: `42s`, `3m05s`, `1h02m`.
pub fn whole_seconds(seconds: u64) -> String {
    match seconds {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m{:02}s", s / 60, s % 60),
        s => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
    }
}

pub fn render_value(v: &Value) -> String {
    match v {
        Value::Secret(_) => style("[secret]").dim().to_string(),
        Value::Unknown | Value::Output(_) => style("[unknown]").dim().to_string(),
        other => other.to_string(),
    }
}

/// What the run did; a failed run says what it did before the failure, and counts nothing as
/// unchanged that it may never have reached.
fn summary_line(c: &ChangeSummary, preview: bool, kind: RunKind, failed: bool) -> String {
    let mut parts = Vec::new();
    let (create, update, replace, delete) = match (kind, preview) {
        (RunKind::Refresh, _) => ("created", "drifted", "replaced", "gone"),
        (RunKind::Change, true) => ("to create", "to update", "to replace", "to delete"),
        (RunKind::Change, false) => ("created", "updated", "replaced", "deleted"),
    };
    let import = match (kind, preview) {
        (RunKind::Refresh, _) => "adopted",
        (RunKind::Change, true) => "to import",
        (RunKind::Change, false) => "imported",
    };
    for (n, label, s) in [
        (c.create, create, Style::new().green()),
        (c.import, import, Style::new().cyan()),
        (c.update, update, Style::new().yellow()),
        (c.replace, replace, Style::new().magenta()),
        (c.delete, delete, Style::new().red()),
    ] {
        if n > 0 {
            parts.push(s.apply_to(format!("{n} {label}")).to_string());
        }
    }
    if failed {
        let done = if parts.is_empty() {
            "no changes".to_owned()
        } else {
            parts.join(", ")
        };
        let unchanged = if c.same > 0 {
            format!(", {} unchanged", c.same)
        } else {
            String::new()
        };
        return format!("Resources: {done} before the failure{unchanged}");
    }
    if parts.is_empty() {
        parts.push("no changes".into());
    }
    format!("Resources: {}, {} unchanged", parts.join(", "), c.same)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_planned_create_shows_the_inputs_it_will_apply_with_secrets_masked() {
        console::set_colors_enabled(false);
        let inputs: PropertyMap = [
            ("path".to_owned(), Value::String("notes.txt".into())),
            (
                "token".to_owned(),
                Value::Secret(Box::new(Value::String("hunter2".into()))),
            ),
        ]
        .into_iter()
        .collect();
        let step = StepInfo {
            op: StepOp::Create,
            urn: plinth_engine::urn::Urn::new("dev", "p", None, "file:File", "notes"),
            parent: None,
            custom: true,
            old_inputs: None,
            new_inputs: Some(inputs.clone()),
            changed: vec![],
            replaces: vec![],
            write_only: Vec::new(),
        };
        let mut outputs = inputs;
        outputs.insert("size".into(), Value::Unknown);
        let lines = detail_lines(&step, Some(&outputs), true);
        assert_eq!(
            lines,
            [
                "       + path: \"notes.txt\"",
                "       + token: [secret]",
                "       size: [unknown]"
            ],
        );
        // Once created, only the outputs that are not inputs are shown.
        assert_eq!(detail_lines(&step, Some(&outputs), false).len(), 1);
        // A write-only input shows by name only.
        let step = StepInfo {
            write_only: vec!["password_wo".into()],
            ..step
        };
        let lines = detail_lines(&step, Some(&outputs), false);
        assert_eq!(
            lines[0],
            "       ~ password_wo: (write-only: sent, not recorded)"
        );
        assert_eq!(diff_lines(&step, None).last().unwrap(), &lines[0]);
    }

    #[test]
    fn output_changes_are_marked_and_secrets_masked() {
        console::set_colors_enabled(false);
        let secret = |s: &str| Value::Secret(Box::new(Value::String(s.into())));
        let old: PropertyMap = [
            ("kept".to_owned(), Value::from(1.0)),
            ("gone".to_owned(), Value::from("x")),
            ("token".to_owned(), secret("old-pw")),
        ]
        .into();
        let new: PropertyMap = [
            ("kept".to_owned(), Value::from(1.0)),
            ("added".to_owned(), secret("new-pw")),
            ("token".to_owned(), secret("changed-pw")),
        ]
        .into();
        let lines = output_lines(&old, &new, "  ");
        assert_eq!(
            lines,
            [
                "  + added: [secret]",
                "  - gone : \"x\"",
                "    kept : 1.0",
                "  ~ token: [secret] => [secret]",
            ]
        );
        assert!(lines.iter().all(|l| !l.contains("pw")));
    }

    #[test]
    fn times_read_as_dates_and_durations() {
        let shown = local_time(1_795_000_000);
        assert_eq!(shown.len(), "2026-11-18 09:46:40".len(), "{shown}");
        assert!(shown.starts_with("2026-11-"), "{shown}");
        assert_eq!(whole_seconds(42), "42s");
        assert_eq!(whole_seconds(185), "3m05s");
        assert_eq!(whole_seconds(3720), "1h02m");
    }

    #[test]
    fn a_failed_run_says_what_it_did_before_the_failure() {
        console::set_colors_enabled(false);
        let nothing = ChangeSummary::default();
        assert_eq!(
            summary_line(&nothing, false, RunKind::Change, true),
            "Resources: no changes before the failure"
        );
        let some = ChangeSummary {
            create: 2,
            same: 1,
            ..ChangeSummary::default()
        };
        assert_eq!(
            summary_line(&some, false, RunKind::Change, true),
            "Resources: 2 created before the failure, 1 unchanged"
        );
        assert_eq!(
            summary_line(&nothing, false, RunKind::Change, false),
            "Resources: no changes, 0 unchanged"
        );
    }
}

//! A step's line in the display: its symbol, colour and verb, its type and name escaped (a
//! program chose both), alone or in the tree.

use std::time::Duration;

use console::Style;
use plinth_engine::events::{StepInfo, StepOp};
use plinth_engine::shown::escape_controls;

/// Symbol, verb for a plan, verb for what was done, and colour of a step.
fn op_style(op: StepOp) -> (&'static str, &'static str, &'static str, Style) {
    match op {
        StepOp::Same => (" ", "same", "unchanged", Style::new().dim()),
        StepOp::Create => ("+", "create", "created", Style::new().green()),
        StepOp::Update => ("~", "update", "updated", Style::new().yellow()),
        StepOp::Replace => ("+-", "replace", "replaced", Style::new().magenta()),
        StepOp::Delete => ("-", "delete", "deleted", Style::new().red()),
        StepOp::DeleteReplaced => (
            "--",
            "delete original",
            "deleted original",
            Style::new().red(),
        ),
        StepOp::Import => ("=", "import", "imported", Style::new().cyan()),
        StepOp::Drift => ("~", "drifted", "drift recorded", Style::new().yellow()),
        StepOp::Gone => ("-", "gone", "gone, forgotten", Style::new().red()),
    }
}

/// One line per step; `duration` is set for steps that ran (not for a plan).
pub(super) fn step_line(step: &StepInfo, duration: Option<Duration>) -> String {
    step_line_in_tree(step, duration, "", 28)
}

/// A step's line, its type after the tree's `branch` and padded to `width` with it.
pub(super) fn step_line_in_tree(
    step: &StepInfo,
    duration: Option<Duration>,
    branch: &str,
    width: usize,
) -> String {
    let (symbol, planned, done, style) = op_style(step.op);
    let verb = if duration.is_some() { done } else { planned };
    let took = duration.map_or(String::new(), |d| format!(" ({:.2}s)", d.as_secs_f64()));
    let ty = format!("{branch}{}", escape_controls(step.urn.ty()));
    let width = width.max(ty.chars().count());
    let pad = width - ty.chars().count();
    style
        .apply_to(format!(
            "  {symbol:2} {ty}{:pad$} {:20} {verb}{took}",
            "",
            escape_controls(step.urn.name())
        ))
        .to_string()
}

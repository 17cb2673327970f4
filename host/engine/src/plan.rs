//! Saved plans: the steps a preview found, and the comparison `up --plan` makes between them and
//! the steps a new preview finds, before any step runs.
//!
//! A value unknown when the plan was made may be anything now (it becomes known as the resources
//! it comes from are created); everything else must be exactly as planned.

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::events::{StepInfo, StepOp};
use crate::shown::escape_controls;
use crate::urn::Urn;
use crate::value::{PropertyMap, Value};

/// One step of a plan: what it does to which resource, with which inputs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlannedStep {
    pub urn: Urn,
    #[serde(rename = "type")]
    pub ty: String,
    pub op: StepOp,
    /// The inputs the step sends (`None` for a step that sends none: same, delete).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inputs: Option<PropertyMap>,
    /// The properties whose change forces a replacement.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replaces: Vec<String>,
}

impl PlannedStep {
    pub fn of(step: &StepInfo) -> PlannedStep {
        PlannedStep {
            urn: step.urn.clone(),
            ty: step.urn.ty().to_owned(),
            op: step.op,
            inputs: step.new_inputs.clone(),
            replaces: step.replaces.clone(),
        }
    }
}

/// The first way the steps found now differ from the plan's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Difference {
    #[error("the plan has {}, which the program no longer asks for", Shown(.0))]
    Missing(Step),
    #[error("the program now asks for {}, which the plan does not have", Shown(.0))]
    Unplanned(Step),
    #[error(
        "the plan has {} of {}; the program now asks for {} of it",
        ops(.planned), Shown(.urn), ops(.now)
    )]
    Operation {
        urn: String,
        planned: Vec<StepOp>,
        now: Vec<StepOp>,
    },
    #[error(
        "the type of {} is now `{}`, not the plan's `{}`",
        Shown(.urn), escape_controls(.now), escape_controls(.planned)
    )]
    Type {
        urn: String,
        planned: String,
        now: String,
    },
    #[error(
        "the input `{}` of {} differs from the plan's{}",
        escape_controls(.path), Shown(.step), if *.secret { " (a secret: not shown)" } else { "" }
    )]
    Input {
        step: Step,
        path: String,
        /// The value differs inside a secret: neither side may be shown.
        secret: bool,
    },
    #[error(
        "{} is now replaced because of {}, not the plan's {}",
        Shown(.step), list(.now), list(.planned)
    )]
    Replaces {
        step: Step,
        planned: Vec<String>,
        now: Vec<String>,
    },
}

/// A step as a difference names it: its operation and its resource's URN.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub op: StepOp,
    pub urn: String,
}

impl From<&PlannedStep> for Step {
    fn from(step: &PlannedStep) -> Step {
        Step {
            op: step.op,
            urn: step.urn.to_string(),
        }
    }
}

/// Shows a guest-supplied text, or a step, escaped.
struct Shown<'a, T: ?Sized>(&'a T);

impl fmt::Display for Shown<'_, String> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}`", escape_controls(self.0))
    }
}

impl fmt::Display for Shown<'_, Step> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} of {}", with_article(self.0.op), Shown(&self.0.urn))
    }
}

fn with_article(op: StepOp) -> String {
    let article = match op {
        StepOp::Update | StepOp::Import => "an",
        _ => "a",
    };
    format!("{article} {}", op_name(op))
}

fn op_name(op: StepOp) -> &'static str {
    match op {
        StepOp::Same => "same",
        StepOp::Create => "create",
        StepOp::Update => "update",
        StepOp::Replace => "replace",
        StepOp::Delete => "delete",
        StepOp::DeleteReplaced => "delete-replaced",
        StepOp::Import => "import",
        StepOp::Drift => "drift",
        StepOp::Gone => "gone",
    }
}

/// Operations, as "a create" or "a replace and a delete-replaced".
fn ops(ops: &[StepOp]) -> String {
    let ops: Vec<String> = ops.iter().map(|op| with_article(*op)).collect();
    ops.join(" and ")
}

fn list(names: &[String]) -> String {
    if names.is_empty() {
        return "nothing".to_owned();
    }
    let names: Vec<String> = names
        .iter()
        .map(|n| format!("`{}`", escape_controls(n)))
        .collect();
    names.join(", ")
}

/// Compares the steps found `now` with the `planned` ones. Steps run in parallel, so their order
/// is not part of a plan: they are matched by URN and operation, and the first difference is
/// the one of the first URN (in URN order) that differs.
pub fn compare(planned: &[PlannedStep], now: &[PlannedStep]) -> Result<(), Difference> {
    let (planned, now) = (by_urn(planned), by_urn(now));
    let urns: std::collections::BTreeSet<&str> =
        planned.keys().chain(now.keys()).copied().collect();
    for urn in urns {
        let (planned, now) = (
            planned.get(urn).map_or(&[][..], Vec::as_slice),
            now.get(urn).map_or(&[][..], Vec::as_slice),
        );
        let ops = |steps: &[&PlannedStep]| steps.iter().map(|s| s.op).collect::<Vec<_>>();
        if !planned.is_empty() && !now.is_empty() && ops(planned) != ops(now) {
            return Err(Difference::Operation {
                urn: urn.to_owned(),
                planned: ops(planned),
                now: ops(now),
            });
        }
        for i in 0..planned.len().max(now.len()) {
            match (planned.get(i), now.get(i)) {
                (Some(planned), Some(now)) => compare_step(planned, now)?,
                (Some(planned), None) => return Err(Difference::Missing(Step::from(*planned))),
                (None, Some(now)) => return Err(Difference::Unplanned(Step::from(*now))),
                (None, None) => unreachable!("i is below one of the lengths"),
            }
        }
    }
    Ok(())
}

/// Each URN's steps, ordered by operation.
fn by_urn(steps: &[PlannedStep]) -> BTreeMap<&str, Vec<&PlannedStep>> {
    let mut by_urn: BTreeMap<&str, Vec<&PlannedStep>> = BTreeMap::new();
    for step in steps {
        by_urn.entry(step.urn.as_str()).or_default().push(step);
    }
    for steps in by_urn.values_mut() {
        steps.sort_by_key(|s| op_name(s.op));
    }
    by_urn
}

fn compare_step(planned: &PlannedStep, now: &PlannedStep) -> Result<(), Difference> {
    if planned.ty != now.ty {
        return Err(Difference::Type {
            urn: planned.urn.to_string(),
            planned: planned.ty.clone(),
            now: now.ty.clone(),
        });
    }
    let empty = PropertyMap::new();
    let (planned_inputs, now_inputs) = (
        planned.inputs.as_ref().unwrap_or(&empty),
        now.inputs.as_ref().unwrap_or(&empty),
    );
    let misfit = map_misfit(planned_inputs, now_inputs, &mut Vec::new(), false);
    if let Some((path, secret)) = misfit {
        return Err(Difference::Input {
            step: Step::from(planned),
            path,
            secret,
        });
    }
    if planned.replaces != now.replaces {
        return Err(Difference::Replaces {
            step: Step::from(planned),
            planned: planned.replaces.clone(),
            now: now.replaces.clone(),
        });
    }
    Ok(())
}

/// What an update under a saved plan may do: only the plan's changes. The CLI compares a whole
/// preview with the plan before the update starts; this second check, made before each step
/// runs, holds against a program that registers one thing in a preview and another in an
/// update.
#[derive(Debug, Default)]
pub struct PlanGuard {
    changes: HashMap<(Urn, StepOp), PlannedStep>,
}

impl PlanGuard {
    pub fn new(steps: &[PlannedStep]) -> PlanGuard {
        let changes = (steps.iter())
            .filter(|s| s.op.is_change())
            .map(|s| ((s.urn.clone(), s.op), s.clone()))
            .collect();
        PlanGuard { changes }
    }

    /// Lets `step` run if it changes nothing or is one of the plan's changes, its inputs those
    /// planned (unknowns then may be anything now).
    pub fn admit(&self, step: &StepInfo) -> Result<(), Difference> {
        if !step.op.is_change() {
            return Ok(());
        }
        let now = PlannedStep::of(step);
        match self.changes.get(&(now.urn.clone(), now.op)) {
            Some(planned) => compare_step(planned, &now),
            // Deleting the copy a planned replacement replaced is part of that replacement.
            None if now.op == StepOp::DeleteReplaced
                && (self.changes).contains_key(&(now.urn.clone(), StepOp::Replace)) =>
            {
                Ok(())
            }
            None => Err(Difference::Unplanned(Step::from(&now))),
        }
    }
}

/// [`first_misfit`] of two maps: a key on one side only is a misfit at its path.
fn map_misfit(
    planned: &PropertyMap,
    now: &PropertyMap,
    path: &mut Vec<String>,
    secret: bool,
) -> Option<(String, bool)> {
    let keys: std::collections::BTreeSet<&String> = planned.keys().chain(now.keys()).collect();
    for key in keys {
        path.push(key.clone());
        let misfit = match (planned.get(key), now.get(key)) {
            (Some(planned), Some(now)) => first_misfit(planned, now, path, secret),
            _ => Some((path.join("."), secret)),
        };
        if misfit.is_some() {
            return misfit;
        }
        path.pop();
    }
    None
}

/// The path of the first place a value found `now` does not fit the `planned` one, and whether
/// it is inside a secret: an unknown planned value fits anything; everything else must be
/// equal.
fn first_misfit(
    planned: &Value,
    now: &Value,
    path: &mut Vec<String>,
    secret: bool,
) -> Option<(String, bool)> {
    let here = |path: &[String]| Some((path.join("."), secret));
    match (planned, now) {
        (Value::Unknown, _) => None,
        (Value::Secret(planned), Value::Secret(now)) => first_misfit(planned, now, path, true),
        (Value::Object(planned), Value::Object(now)) => map_misfit(planned, now, path, secret),
        (Value::Array(planned), Value::Array(now)) if planned.len() == now.len() => {
            for (i, (planned, now)) in planned.iter().zip(now).enumerate() {
                path.push(i.to_string());
                let misfit = first_misfit(planned, now, path, secret);
                if misfit.is_some() {
                    return misfit;
                }
                path.pop();
            }
            None
        }
        (planned, now) if planned == now => None,
        // A secret on one side only: the values may be shown by neither.
        (Value::Secret(_), _) | (_, Value::Secret(_)) => Some((path.join("."), true)),
        _ => here(path),
    }
}

#[cfg(test)]
mod tests;

//! The step generator's decision, as pure functions: what a registration's step does to its
//! resource (a [`StepPlan`]) from its recorded state, the provider's diff and the options, and
//! what deleting a recorded state does (a [`DeletePlan`]). They call no provider and touch no
//! state, so they are tested on their own; [`super::execute`] gathers what they need (the
//! provider's check and diff) and carries out what they decide.

use super::request::ProviderBinding;
use crate::events::StepOp;
use crate::property_path::{PathError, PropertyPath};
use crate::provider::{DiffResult, PropertySchema};
use crate::resource::{ProviderRef, ResourceState};
use crate::urn::{Urn, provided_package};
use crate::value::{PropertyMap, Value};

/// What a registration is, for the decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Only groups its children: nothing to ask a provider.
    Component,
    /// A provider resource (`plinth:providers:<package>`): a configuration, nothing real.
    Provider,
    /// A real resource its provider creates, updates and deletes.
    Custom,
}

impl Kind {
    pub(crate) fn of(state: &ResourceState) -> Kind {
        if !state.custom {
            Kind::Component
        } else if provided_package(&state.ty).is_some() {
            Kind::Provider
        } else {
            Kind::Custom
        }
    }
}

/// How a registration's step changes its resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum StepPlan {
    /// `--target` leaves it out and it exists: its recorded state stays exactly as it is.
    Kept,
    /// `--target` leaves it out and it does not exist: it is not created.
    NotCreated,
    /// Nothing changes.
    Same,
    Create,
    /// Adopts the existing resource with this provider id (the `import` option).
    Import {
        id: String,
    },
    /// Changes it in place.
    Update {
        changed: Vec<String>,
    },
    /// Creates a new copy and deletes the old one: after the create, or (`delete_first`) before
    /// it, together with what depends on it.
    Replace {
        changed: Vec<String>,
        replaces: Vec<String>,
        delete_first: bool,
    },
}

impl StepPlan {
    /// How the display shows it; `None` for what is not created (a diagnostic says so).
    pub(crate) fn op(&self) -> Option<StepOp> {
        Some(match self {
            StepPlan::NotCreated => return None,
            StepPlan::Kept | StepPlan::Same => StepOp::Same,
            StepPlan::Create => StepOp::Create,
            StepPlan::Import { .. } => StepOp::Import,
            StepPlan::Update { .. } => StepOp::Update,
            StepPlan::Replace { .. } => StepOp::Replace,
        })
    }

    /// The properties the display names as changed, and as forcing the replacement.
    pub(crate) fn changes(&self) -> (&[String], &[String]) {
        match self {
            StepPlan::Update { changed } => (changed, &[]),
            StepPlan::Replace {
                changed, replaces, ..
            } => (changed, replaces),
            _ => (&[], &[]),
        }
    }
}

/// The options that change the decision.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct PlanOptions<'a> {
    /// `--target` includes it (always so without `--target`).
    pub targeted: bool,
    /// `--replace` names it.
    pub replace: bool,
    /// Its provider resource was replaced in this run, or it moves to one configured
    /// differently (see [`provider_changed`]).
    pub provider_changed: bool,
    /// The `import` option: the provider id of an existing resource to adopt.
    pub import_id: Option<&'a str>,
    /// The `replace_on_changes` option: a change to one of these replaces it.
    pub replace_on_changes: &'a [String],
    /// The `delete_before_replace` option.
    pub delete_before_replace: bool,
}

/// What the decision of one registration's step takes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PlanInput<'a> {
    pub kind: Kind,
    /// The registration's URN (its recorded state may have another: an alias).
    pub urn: &'a Urn,
    /// The recorded state the step takes charge of, with the provider's diff of its inputs and
    /// the checked ones. The diff is empty where no provider is asked: a component, a resource
    /// `--target` leaves out.
    pub old: Option<(&'a ResourceState, &'a DiffResult)>,
    pub options: PlanOptions<'a>,
}

/// Why a step cannot go ahead as the program asks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum PlanError {
    /// `replaces` is empty when it is forced (`--replace`, or its provider changed).
    #[error(
        "cannot replace protected resource ({}); remove `protect` first (`plinth state \
         unprotect {urn}`)",
        why_replaced(.replaces)
    )]
    Protected { urn: Urn, replaces: Vec<String> },
    #[error("cannot replace protected provider resource; remove `protect` first")]
    ProtectedProvider,
    #[error("ignore_changes: {0}")]
    IgnoreChanges(#[from] PathError),
    #[error(
        "cannot import `{id}`: the program's inputs differ from the existing resource ({}); \
         make the program match, then run again",
        .differences.join("; ")
    )]
    ImportMismatch {
        id: String,
        differences: Vec<String>,
    },
}

fn why_replaced(replaces: &[String]) -> String {
    if replaces.is_empty() {
        "--replace asks for it".to_owned()
    } else {
        format!("changes to {} require it", replaces.join(", "))
    }
}

/// Decides a registration's step.
pub(crate) fn plan(input: &PlanInput) -> Result<StepPlan, PlanError> {
    let PlanInput {
        kind,
        urn,
        old,
        options,
    } = *input;
    if !options.targeted {
        return Ok(if old.is_some() {
            StepPlan::Kept
        } else {
            StepPlan::NotCreated
        });
    }
    let Some((old, diff)) = old else {
        return Ok(match options.import_id {
            Some(id) if kind == Kind::Custom => StepPlan::Import { id: id.to_owned() },
            _ => StepPlan::Create,
        });
    };
    match kind {
        Kind::Component => Ok(StepPlan::Same),
        // A provider resource changes as its configuration does: `--replace` and the resource
        // options that force a replacement are not its to take.
        Kind::Provider => {
            if diff.changed.is_empty() {
                Ok(StepPlan::Same)
            } else if diff.replaces.is_empty() {
                Ok(StepPlan::Update {
                    changed: diff.changed.clone(),
                })
            } else if old.protect {
                Err(PlanError::ProtectedProvider)
            } else {
                Ok(StepPlan::Replace {
                    changed: diff.changed.clone(),
                    replaces: diff.replaces.clone(),
                    delete_first: false,
                })
            }
        }
        Kind::Custom => {
            let mut replaces = diff.replaces.clone();
            for key in &diff.changed {
                if options.replace_on_changes.contains(key) && !replaces.contains(key) {
                    replaces.push(key.clone());
                }
            }
            let forced = options.replace || options.provider_changed;
            if diff.changed.is_empty() && !forced {
                Ok(StepPlan::Same)
            } else if replaces.is_empty() && !forced {
                Ok(StepPlan::Update {
                    changed: diff.changed.clone(),
                })
            } else if old.protect {
                Err(PlanError::Protected {
                    urn: urn.clone(),
                    replaces,
                })
            } else {
                Ok(StepPlan::Replace {
                    changed: diff.changed.clone(),
                    replaces,
                    delete_first: diff.delete_before_replace || options.delete_before_replace,
                })
            }
        }
    }
}

/// What deleting a recorded state does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DeletePlan {
    /// Protected: the delete fails, and says how to unprotect it.
    Refused,
    /// A preview: nothing is deleted nor recorded.
    Nothing,
    /// The state is dropped without a provider call: retained on delete, a provider resource
    /// (nothing real), or a component.
    Forget,
    /// The provider deletes it, then the state is dropped.
    Delete,
}

/// Decides the delete of recorded state `old`.
pub(crate) fn plan_delete(old: &ResourceState, preview: bool) -> DeletePlan {
    if !old.custom {
        return if preview {
            DeletePlan::Nothing
        } else {
            DeletePlan::Forget
        };
    }
    if old.protect {
        DeletePlan::Refused
    } else if preview {
        DeletePlan::Nothing
    } else if old.retain_on_delete || provided_package(&old.ty).is_some() {
        DeletePlan::Forget
    } else {
        DeletePlan::Delete
    }
}

/// The inputs to check, `ignore_changes` applied: an ignored property keeps its recorded value.
pub(crate) fn ignore_changes(
    old: &PropertyMap,
    inputs: &mut PropertyMap,
    paths: &[String],
) -> Result<(), PlanError> {
    for path in paths {
        PropertyPath::parse(path)?.keep_old(old, inputs);
    }
    Ok(())
}

/// Whether a resource recorded as managed by provider resource `recorded` must be replaced
/// because of its provider, now the one `binding` names (none for components and provider
/// resources): that provider resource was replaced in this run, or the resource moves to another
/// one configured differently from the recorded one, whose configuration `recorded_config` finds
/// (none: a provider resource the state does not hold).
pub(crate) fn provider_changed<'a>(
    recorded: Option<&ProviderRef>,
    binding: Option<&ProviderBinding>,
    recorded_config: impl FnOnce(&ProviderRef) -> Option<&'a PropertyMap>,
) -> bool {
    let Some(binding) = binding else {
        return false;
    };
    if binding.replaced {
        return true;
    }
    match recorded {
        Some(reference) if reference.urn != binding.reference.urn => {
            recorded_config(reference) != Some(&binding.config)
        }
        _ => false,
    }
}

/// A provider resource's diff: the top-level keys whose values differ between two
/// configurations, those the provider's schema marks `replace_on_change` replacing it.
pub(crate) fn config_diff(
    old: &PropertyMap,
    new: &PropertyMap,
    schema: &[PropertySchema],
) -> DiffResult {
    let mut keys: Vec<&String> = old.keys().chain(new.keys()).collect();
    keys.sort();
    keys.dedup();
    let changed: Vec<String> = (keys.into_iter())
        .filter(|k| old.get(*k) != new.get(*k))
        .cloned()
        .collect();
    let replaces = (changed.iter())
        .filter(|k| schema.iter().any(|p| p.name == **k && p.replace_on_change))
        .cloned()
        .collect();
    DiffResult {
        changed,
        replaces,
        delete_before_replace: false,
    }
}

/// Why an import of `id` cannot adopt what exists: the properties the provider's `diff` of
/// the existing resource's inputs (`existing`) and the program's (`program`) says differ.
pub(crate) fn import_mismatch(
    id: &str,
    diff: &DiffResult,
    existing: &PropertyMap,
    program: &PropertyMap,
) -> Option<PlanError> {
    if diff.changed.is_empty() {
        return None;
    }
    let show = |m: &PropertyMap, k: &str| m.get(k).map_or("(none)".into(), Value::to_string);
    let differences = (diff.changed.iter())
        .map(|k| {
            let (existing, program) = (show(existing, k), show(program, k));
            format!("{k}: existing {existing} vs program {program}")
        })
        .collect();
    Some(PlanError::ImportMismatch {
        id: id.to_owned(),
        differences,
    })
}

#[cfg(test)]
mod tests;

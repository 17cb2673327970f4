//! How a deployment runs: the options `up`, `preview` and `destroy` take.

use std::collections::{BTreeMap, HashSet};

use super::target::Targets;
use crate::budget::ProgramBudget;
use crate::plan::PlanGuard;
use crate::policy::PolicyPacks;
use crate::urn::Urn;
use crate::value::Value;

/// The most resource operations in flight at once (`parallel`, and `--parallel`): more is
/// clamped to it. So the most creates one update's journal has begun and not ended, which a
/// team service holds in memory and refuses beyond.
pub const MAX_PARALLEL: usize = 100_000;

/// How a deployment runs.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub project: String,
    pub stack: String,
    /// Plan only: providers are asked to preview, nothing is recorded.
    pub preview: bool,
    /// Upper bound on provider calls in flight (at least 1, at most [`MAX_PARALLEL`]).
    pub parallel: usize,
    /// Stack configuration, keyed `namespace:key`: strings, or secrets holding strings.
    pub config: BTreeMap<String, Value>,
    /// Change only these resources (`--target`); everything when `None`.
    pub targets: Option<Targets>,
    /// Replace these resources even if their inputs did not change (`--replace`).
    pub replace: HashSet<Urn>,
    /// After a failure, keep running every step that does not depend on it.
    pub continue_on_error: bool,
    /// What the program may make the host hold.
    pub budget: ProgramBudget,
    /// `up --plan`: the plan's changes are the only ones a step may make.
    pub plan: Option<std::sync::Arc<PlanGuard>>,
    /// The policy packs that judge each change and the stack (`--policy-pack`).
    pub policies: PolicyPacks,
}

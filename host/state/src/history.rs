//! A stack's history: one entry per update, refresh, destroy, import or edit by hand.

use std::time::{SystemTime, UNIX_EPOCH};

use plinth_engine::events::ChangeSummary;
use plinth_engine::policy::PackRun;
use serde::{Deserialize, Serialize};

use crate::checkpoint::PluginUse;
use crate::run_metadata::RunMetadata;

/// What a stack's history records: each run that changed its state is an update of one of
/// these kinds. (The pending operations in a snapshot are something else: provider calls.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UpdateKind {
    Update,
    Refresh,
    Destroy,
    Import,
    /// A change made by hand: `plinth state delete`, `protect`, `unprotect`.
    #[serde(rename = "state-edit")]
    StateEdit,
    /// An old version's state written as the new one (`plinth stack rollback`).
    Rollback,
}

impl std::fmt::Display for UpdateKind {
    /// The kind as the history's JSON names it: `update`, `state-edit`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            UpdateKind::Update => "update",
            UpdateKind::Refresh => "refresh",
            UpdateKind::Destroy => "destroy",
            UpdateKind::Import => "import",
            UpdateKind::StateEdit => "state-edit",
            UpdateKind::Rollback => "rollback",
        })
    }
}

/// How an update ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UpdateResult {
    Succeeded,
    Failed,
}

impl std::fmt::Display for UpdateResult {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            UpdateResult::Succeeded => "succeeded",
            UpdateResult::Failed => "failed",
        })
    }
}

/// One update of a stack.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistoryEntry {
    pub kind: UpdateKind,
    /// Seconds since the Unix epoch.
    pub started: u64,
    pub ended: u64,
    pub result: UpdateResult,
    pub changes: ChangeSummary,
    /// The plinth version that ran the operation.
    pub plinth: String,
    /// The plugins the operation used (none in entries from older plinths).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub plugins: Vec<PluginUse>,
    /// What was done, where the kind alone does not say (an edit by hand: the command).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Who ran it, where a service knows (its token's user); set as read from the service,
    /// never as the entry was sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// Where the run came from: its message, commit, branch, pull request, CI system.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<RunMetadata>,
    /// The policy packs the run says ran, and what they found.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub policy_packs: Vec<PackRun>,
    /// The saved plan the run applied (`plinth up --plan`), if it applied one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<AppliedPlan>,
}

/// A saved plan an update applied: which state it was made against, and how many steps it held.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct AppliedPlan {
    /// The version of the state the plan was made against.
    pub made_against: u64,
    /// The SHA-256 of that state, secrets left out, as the plan records it.
    pub state_digest: String,
    pub steps: u64,
}

impl HistoryEntry {
    /// An entry for an operation that started at `started` and ends now.
    pub fn ended_now(
        kind: UpdateKind,
        started: SystemTime,
        result: UpdateResult,
        changes: ChangeSummary,
    ) -> HistoryEntry {
        HistoryEntry {
            kind,
            started: unix_seconds(started),
            ended: unix_seconds(SystemTime::now()),
            result,
            changes,
            plinth: env!("CARGO_PKG_VERSION").to_owned(),
            plugins: Vec::new(),
            note: None,
            user: None,
            metadata: None,
            policy_packs: Vec::new(),
            plan: None,
        }
    }

    /// The entry, saying what was done.
    pub fn with_note(self, note: impl Into<String>) -> HistoryEntry {
        HistoryEntry {
            note: Some(note.into()),
            ..self
        }
    }

    /// The entry, saying where the run came from (nothing, if `metadata` says nothing).
    pub fn with_metadata(self, metadata: &RunMetadata) -> HistoryEntry {
        let metadata = (!metadata.is_empty()).then(|| metadata.clone());
        HistoryEntry { metadata, ..self }
    }

    /// The entry, recording that the packs `policy_packs` ran.
    pub fn with_policy_packs(self, policy_packs: Vec<PackRun>) -> HistoryEntry {
        HistoryEntry {
            policy_packs,
            ..self
        }
    }

    /// The entry, recording that it applied the saved plan `plan`.
    pub fn with_plan(self, plan: Option<AppliedPlan>) -> HistoryEntry {
        HistoryEntry { plan, ..self }
    }

    /// The entry, recording that the operation used `plugins`.
    pub fn with_plugins(self, plugins: Vec<PluginUse>) -> HistoryEntry {
        HistoryEntry { plugins, ..self }
    }
}

fn unix_seconds(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_and_results_read_as_in_the_json() {
        use UpdateKind::*;
        for kind in [Update, Refresh, Destroy, Import, StateEdit] {
            assert_eq!(serde_json::to_value(kind).unwrap(), kind.to_string());
        }
        for result in [UpdateResult::Succeeded, UpdateResult::Failed] {
            assert_eq!(serde_json::to_value(result).unwrap(), result.to_string());
        }
    }
}

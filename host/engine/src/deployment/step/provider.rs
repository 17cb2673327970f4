//! Steps of provider resources (`plinth:providers:<package>`): a provider configured one way,
//! recorded in the state so that what it manages is always driven with the configuration it was
//! created with. Creating one configures a provider (which checks the configuration) and changes
//! nothing in the real world. A configuration change the provider's schema marks
//! `replace_on_change` replaces the provider resource, and with it every resource it manages.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use super::context::StepContext;
use super::plan::{config_diff, provider_changed};
use super::request::ProviderBinding;
use super::result::{StepError, StepOutputs, StepResult};
use crate::events::StepInfo;
use crate::journal::JournalEntry;
use crate::provider::{DiffResult, Provider};
use crate::resource::ResourceState;
use crate::snapshot::PendingKind;
use crate::urn::provided_package;
use crate::value::Value;

impl StepContext {
    /// Configures the provider a provider resource describes (which checks the configuration),
    /// leaving the configuration as its outputs, and diffs it with the recorded one.
    pub(super) async fn configure_provider(
        &self,
        state: &mut ResourceState,
        old: Option<(usize, &ResourceState)>,
    ) -> Result<(Arc<dyn Provider>, Option<DiffResult>), StepError> {
        let package = provided_package(&state.ty).expect("a provider resource");
        let provider = (self.providers.configured(package, &state.inputs))
            .await
            .map_err(|e| self.fail(&state.urn, format!("cannot configure the provider: {e}")))?;
        state.outputs = state.inputs.clone();
        let schema = &provider.info().config;
        let diff = old.map(|(_, old)| config_diff(&old.inputs, &state.inputs, schema));
        Ok((provider, diff))
    }

    /// Records a changed configuration that replaces nothing.
    pub(super) async fn update_provider(
        &self,
        (old_index, old): (usize, &ResourceState),
        state: ResourceState,
        info: StepInfo,
    ) -> Result<StepResult, StepError> {
        let end = |seq, resource| JournalEntry::Updated {
            seq,
            old: old_index,
            resource,
        };
        let begun = (PendingKind::Updating, old, Some(old_index));
        (self.record_done(begun, state, end, (info, Instant::now()), None)).await
    }

    /// Records a new provider resource (replacing base resource `replaces`, if set).
    pub(super) async fn record_provider(
        &self,
        mut state: ResourceState,
        info: StepInfo,
        replaces: Option<usize>,
    ) -> Result<StepResult, StepError> {
        if !self.preview {
            state.id = new_provider_id();
        }
        let end = |seq, resource| JournalEntry::Created {
            seq,
            resource,
            replaces,
        };
        let subject = state.clone();
        let begun = (PendingKind::Creating, &subject, replaces);
        let started = Instant::now();
        (self.record_done(begun, state, end, (info, started), replaces)).await
    }

    /// Records an operation that needs no provider call (its begin and its `end` at once),
    /// leaving `state`, and reports it done.
    pub(super) async fn record_done(
        &self,
        (kind, subject, old): (PendingKind, &ResourceState, Option<usize>),
        state: ResourceState,
        end: impl FnOnce(u64, ResourceState) -> JournalEntry,
        (info, started): (StepInfo, Instant),
        replaced: Option<usize>,
    ) -> Result<StepResult, StepError> {
        let urn = state.urn.clone();
        let seq = (self.begin(kind, subject, old))
            .await
            .map_err(|e| self.persist_error(&urn, e))?;
        let outputs = state.outputs.clone();
        let id = match state.id.as_str() {
            "" => Value::Unknown,
            id => Value::String(id.to_owned()),
        };
        (self.record(|| end(seq, state)))
            .await
            .map_err(|e| self.persist_error(&urn, e))?;
        self.done(info, &outputs, started);
        Ok(StepResult {
            id,
            outputs: StepOutputs::Own(outputs),
            replaced,
            absent: false,
        })
    }

    /// Whether a resource recorded as `old` must be replaced because of its provider (see
    /// [`provider_changed`]).
    pub(super) fn provider_replaced(
        &self,
        old: &ResourceState,
        binding: Option<&ProviderBinding>,
    ) -> bool {
        provider_changed(old.provider.as_ref(), binding, |reference| {
            self.base.provider_config(reference)
        })
    }
}

/// A fresh provider resource id: unique within a stack, which is all it needs to be.
fn new_provider_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{nanos:x}-{n:x}")
}

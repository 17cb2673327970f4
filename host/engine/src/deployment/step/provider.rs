//! Steps of provider resources (`plinth:providers:<package>`): a provider configured one way,
//! recorded in the state so that what it manages is always driven with the configuration it was
//! created with. Creating one configures a provider (which checks the configuration) and changes
//! nothing in the real world. A configuration change the provider's schema marks
//! `replace_on_change` replaces the provider resource, and with it every resource it manages.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use super::{ProviderBinding, StepContext, StepError, StepOutputs, StepResult};
use crate::events::StepOp;
use crate::journal::JournalEntry;
use crate::resource::{ProviderRef, ResourceState};
use crate::snapshot::PendingKind;
use crate::urn::provided_package;
use crate::value::{PropertyMap, Value};

impl StepContext {
    pub(crate) async fn run_provider_resource(
        &self,
        mut state: ResourceState,
        old: Option<(usize, &ResourceState)>,
    ) -> Result<StepResult, StepError> {
        let urn = state.urn.clone();
        let package = provided_package(&state.ty).expect("a provider resource");
        let provider = (self.providers.configured(package, &state.inputs))
            .await
            .map_err(|e| self.fail(&urn, format!("cannot configure the provider: {e}")))?;
        state.outputs = state.inputs.clone();
        let Some((old_index, old)) = old else {
            let info = self.info(StepOp::Create, &state, None, Vec::new(), Vec::new());
            return self.record_provider(state, info, None).await;
        };
        let changed = changed_keys(&old.inputs, &state.inputs);
        if changed.is_empty() {
            state.id = old.id.clone();
            let info = self.info(StepOp::Same, &state, Some(old), Vec::new(), Vec::new());
            return self.same(old_index, old, state, info).await;
        }
        let replaces: Vec<String> = (changed.iter())
            .filter(|k| {
                (provider.info().config.iter()).any(|p| p.name == **k && p.replace_on_change)
            })
            .cloned()
            .collect();
        if replaces.is_empty() {
            state.id = old.id.clone();
            let info = self.info(StepOp::Update, &state, Some(old), changed, Vec::new());
            let end = |seq, resource| JournalEntry::Updated {
                seq,
                old: old_index,
                resource,
            };
            let begun = (PendingKind::Updating, old, Some(old_index));
            let started = Instant::now();
            return (self.record_done(begun, state, end, (info, started), None)).await;
        }
        if old.protect {
            return Err(self.fail(
                &urn,
                "cannot replace protected provider resource; remove `protect` first",
            ));
        }
        let info = self.info(StepOp::Replace, &state, Some(old), changed, replaces);
        self.record_provider(state, info, Some(old_index)).await
    }

    /// Records a new provider resource (replacing base resource `replaces`, if set).
    async fn record_provider(
        &self,
        mut state: ResourceState,
        info: crate::events::StepInfo,
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
    pub(crate) async fn record_done(
        &self,
        (kind, subject, old): (PendingKind, &ResourceState, Option<usize>),
        state: ResourceState,
        end: impl FnOnce(u64, ResourceState) -> JournalEntry,
        (info, started): (crate::events::StepInfo, Instant),
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

    /// Whether a resource recorded as `old` must be replaced because of its provider: the
    /// provider resource was replaced in this run, or the resource moves to another provider
    /// resource configured differently.
    pub(crate) fn provider_replaced(
        &self,
        old: &ResourceState,
        binding: Option<&ProviderBinding>,
    ) -> bool {
        let Some(binding) = binding else {
            return false;
        };
        if binding.replaced {
            return true;
        }
        match &old.provider {
            Some(reference) if reference.urn != binding.reference.urn => {
                let old_config =
                    (self.base_providers.get(reference)).map(|&i| &self.base.resources[i].outputs);
                old_config != Some(&binding.config)
            }
            _ => false,
        }
    }
}

/// The top-level keys whose values differ between two configurations.
fn changed_keys(old: &PropertyMap, new: &PropertyMap) -> Vec<String> {
    let mut keys: Vec<&String> = old.keys().chain(new.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|k| old.get(*k) != new.get(*k))
        .cloned()
        .collect()
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

/// The reference a resource records to the provider resource `urn` with `id`.
pub(crate) fn reference(urn: crate::urn::Urn, id: &Value) -> ProviderRef {
    ProviderRef {
        urn,
        id: id.as_str().unwrap_or_default().to_owned(),
    }
}

/// The provider resources of a state, by the reference resources record to them.
pub(crate) fn providers_by_reference(
    resources: &[crate::resource::ResourceState],
) -> HashMap<crate::resource::ProviderRef, usize> {
    (resources.iter().enumerate())
        .filter(|(_, r)| provided_package(&r.ty).is_some())
        .map(|(i, r)| (reference(r.urn.clone(), &Value::String(r.id.clone())), i))
        .collect()
}

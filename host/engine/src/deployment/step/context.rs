//! What every step of one deployment shares, and the small acts every kind of step performs:
//! failing with context, finding the provider, recording, reporting to the display.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::{Claims, ResourceStep, StepError};
use crate::deployment::limit::StepLimit;
use crate::deployment::target::TargetSet;
use crate::events::{ChangeSummary, Event, EventSink, StepInfo, StepOp};
use crate::journal::{JournalEntry, SnapshotError, SnapshotManager};
use crate::provider::{Provider, ProviderError, ProviderSource};
use crate::resource::{ProviderRef, ResourceState};
use crate::snapshot::{PendingKind, Snapshot};
use crate::urn::{Urn, is_counted, package_of};
use crate::value::PropertyMap;

/// What every step of one deployment shares.
pub(crate) struct StepContext {
    pub preview: bool,
    pub providers: Arc<dyn ProviderSource>,
    pub recorder: Option<SnapshotManager>,
    pub events: EventSink,
    /// The state the deployment started from, shared with the snapshot manager.
    pub base: Arc<Snapshot>,
    /// Live base resources by URN.
    pub base_live: HashMap<Urn, usize>,
    /// Base resources naming a URN as parent or dependency, by that URN.
    pub base_dependents: HashMap<Urn, Vec<usize>>,
    pub claims: Mutex<Claims>,
    /// `--parallel`: steps take their turn in the order they became ready.
    pub limit: StepLimit,
    /// The first Ctrl-C: ends every wait (for a permit, a claimed step, a delete in progress).
    pub cancel: CancellationToken,
    /// `--target`: only these resources change; `None` targets everything.
    pub targets: Option<TargetSet>,
    /// `--replace`: resources to replace whatever their diff says.
    pub replace: HashSet<Urn>,
    /// Provider resources of the base state, by reference.
    pub base_providers: HashMap<ProviderRef, usize>,
    /// Set when no new step may start: a step waiting for a permit gives up once it has one.
    pub halted: AtomicBool,
    /// `--continue-on-error`: a failure does not halt the operation.
    pub continue_on_error: bool,
    pub changes: std::sync::Mutex<ChangeSummary>,
}

impl StepContext {
    pub(crate) fn fail(&self, urn: &Urn, message: impl Into<String>) -> StepError {
        StepError::Resource {
            urn: urn.clone(),
            message: message.into(),
        }
    }

    /// The provider that manages `state`: configured as its provider resource is (`config`
    /// for a binding made in this run, else as recorded in the base state), or from the stack
    /// configuration for a state recorded before provider resources were.
    pub(crate) async fn provider_for(
        &self,
        state: &ResourceState,
        config: Option<&PropertyMap>,
    ) -> Result<Arc<dyn Provider>, StepError> {
        let package = package_of(&state.ty);
        let config = config.or_else(|| {
            let reference = state.provider.as_ref()?;
            let &index = self.base_providers.get(reference)?;
            Some(&self.base.resources[index].outputs)
        });
        match config {
            Some(config) => self.providers.configured(package, config).await,
            None => self.providers.provider(package).await,
        }
        .map_err(|cause| StepError::Plugin {
            plugin: package.to_owned(),
            cause,
        })
    }

    pub(crate) fn provider_error(&self, urn: &Urn, action: &str, e: ProviderError) -> StepError {
        let plugin = package_of(urn.ty());
        self.fail(urn, format!("{action} failed in plugin `{plugin}`: {e}"))
    }

    pub(crate) async fn record(
        &self,
        entry: impl FnOnce() -> JournalEntry,
    ) -> Result<(), SnapshotError> {
        match &self.recorder {
            // Recording may carry kept states over, with what they depend on.
            Some(r) if self.targets.is_some() => self.record_after_in_flight(r, entry()).await,
            Some(r) => r.record(entry()).await,
            None => Ok(()),
        }
    }

    pub(crate) async fn begin(
        &self,
        kind: PendingKind,
        state: &ResourceState,
        old: Option<usize>,
    ) -> Result<u64, SnapshotError> {
        match &self.recorder {
            Some(r) => r.begin(kind, state, old).await,
            None => Ok(0),
        }
    }

    pub(crate) fn persist_error(&self, urn: &Urn, e: SnapshotError) -> StepError {
        self.fail(urn, e.to_string())
    }

    pub fn halt(&self) {
        self.halted.store(true, Ordering::Relaxed);
    }

    pub fn is_halted(&self) -> bool {
        self.halted.load(Ordering::Relaxed)
    }

    /// Waits for `wait`, unless the operation is cancelled first.
    pub(crate) async fn unless_cancelled<T>(
        &self,
        wait: impl Future<Output = T>,
    ) -> Result<T, StepError> {
        tokio::select! {
            biased;
            _ = self.cancel.cancelled() => Err(StepError::Halted),
            done = wait => Ok(done),
        }
    }

    /// After a failure no new step starts (unless `--continue-on-error`): halting here, before
    /// the permit is given back, keeps a step that waits for it from starting.
    pub(crate) fn halt_on_failure<T>(&self, result: &Result<T, StepError>) {
        if result.is_err() && !self.continue_on_error {
            self.halt();
        }
    }

    fn count(&self, op: StepOp) {
        self.changes.lock().expect("change counter").record(op);
    }

    /// The live base resource with `urn`, or else with one of its `aliases`.
    pub(crate) fn live_base_index_of(&self, urn: &Urn, aliases: &[Urn]) -> Option<usize> {
        std::iter::once(urn)
            .chain(aliases)
            .find_map(|u| self.base_live.get(u).copied())
    }

    /// The URNs of a registration's `aliases`: a full URN, or a bare old name (same type and
    /// parent).
    pub(crate) fn aliases(&self, step: &ResourceStep) -> Result<Vec<Urn>, StepError> {
        let name = step.urn.name();
        (step.request.options.aliases.iter())
            .map(|alias| {
                if alias.starts_with("urn:") {
                    Urn::parse(alias).map_err(|e| self.fail(&step.urn, format!("alias: {e}")))
                } else {
                    let prefix = &step.urn.as_str()[..step.urn.as_str().len() - name.len()];
                    Ok(Urn::parse(&format!("{prefix}{alias}")).expect("same shape"))
                }
            })
            .collect()
    }

    /// Runs a provider call under the resource's custom timeout, if it has one. A call that runs
    /// out of time is abandoned and its operation stays recorded as pending: it may still
    /// finish in the real world, and `plinth refresh` finds out.
    pub(crate) async fn timed<T>(
        &self,
        urn: &Urn,
        action: &str,
        timeout: Option<u32>,
        call: impl Future<Output = Result<T, ProviderError>>,
    ) -> Result<Result<T, ProviderError>, StepError> {
        let Some(seconds) = timeout else {
            return Ok(call.await);
        };
        tokio::time::timeout(Duration::from_secs(seconds.into()), call)
            .await
            .map_err(|_| {
                self.fail(
                    urn,
                    format!(
                        "{action} timed out after {seconds}s (custom_timeouts); the operation is \
                         recorded as pending — run `plinth refresh` to see what happened"
                    ),
                )
            })
    }

    pub(crate) fn info(
        &self,
        op: StepOp,
        state: &ResourceState,
        old: Option<&ResourceState>,
        changed: Vec<String>,
        replaces: Vec<String>,
    ) -> StepInfo {
        // A step that changes nothing shows nothing: no property trees copied into its events.
        let shown = op != StepOp::Same;
        StepInfo {
            op,
            urn: state.urn.clone(),
            parent: state.parent.clone(),
            custom: state.custom,
            old_inputs: old.filter(|_| shown).map(|o| o.inputs.clone()),
            new_inputs: shown.then(|| state.inputs.clone()),
            changed,
            replaces,
        }
    }

    pub(crate) fn done(&self, info: StepInfo, outputs: &PropertyMap, started: Instant) {
        // Summaries count real resources: not provider resources, nor the stack's root.
        if is_counted(info.urn.ty()) {
            self.count(info.op);
        }
        let outputs = (info.op == StepOp::Create).then(|| outputs.clone());
        self.events.emit(Event::StepDone {
            step: info,
            outputs,
            duration: started.elapsed(),
        });
    }

    pub(crate) fn failed(&self, info: StepInfo, error: &StepError) {
        let message = match error {
            StepError::Resource { message, .. } => message.clone(),
            StepError::Plugin { cause, .. } => cause.to_string(),
            StepError::Halted => StepError::Halted.to_string(),
        };
        self.events.emit(Event::StepFailed {
            step: info,
            error: message,
        });
    }
}

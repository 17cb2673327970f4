//! What every step of one deployment shares, and the small acts every kind of step performs:
//! failing with context, finding the provider, recording, reporting to the display.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::base::BaseState;
use super::claims::Claims;
use super::request::ResourceStep;
use super::result::StepError;
use crate::deployment::limit::{Reservation, StepLimit};
use crate::deployment::options::Options;
use crate::deployment::target::TargetSet;
use crate::events::{ChangeSummary, Event, EventSink, StepInfo, StepOp};
use crate::journal::{JournalEntry, SnapshotError, SnapshotManager};
use crate::plan::PlanGuard;
use crate::policy::{PolicyPacks, PolicyResource};
use crate::provider::{Provider, ProviderError, ProviderSource};
use crate::resource::ResourceState;
use crate::snapshot::{PendingKind, Snapshot};
use crate::urn::{Urn, is_counted, package_of};
use crate::value::PropertyMap;

/// What every step of one deployment shares. The scheduler reaches it through the methods
/// below; its fields are the step family's own.
pub(crate) struct StepContext {
    // What the steps act on and report to.
    pub(super) providers: Arc<dyn ProviderSource>,
    pub(super) recorder: Option<SnapshotManager>,
    pub(super) events: EventSink,
    pub(super) base: BaseState,
    // The options that shape every step.
    pub(super) preview: bool,
    /// `--target`: only these resources change; `None` targets everything.
    pub(super) targets: Option<TargetSet>,
    /// `--replace`: resources to replace whatever their diff says.
    pub(super) replace: HashSet<Urn>,
    /// `--continue-on-error`: a failure does not halt the operation.
    continue_on_error: bool,
    /// `up --plan`: what each step must be before it runs.
    plan: Option<Arc<PlanGuard>>,
    // How the steps coordinate.
    pub(super) claims: Mutex<Claims>,
    /// `--parallel`: steps take their turn in the order they became ready.
    limit: StepLimit,
    /// The first Ctrl-C: ends every wait (for a permit, a claimed step, a delete in progress).
    cancel: CancellationToken,
    /// Set when no new step may start: a step waiting for a permit gives up once it has one.
    halted: AtomicBool,
    changes: Mutex<ChangeSummary>,
    /// The policy packs that judge each change, and the resources they judge the stack by.
    pub(super) policies: PolicyPacks,
    pub(super) policy_resources: Mutex<Vec<PolicyResource>>,
    /// The advisory and mandatory violations each pack reported, in the packs' order.
    pub(super) policy_counts: Mutex<Vec<(u64, u64)>>,
}

impl StepContext {
    pub(crate) fn new(
        options: &Options,
        base: Arc<Snapshot>,
        providers: Arc<dyn ProviderSource>,
        recorder: Option<SnapshotManager>,
        events: EventSink,
        cancel: CancellationToken,
    ) -> StepContext {
        StepContext {
            providers,
            recorder,
            events,
            preview: options.preview,
            targets: (options.targets.clone()).map(|t| TargetSet::new(t, &base.resources)),
            replace: options.replace.clone(),
            continue_on_error: options.continue_on_error,
            plan: options.plan.clone(),
            base: BaseState::new(base),
            claims: Mutex::default(),
            limit: StepLimit::new(options.parallel, cancel.clone()),
            cancel,
            halted: AtomicBool::default(),
            changes: Mutex::default(),
            policies: options.policies.clone(),
            policy_resources: Mutex::default(),
            policy_counts: Mutex::new(vec![(0, 0); options.policies.0.len()]),
        }
    }

    pub(crate) fn preview(&self) -> bool {
        self.preview
    }

    pub(crate) fn base(&self) -> &BaseState {
        &self.base
    }

    pub(crate) fn targets(&self) -> Option<&TargetSet> {
        self.targets.as_ref()
    }

    /// Which base resources the steps took charge of so far.
    pub(crate) fn claims(&self) -> MutexGuard<'_, Claims> {
        self.claims.lock().expect("claims")
    }

    /// Takes the next place in line for a permit to run (see [`StepLimit::reserve`]).
    pub(crate) fn reserve(&self) -> Reservation {
        self.limit.reserve()
    }

    /// What the steps changed so far.
    pub(crate) fn changes(&self) -> ChangeSummary {
        self.changes.lock().expect("change counter").clone()
    }
}

impl StepContext {
    /// Refuses a step the plan being applied does not have, before it runs. `step` is made
    /// only under a plan: it copies the inputs.
    pub(super) fn planned(&self, step: impl FnOnce() -> StepInfo) -> Result<(), StepError> {
        let Some(plan) = &self.plan else {
            return Ok(());
        };
        let step = step();
        plan.admit(&step).map_err(|difference| {
            self.fail(
                &step.urn,
                format!("refused before it ran, as the plan does not have it: {difference}"),
            )
        })
    }

    pub(super) fn fail(&self, urn: &Urn, message: impl Into<String>) -> StepError {
        StepError::Resource {
            urn: urn.clone(),
            message: message.into(),
        }
    }

    /// The provider that manages `state`: configured as its provider resource is (`config`
    /// for a binding made in this run, else as recorded in the base state), or from the stack
    /// configuration for a state recorded before provider resources were.
    pub(super) async fn provider_for(
        &self,
        state: &ResourceState,
        config: Option<&PropertyMap>,
    ) -> Result<Arc<dyn Provider>, StepError> {
        let package = package_of(&state.ty);
        let config = config.or_else(|| {
            let reference = state.provider.as_ref()?;
            self.base.provider_config(reference)
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

    pub(super) fn provider_error(&self, urn: &Urn, action: &str, e: ProviderError) -> StepError {
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

    pub(super) async fn begin(
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

    pub(super) fn persist_error(&self, urn: &Urn, e: SnapshotError) -> StepError {
        self.fail(urn, e.to_string())
    }

    pub(crate) fn halt(&self) {
        self.halted.store(true, Ordering::Relaxed);
    }

    pub(crate) fn is_halted(&self) -> bool {
        self.halted.load(Ordering::Relaxed)
    }

    /// Waits for `wait`, unless the operation is cancelled first.
    pub(super) async fn unless_cancelled<T>(
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
    pub(super) fn halt_on_failure<T>(&self, result: &Result<T, StepError>) {
        if result.is_err() && !self.continue_on_error {
            self.halt();
        }
    }

    fn count(&self, op: StepOp) {
        self.changes.lock().expect("change counter").record(op);
    }

    /// The live base resource with `urn`, or else with one of its `aliases`.
    pub(super) fn live_base_index_of(&self, urn: &Urn, aliases: &[Urn]) -> Option<usize> {
        std::iter::once(urn)
            .chain(aliases)
            .find_map(|u| self.base.live(u))
    }

    /// The URNs of a registration's `aliases`: a full URN, or a bare old name (same type and
    /// parent).
    pub(super) fn aliases(&self, step: &ResourceStep) -> Result<Vec<Urn>, StepError> {
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
    pub(super) async fn timed<T>(
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

    pub(super) fn info(
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
            write_only: Vec::new(),
        }
    }

    pub(super) fn done(&self, info: StepInfo, outputs: &PropertyMap, started: Instant) {
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

    pub(super) fn failed(&self, info: StepInfo, error: &StepError) {
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

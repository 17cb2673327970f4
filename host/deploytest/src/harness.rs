//! Runs deployments and refreshes of scripted programs on the fake provider, keeping the
//! provider's world and the stack's snapshot across runs.

use std::sync::{Arc, Mutex};

use plinth_engine::deployment::{self, Options, Outcome};
use plinth_engine::events::{Event, EventSink};
use plinth_engine::journal::{JournalEntry, SnapshotManager, replay};
use plinth_engine::program::Program;
use plinth_engine::refresh::{self, RefreshOptions, RefreshOutcome};
use plinth_engine::snapshot::Snapshot;
use plinth_engine::urn::{Urn, is_counted};
use tokio_util::sync::CancellationToken;

use crate::persister::CheckingPersister;
use crate::program::{Decl, ScriptProgram};
use crate::provider::{FakeProvider, FakeProviders};

type Journal = Arc<Mutex<Vec<JournalEntry>>>;
type Saved = Arc<Mutex<Option<Snapshot>>>;

/// Called with each event of a deployment as it is emitted.
pub type EventWatcher = Arc<dyn Fn(&Event) + Send + Sync>;

/// Everything one test needs: the provider's world and the stack's snapshot across runs.
pub struct Harness {
    pub provider: Arc<FakeProvider>,
    /// Provider calls in flight at most.
    pub parallel: usize,
    pub snapshot: Snapshot,
    pub checks: Arc<Mutex<usize>>,
    /// Cancels the runs (a fresh token each `Harness::new`).
    pub cancel: CancellationToken,
    /// The events of the last deployment, in order.
    pub events: Vec<Event>,
    /// The journal entries the last deployment or refresh recorded, in order.
    pub journal: Vec<JournalEntry>,
    /// Sees each event of a deployment as it is emitted: what a test orders calls by when the
    /// order it needs is one of the engine's own events.
    pub on_event: Option<EventWatcher>,
}

impl Default for Harness {
    fn default() -> Harness {
        Harness::new()
    }
}

impl Harness {
    pub fn new() -> Harness {
        Harness {
            provider: FakeProvider::new(),
            parallel: 4,
            snapshot: Snapshot::default(),
            checks: Arc::new(Mutex::new(0)),
            cancel: CancellationToken::new(),
            events: Vec::new(),
            journal: Vec::new(),
            on_event: None,
        }
    }

    pub async fn run(&mut self, program: Box<dyn Program>, preview: bool) -> Outcome {
        self.run_with(program, preview, Options::default()).await
    }

    /// Runs with `options` (targets, replace, continue-on-error); the harness sets the rest.
    pub async fn run_with(
        &mut self,
        program: Box<dyn Program>,
        preview: bool,
        options: Options,
    ) -> Outcome {
        let (recorder, journal, saved) = self.recorder(preview);
        let options = Options {
            project: "proj".into(),
            stack: "dev".into(),
            preview,
            parallel: self.parallel,
            ..options
        };
        let (events, mut received) = EventSink::new();
        let watcher = match self.on_event.clone() {
            Some(on_event) => Ok(tokio::spawn(async move {
                let mut seen = Vec::new();
                while let Some(event) = received.recv().await {
                    on_event(&event);
                    seen.push(event);
                }
                seen
            })),
            None => Err(received),
        };
        let outcome = deployment::run(
            options,
            self.snapshot.clone(),
            program,
            Arc::new(FakeProviders(self.provider.clone())),
            recorder,
            events,
            self.cancel.clone(),
        )
        .await;
        self.events = match watcher {
            // The deployment has let go of every sink: the watcher has seen the last event.
            Ok(watcher) => watcher.await.expect("event watcher"),
            Err(mut received) => std::iter::from_fn(|| received.try_recv().ok()).collect(),
        };
        self.take_saved(&journal, &saved);
        outcome
    }

    /// A snapshot manager for a run on the current snapshot (none in preview), the journal it
    /// records and where its final snapshot is saved.
    fn recorder(&self, preview: bool) -> (Option<SnapshotManager>, Journal, Saved) {
        let journal = Journal::default();
        let saved = Saved::default();
        let recorder = (!preview).then(|| {
            SnapshotManager::start(
                self.snapshot.clone(),
                Box::new(CheckingPersister {
                    base: self.snapshot.clone(),
                    entries: journal.clone(),
                    checks: self.checks.clone(),
                    saved: saved.clone(),
                }),
            )
        });
        (recorder, journal, saved)
    }

    /// Takes in the snapshot a run saved, checking that the replay of its journal gives exactly
    /// that snapshot, and keeps the journal.
    fn take_saved(&mut self, journal: &Journal, saved: &Saved) {
        self.journal = std::mem::take(&mut *journal.lock().unwrap());
        if let Some(snapshot) = saved.lock().unwrap().take() {
            snapshot.verify_integrity().unwrap();
            let replayed =
                replay(self.snapshot.clone(), self.journal.clone()).expect("the journal replays");
            assert_eq!(
                replayed, snapshot,
                "the journal's replay differs from the engine's snapshot"
            );
            self.snapshot = snapshot;
        }
    }

    pub async fn up(&mut self, decls: Vec<Decl>) -> Outcome {
        let program = ScriptProgram {
            decls,
            apply_runs: Arc::default(),
        };
        self.run(Box::new(program), false).await
    }

    pub async fn up_with(&mut self, decls: Vec<Decl>, options: Options) -> Outcome {
        let program = ScriptProgram {
            decls,
            apply_runs: Arc::default(),
        };
        self.run_with(Box::new(program), false, options).await
    }

    /// Refreshes the state; with `preview`, records nothing.
    pub async fn refresh(&mut self, options: RefreshOptions) -> RefreshOutcome {
        let (recorder, journal, saved) = self.recorder(options.preview);
        let options = RefreshOptions {
            parallel: self.parallel,
            ..options
        };
        let outcome = refresh::run(
            options,
            self.snapshot.clone(),
            Arc::new(FakeProviders(self.provider.clone())),
            recorder,
            EventSink::discard(),
            CancellationToken::new(),
        )
        .await;
        self.take_saved(&journal, &saved);
        outcome
    }

    /// The recorded state of the live resource `name`.
    pub fn state(&self, name: &str) -> &plinth_engine::resource::ResourceState {
        self.snapshot
            .live_resources()
            .find(|r| r.urn.name() == name)
            .unwrap_or_else(|| panic!("no live resource {name}: {:?}", self.names()))
    }

    /// The URN the harness gives resource `name`.
    pub fn urn(name: &str) -> Urn {
        Urn::new("dev", "proj", None, "fake:Thing", name)
    }

    pub fn sorted_names(&self) -> Vec<String> {
        let mut names = self.names();
        names.sort();
        names
    }

    /// The resources in the state (provider resources left out), in state order.
    pub fn names(&self) -> Vec<String> {
        self.snapshot
            .resources
            .iter()
            .filter(|r| is_counted(&r.ty))
            .map(|r| format!("{}{}", r.urn.name(), if r.delete { "(delete)" } else { "" }))
            .collect()
    }
}

/// Runs `run`, turning a hang (a deadlock) into a failure. The bound is far above any honest
/// run's duration; nothing waits on it to order anything.
pub async fn bounded<T>(run: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(std::time::Duration::from_secs(60), run)
        .await
        .expect("the deployment hung (a deadlock?)")
}

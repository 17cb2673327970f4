//! The engine and the local backend at the scale DESIGN.md designs for: `up` creating 10,000
//! resources with durable state, then a no-op `up` and a `preview` of them, on an in-process
//! provider that answers at once (`plinth-deploytest`'s fake, so the figures are plinth's own
//! cost). Prints its figures.
//!
//! `cargo bench -p plinth-backend --bench deploy` (PLINTH_BENCH_RESOURCES changes the count).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use plinth_backend::LocalBackend;
use plinth_deploytest::{FakeProvider, FakeProviders};
use plinth_engine::deployment::{self, Options};
use plinth_engine::events::EventSink;
use plinth_engine::journal::{JournalEntry, PersistError, Persister, SnapshotManager};
use plinth_engine::program::{Monitor, Program, ProgramError, RegisterRequest};
use plinth_engine::snapshot::Snapshot;
use plinth_engine::value::{OutputField, OutputRef, PropertyMap, Value};
use tokio_util::sync::CancellationToken;

/// `count` resources in chains of ten: each takes the previous one's `out` as an input.
struct Chains {
    count: usize,
}

#[async_trait]
impl Program for Chains {
    async fn run(&mut self, monitor: &Monitor) -> Result<(), ProgramError> {
        let mut previous = None;
        for i in 0..self.count {
            let mut inputs = PropertyMap::new();
            inputs.insert("size".into(), Value::Number(i as f64));
            inputs.insert(
                "label".into(),
                Value::String(format!("resource number {i}")),
            );
            if let Some(handle) = previous.filter(|_| i % 10 != 0) {
                let out = OutputRef {
                    handle,
                    field: OutputField::Property(vec!["out".into()]),
                };
                inputs.insert("prev".into(), Value::Output(out));
            }
            previous = Some(
                monitor
                    .register_resource(RegisterRequest {
                        ty: "fake:Thing".into(),
                        name: format!("r{i}"),
                        custom: true,
                        inputs,
                        options: Default::default(),
                    })
                    .expect("within the budget"),
            );
        }
        Ok(())
    }
    async fn resume(&mut self, _: &Monitor, a: u64, _: Vec<Value>) -> Result<Value, ProgramError> {
        Err(ProgramError(format!("no apply {a}")))
    }
}

/// Counts the bytes of the journal entries it forwards.
struct Counting {
    inner: Box<dyn Persister>,
    journal_bytes: Arc<AtomicU64>,
}

impl Persister for Counting {
    fn append(&mut self, entry: &JournalEntry) -> Result<(), PersistError> {
        let line = serde_json::to_vec(entry)
            .map_err(|e| PersistError::invalid("measure", "<journal entry>", e))?;
        self.journal_bytes
            .fetch_add(line.len() as u64 + 1, Ordering::Relaxed);
        self.inner.append(entry)
    }
    fn sync(&mut self) -> Result<(), PersistError> {
        self.inner.sync()
    }
    fn compact(&mut self, snapshot: &Snapshot) -> Result<(), PersistError> {
        self.inner.compact(snapshot)
    }
}

struct Run {
    took: Duration,
    journal_bytes: u64,
    changes: usize,
}

async fn deploy(
    backend: &LocalBackend,
    count: usize,
    preview: bool,
    provider: &Arc<FakeProvider>,
) -> Run {
    let loaded = backend.load(&bench_project(), &dev_stack()).expect("load");
    let journal_bytes = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let lock = (!preview).then(|| {
        backend
            .lock(&bench_project(), &dev_stack(), "up")
            .expect("lock")
    });
    let recorder = lock.as_ref().map(|lock| {
        let inner = backend
            .begin_update(&bench_project(), &dev_stack(), &loaded, lock)
            .expect("begin");
        let persister = Counting {
            inner,
            journal_bytes: journal_bytes.clone(),
        };
        SnapshotManager::start(loaded.snapshot.clone(), Box::new(persister))
    });
    let options = Options {
        project: "bench".into(),
        stack: "dev".into(),
        preview,
        parallel: 16,
        config: BTreeMap::new(),
        ..Options::default()
    };
    let outcome = deployment::run(
        options,
        loaded.snapshot,
        Box::new(Chains { count }),
        Arc::new(FakeProviders(provider.clone())),
        recorder,
        EventSink::discard(),
        CancellationToken::new(),
    )
    .await;
    assert!(outcome.errors.is_empty(), "{:?}", outcome.errors);
    Run {
        took: started.elapsed(),
        journal_bytes: journal_bytes.load(Ordering::Relaxed),
        changes: outcome.changes.changes(),
    }
}

fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kib: f64 = (status.lines())
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0.0);
    kib / 1024.0
}

fn main() {
    let count: usize = std::env::var("PLINTH_BENCH_RESOURCES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(10_000);
    let dir = tempfile::tempdir().expect("temp dir");
    let url = format!("file://{}", dir.path().display());
    let backend = LocalBackend::from_url(Some(&url)).expect("backend");
    backend
        .create_stack(&bench_project(), &dev_stack())
        .expect("stack");
    let provider = FakeProvider::new();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let up = deploy(&backend, count, false, &provider).await;
        assert_eq!(up.changes, count);
        let checkpoint = std::fs::read_dir(dir.path().join("stacks/bench"))
            .expect("stack dir")
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
            .map(|e| e.metadata().map_or(0, |m| m.len()))
            .max()
            .unwrap_or(0);
        let noop = deploy(&backend, count, false, &provider).await;
        assert_eq!(noop.changes, 0);
        let preview = deploy(&backend, count, true, &provider).await;
        println!("{count} resources (chains of 10), in-process provider, local backend:");
        println!("  up, creating all:  {:>8.3} s", up.took.as_secs_f64());
        println!("  up, no changes:    {:>8.3} s", noop.took.as_secs_f64());
        println!("  preview:           {:>8.3} s", preview.took.as_secs_f64());
        println!(
            "  journal written by the first up: {:.1} MiB = {:.2}x the final checkpoint ({:.1} MiB)",
            up.journal_bytes as f64 / 1048576.0,
            up.journal_bytes as f64 / checkpoint.max(1) as f64,
            checkpoint as f64 / 1048576.0
        );
        println!("  peak RSS: {:.0} MiB", peak_rss_mib());
    });
}

fn bench_project() -> plinth_engine::names::ProjectName {
    plinth_engine::names::ProjectName::new("bench").expect("project name")
}

fn dev_stack() -> plinth_engine::names::StackName {
    plinth_engine::names::StackName::new("dev").expect("stack name")
}

//! What the team service does with an update's journal, at the scale DESIGN.md designs for:
//! checking a batch of 100 entries as it arrives, rebuilding the version an `up` of 10,000
//! resources leaves (no base, its journal in batches as a client sends them) and the version a
//! `destroy` of them leaves (their ~5 MB checkpoint as base). Prints the median and fastest wall
//! time of each, and the CPU time the process spent per run (all threads).
//!
//! `cargo bench -p plinth-backend --bench rebuild` (PLINTH_BENCH_RESOURCES changes the count,
//! PLINTH_BENCH_RUNS the runs).

use std::path::Path;
use std::time::{Duration, Instant};

use plinth_backend::{ParsedBatch, rebuild_sealed};
use plinth_engine::journal::JournalEntry;
use plinth_engine::names::{ProjectName, StackName};
use plinth_engine::resource::{ProviderRef, ResourceState};
use plinth_engine::snapshot::PendingKind;
use plinth_engine::urn::Urn;
use plinth_engine::value::{PropertyMap, Value};

/// plinth-serve's allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The most entries a client sends in one request.
const BATCH: usize = 100;
/// How many resources depend on each other in a row (the bench's `chains` shape).
const CHAIN: usize = 10;

fn main() {
    let count = env_number("PLINTH_BENCH_RESOURCES", 10_000);
    let runs = env_number("PLINTH_BENCH_RUNS", 15);
    let project = ProjectName::new("bench").unwrap();
    let stack = StackName::new("dev").unwrap();
    let origin = Path::new("bench");
    let resources = resources(count);

    let up = batches(&up_journal(&resources));
    let entries: usize = up.iter().map(|b| b.len()).sum();
    println!(
        "up journal: {} entries in {} batches, {:.1} MB",
        2 * resources.len(),
        up.len(),
        entries as f64 / 1e6
    );
    let rebuild_up = || rebuild_sealed(&project, &stack, None, &up, None, origin).unwrap();
    let base = rebuild_up();
    report("rebuild of the up", runs, rebuild_up);

    let destroy = batches(&destroy_journal(&resources));
    println!(
        "destroy: base {:.1} MB, journal of {} batches",
        base.len() as f64 / 1e6,
        destroy.len()
    );
    report("rebuild of the destroy", runs, || {
        rebuild_sealed(&project, &stack, Some(&base), &destroy, None, origin).unwrap()
    });

    let batch: Vec<String> = (up_journal(&resources).iter().skip(2 * count / 3))
        .take(BATCH)
        .map(|e| serde_json::to_string(e).unwrap())
        .collect();
    report("check of a batch of 100 entries", runs * 20, || {
        drop(ParsedBatch::check(batch.iter().map(String::as_str)).unwrap())
    });
}

/// Runs `work` `runs` times after one unmeasured run, and prints its figures.
fn report<T>(what: &str, runs: usize, mut work: impl FnMut() -> T) {
    drop(work());
    let cpu = process_cpu();
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            drop(work());
            start.elapsed()
        })
        .collect();
    let cpu = (process_cpu() - cpu) / runs as u32;
    times.sort();
    println!(
        "{what}: median {:.2} ms, fastest {:.2} ms, CPU {:.2} ms a run ({runs} runs)",
        ms(times[runs / 2]),
        ms(times[0]),
        ms(cpu)
    );
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The CPU time of every thread of this process so far (user and system), from
/// `/proc/self/stat` (fields 14 and 15, in clock ticks of 10 ms).
fn process_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after_name = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let ticks: u64 = (after_name.split_whitespace().skip(11).take(2))
        .filter_map(|t| t.parse::<u64>().ok())
        .sum();
    Duration::from_millis(ticks * 10)
}

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn urn(ty: &str, name: &str) -> Urn {
    Urn::new("dev", "bench", None, ty, name)
}

fn string(s: impl Into<String>) -> Value {
    Value::String(s.into())
}

/// A provider resource, then `count` resources in chains, each managed by that provider, with
/// inputs and outputs of about the size a cloud resource has (a 10,000 checkpoint is ~5 MB).
fn resources(count: usize) -> Vec<ResourceState> {
    let provider = ResourceState {
        urn: urn("plinth:providers:bench", "default"),
        ty: "plinth:providers:bench".into(),
        custom: true,
        id: "provider-0".into(),
        inputs: PropertyMap::new(),
        outputs: PropertyMap::new(),
        parent: None,
        dependencies: vec![],
        protect: false,
        retain_on_delete: false,
        delete: false,
        provider: None,
        custom_timeouts: None,
    };
    let reference = ProviderRef {
        urn: provider.urn.clone(),
        id: provider.id.clone(),
    };
    let mut all = vec![provider];
    for i in 0..count {
        let name = format!("item-{i:05}");
        let inputs: PropertyMap = [
            ("name".to_owned(), string(&name)),
            ("size".to_owned(), Value::Integer(i as i64 % 100)),
            ("region".to_owned(), string("eu-west-3")),
            (
                "tags".to_owned(),
                Value::Object(
                    [
                        ("team".to_owned(), string("platform")),
                        ("chain".to_owned(), string(format!("c{}", i / CHAIN))),
                    ]
                    .into(),
                ),
            ),
        ]
        .into();
        let mut outputs = inputs.clone();
        outputs.insert(
            "arn".to_owned(),
            string(format!("arn:bench:eu-west-3:000000000000:item/{name}")),
        );
        outputs.insert("ready".to_owned(), Value::Bool(true));
        let dependencies = if i % CHAIN == 0 {
            vec![]
        } else {
            vec![all[all.len() - 1].urn.clone()]
        };
        all.push(ResourceState {
            urn: urn("bench:index:Item", &name),
            ty: "bench:index:Item".into(),
            custom: true,
            id: format!("{name}-{i:08x}"),
            inputs,
            outputs,
            parent: None,
            dependencies,
            protect: false,
            retain_on_delete: false,
            delete: false,
            provider: Some(reference.clone()),
            custom_timeouts: None,
        });
    }
    all
}

/// Creating `resources` in order: a `begin` (inputs only) and a `created` for each.
fn up_journal(resources: &[ResourceState]) -> Vec<JournalEntry> {
    let mut entries = Vec::with_capacity(2 * resources.len());
    for (seq, resource) in (1..).zip(resources) {
        let begun = ResourceState {
            id: String::new(),
            outputs: PropertyMap::new(),
            ..resource.clone()
        };
        entries.push(JournalEntry::Begin {
            seq,
            kind: PendingKind::Creating,
            resource: begun,
            old: None,
        });
        entries.push(JournalEntry::Created {
            seq,
            resource: resource.clone(),
            replaces: None,
        });
    }
    entries
}

/// Deleting `resources`, recorded in this order, dependents first.
fn destroy_journal(resources: &[ResourceState]) -> Vec<JournalEntry> {
    let mut entries = Vec::with_capacity(2 * resources.len());
    for (seq, (old, resource)) in (1..).zip(resources.iter().enumerate().rev()) {
        entries.push(JournalEntry::Begin {
            seq,
            kind: PendingKind::Deleting,
            resource: resource.clone(),
            old: Some(old),
        });
        entries.push(JournalEntry::Deleted {
            seq: Some(seq),
            old,
        });
    }
    entries
}

/// `entries` as a client sends them: JSON arrays of at most [`BATCH`] entries.
fn batches(entries: &[JournalEntry]) -> Vec<Vec<u8>> {
    (entries.chunks(BATCH))
        .map(|chunk| serde_json::to_vec(chunk).unwrap())
        .collect()
}

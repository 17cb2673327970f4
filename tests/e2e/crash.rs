//! Crash injection: `plinth up` and `plinth destroy` on `testkit:Record` resources (files in a
//! directory granted to the plugin) are killed with SIGKILL at many points of their run. After
//! every kill the state must load, and it must account for the world exactly: every record file
//! belongs to a resource in the state or to an interrupted create, and every resource in the
//! state has its file unless an interrupted delete says it may be gone. The next run must then
//! succeed, taking over the lock the killed process left.
//!
//! `PLINTH_CRASH_POINTS` sets how many kills to try (default 120).

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::Env;

const NAMES: &str = "r0,r1,r2,r3,r4,r5,r6,r7";
const DEFAULT_POINTS: usize = 120;

/// What a killed run is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Create,
    Update,
    Destroy,
}

impl Phase {
    /// Each phase's successful run leaves the state the next one starts from.
    const CYCLE: [Phase; 3] = [Phase::Create, Phase::Update, Phase::Destroy];

    fn args(self) -> &'static [&'static str] {
        match self {
            Phase::Create | Phase::Update => &["up", "--yes", "--skip-preview"],
            Phase::Destroy => &["destroy", "--yes", "--skip-preview"],
        }
    }
}

/// Where a kill landed.
#[derive(Debug, Default)]
struct Tally {
    /// A journal was left: the kill interrupted an update.
    mid_update: usize,
    /// No journal, and the state is as before the run.
    before: usize,
    /// No journal, and the state changed: the run had compacted its journal.
    after: usize,
    /// The run had already exited.
    finished: usize,
}

#[test]
fn killed_updates_leave_a_state_that_accounts_for_the_world() {
    let started = Instant::now();
    let points: usize = std::env::var("PLINTH_CRASH_POINTS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(DEFAULT_POINTS);
    let env = Env::scenario_with_world();
    env.config("kind", "record");
    env.config("resources", NAMES);
    env.config("chain", "true");
    env.config("delay_ms", "2");

    // A first run compiles the components into the cache; then full runs of each phase, timed:
    // the kills are spread over the longest.
    env.ok(Phase::Create.args());
    env.ok(Phase::Destroy.args());
    let mut durations = [Duration::ZERO; 3];
    for round in 0..2 {
        for (i, phase) in Phase::CYCLE.into_iter().enumerate() {
            prepare(&env, phase, round * 3 + i);
            let run = Instant::now();
            let status = spawn(&env, phase.args()).wait().unwrap();
            durations[i] = durations[i].max(run.elapsed());
            assert!(status.success(), "{phase:?} failed");
            check_world(&env, &env.export());
        }
    }

    let measured = durations;
    let mut tally = Tally::default();
    let mut recovered = 0;
    for point in 0..points {
        let which = point % 3;
        let phase = Phase::CYCLE[which];
        prepare(&env, phase, point);
        let before = resource_ids(&env.export());
        // Kill anywhere from the process start to a little after a normal run would end.
        let round = point / 3;
        let rounds = points.div_ceil(3).max(1);
        let delay = durations[which].mul_f64(1.2 * (round as f64 + 0.5) / rounds as f64);

        let mut child = spawn(&env, phase.args());
        std::thread::sleep(delay);
        let exited = child.try_wait().unwrap().is_some();
        if !exited {
            child.kill().unwrap();
        }
        // Reaped: a killed holder's lock is stale only once its process is gone.
        child.wait().unwrap();

        let state = env.export();
        check_world(&env, &state);
        if exited {
            tally.finished += 1;
            // Runs are faster than measured (the machine is less busy): aim earlier.
            durations[which] = durations[which].mul_f64(0.9);
        } else if env.journal().exists() {
            tally.mid_update += 1;
        } else if resource_ids(&state) == before {
            tally.before += 1;
        } else {
            tally.after += 1;
        }

        // The next run takes over the stale lock, finishes the job, and accounts for it all.
        env.ok(phase.args());
        check_world(&env, &env.export());
        assert!(!env.journal().exists(), "a finished run left its journal");
        recovered += 1;
    }

    println!(
        "crash injection: {points} kill points tried, {recovered} recovered; killed \
         {} mid-update, {} before the update, {} after it; {} runs had exited already; \
         {:.1?} in all; full runs took {measured:.0?} (create, update, destroy)",
        tally.mid_update,
        tally.before,
        tally.after,
        tally.finished,
        started.elapsed()
    );
    assert_eq!(recovered, points);
    assert!(tally.mid_update > 0, "no kill landed mid-update: {tally:?}");
}

/// Sets the configuration `phase` runs with; `point` makes each update change the values.
fn prepare(env: &Env, phase: Phase, point: usize) {
    if phase == Phase::Update {
        // r0 and r4 change; r1 and r5, whose `prev` is their value, follow.
        for name in ["r0", "r4"] {
            env.config(&format!("value_{name}"), &format!("u{point}"));
        }
    }
}

fn spawn(env: &Env, args: &[&str]) -> Child {
    env.command(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("starting plinth")
}

/// The ids of the resources in `state`, as a set.
fn resource_ids(state: &Value) -> BTreeSet<String> {
    resources(state)
        .iter()
        .map(|r| r["id"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// The records in `state` (provider resources and the stack's root, which have none, left
/// out).
fn resources(state: &Value) -> Vec<&Value> {
    (state["snapshot"]["resources"].as_array().unwrap().iter())
        .filter(|r| r["custom"] == true)
        .filter(|r| !r["type"].as_str().unwrap().starts_with("plinth:providers:"))
        .collect()
}

/// The name part of a URN.
fn urn_name(urn: &Value) -> &str {
    urn.as_str().unwrap().rsplit("::").next().unwrap()
}

/// Interrupted operations of `kind` in `state`: (name, id) of the resource each was on.
fn pending(state: &Value, kind: &str) -> Vec<(String, String)> {
    state["snapshot"]["pending_operations"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .filter(|op| op["kind"] == kind)
        .map(|op| {
            let r = &op["resource"];
            (
                urn_name(&r["urn"]).to_owned(),
                r["id"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

/// Checks that the state accounts for every file in the world and the world for every
/// resource in the state.
fn check_world(env: &Env, state: &Value) {
    let ids = resource_ids(state);
    let creating: BTreeSet<String> = pending(state, "creating")
        .into_iter()
        .map(|(name, _)| name)
        .collect();
    let updating: BTreeSet<String> = pending(state, "updating")
        .into_iter()
        .map(|(_, id)| id)
        .collect();
    let deleting: BTreeSet<String> = pending(state, "deleting")
        .into_iter()
        .map(|(_, id)| id)
        .collect();

    let mut files = BTreeSet::new();
    for entry in std::fs::read_dir(env.world()).unwrap() {
        let path = entry.unwrap().path();
        let file = path.file_name().unwrap().to_str().unwrap().to_owned();
        if let Some(id) = file.strip_suffix(".json") {
            let name = record_name(&path);
            assert!(
                ids.contains(id) || creating.contains(&name),
                "untracked record {file} of `{name}`: not in the state, not an interrupted create\n{state:#}"
            );
            files.insert(id.to_owned());
        } else if let Some(rest) = file.strip_suffix(".tmp") {
            // A write interrupted mid-way: `<id>.<name>.tmp`.
            let (id, name) = rest.split_once('.').unwrap();
            assert!(
                ids.contains(id) || creating.contains(name) || updating.contains(id),
                "untracked leftover {file}\n{state:#}"
            );
        } else {
            panic!("unexpected file {file} in the world");
        }
    }
    for r in resources(state) {
        let id = r["id"].as_str().unwrap();
        assert!(
            files.contains(id) || deleting.contains(id),
            "resource `{}` ({id}) is in the state but its record is gone\n{state:#}",
            urn_name(&r["urn"])
        );
    }
}

/// The resource name a record file holds.
fn record_name(path: &Path) -> String {
    let body: Value = serde_json::from_slice(&std::fs::read(path).unwrap())
        .unwrap_or_else(|e| panic!("{} is not a whole record: {e}", path.display()));
    body["name"].as_str().unwrap().to_owned()
}

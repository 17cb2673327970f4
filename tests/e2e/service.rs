//! The team backend through the real CLI: real `plinth serve` replicas on a real PostgreSQL.
//! A stack lives the same life there as on the file backend; one update holds a stack at a time
//! and a second is refused naming the holder; a killed CLI's lease expires and the next update
//! takes over, the interrupted operation pending; an update goes on through the other replica
//! when the one serving it is killed; an update rides out a database restart; twenty stacks
//! updated at once through two replicas lose nothing.
//!
//! Where a test must hold an update mid-way, the `testkit:Record` it creates waits for a file
//! the test writes (the record's `wait_for` input): no test depends on how long anything takes.

use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

use crate::stack_life::whole_life;
use crate::stack_rename::rename_and_tags;
use crate::support::balancer::Balancer;
use crate::support::service::{ServiceDatabase, ServiceProcess};
use crate::support::{Env, ServiceLogin, interrupt};

/// Far above what any awaited condition takes; only a hang reaches it.
const PATIENCE: Duration = Duration::from_secs(120);

/// The user the tests' token is made for; a refused update names it as the holder.
const USER: &str = "e2e-user";

/// Replicas of the service on one database, and a token of [`USER`].
struct Team {
    replicas: Vec<ServiceProcess>,
    token: String,
    /// Dropped last: the replicas stop before their database goes.
    database: ServiceDatabase,
}

impl Team {
    /// `replicas` services on a database of their own on the shared server, leases lasting
    /// `lease` (`300s` is the service's default; tests of expiry use a short one).
    fn start(replicas: usize, lease: &str) -> Team {
        Team::on(ServiceDatabase::new(), replicas, lease)
    }

    fn on(database: ServiceDatabase, replicas: usize, lease: &str) -> Team {
        let token = database.token(USER);
        let replicas = (0..replicas)
            .map(|_| database.serve(&["--lease", lease]))
            .collect();
        Team {
            replicas,
            token,
            database,
        }
    }

    /// The service as `plinth` reaches it through replica `i`.
    fn login(&self, i: usize) -> Option<ServiceLogin> {
        Some(ServiceLogin {
            url: self.replicas[i].url.clone(),
            token: self.token.clone(),
        })
    }

    /// One query's rows on the service's database, as `psql -At` prints them.
    fn query(&self, sql: &str) -> String {
        self.database.server.psql(&self.database.name, sql).unwrap()
    }
}

/// Polls `condition` every 20 ms until it holds, failing after [`PATIENCE`] (only a hang
/// reaches it).
fn eventually(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !condition() {
        assert!(
            Instant::now() < deadline,
            "{what} did not happen in {PATIENCE:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// How many times a call tries a service that is gone when nothing hurries it (the backend's
/// transport, `ATTEMPTS`), with 12.7 s of backoff between the first and the last.
const TRIES_RIDING_OUT: usize = 8;

const SLOW_URN: &str = "urn:plinth:dev::scenario::testkit:Record::slow";

#[test]
fn a_stack_lives_from_init_to_removal_on_the_service() {
    let team = Team::start(1, "300s");
    whole_life(team.login(0));
}

#[test]
fn a_stack_is_renamed_and_tagged_on_the_service() {
    let team = Team::start(1, "300s");
    rename_and_tags(team.login(0));
    // The rename is audited under the old name, saying the new one.
    let audited =
        team.query("SELECT stack || ' ' || detail FROM audit WHERE action = 'stack.renamed'");
    assert_eq!(audited.trim(), "dev renamed to `prod`");
    // The renamed stack's tags are kept by its row; the new `dev` has none.
    let tags = team.query(
        "SELECT s.name || ':' || t.name || '=' || t.value FROM stack_tags t
         JOIN stacks s ON s.id = t.stack_id ORDER BY 1",
    );
    assert_eq!(tags.trim(), "prod:env=qa\nprod:owner=Ana María");
}

/// A project on the service `service` names (the file backend if none) whose one record,
/// `slow`, waits in each operation until the test writes `world/go`.
pub(crate) fn gated(service: Option<ServiceLogin>) -> Env {
    let env = Env::scenario_with_world_on(service);
    env.config("kind", "record");
    env.config("resources", "slow");
    env.config("inputs_slow", "wait_for=/world/go");
    env
}

/// Starts `up` of a [`gated`] project and returns once its create of `slow` waits at the gate.
pub(crate) fn up_held(env: &Env, stdio: fn() -> Stdio) -> Child {
    let child = env
        .command(&["up", "--yes", "--skip-preview"])
        .stdout(stdio())
        .stderr(stdio())
        .spawn()
        .unwrap();
    eventually("the create of `slow` reaching its gate", || {
        env.world().join("slow.waiting").exists()
    });
    child
}

pub(crate) fn release(env: &Env) {
    std::fs::write(env.world().join("go"), "").unwrap();
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The record files in the world.
pub(crate) fn records(env: &Env) -> Vec<String> {
    let mut names: Vec<String> = (std::fs::read_dir(env.world()).unwrap())
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".json"))
        .collect();
    names.sort();
    names
}

fn succeeded(n: usize) -> Vec<(String, String)> {
    vec![("update".to_owned(), "succeeded".to_owned()); n]
}

/// True once the service holds the journal entry that begins the create of `slow`: an update
/// killed after it leaves that create pending.
fn create_begun_on_the_service(team: &Team) -> bool {
    let batches = team.query(
        "SELECT count(*) FROM journal_batches
         WHERE entries::text LIKE '%\"begin\"%' AND entries::text LIKE '%Record::slow%'",
    );
    batches.trim() != "0"
}

#[test]
fn a_second_up_from_another_process_is_refused_naming_the_holder() {
    let team = Team::start(2, "300s");
    let env = gated(team.login(0));
    let first = up_held(&env, Stdio::piped);
    let before = env.ok(&["stack", "export"]);

    // Another process, through the other replica: the database, not a replica's memory, says
    // who holds the stack.
    let second = env
        .command(&["up", "--yes", "--skip-preview"])
        .env("PLINTH_BACKEND_URL", &team.replicas[1].url)
        .output()
        .unwrap();
    let err = stderr(&second);
    assert!(!second.status.success(), "the second up ran:\n{err}");
    assert!(
        err.contains(USER) && err.contains("`dev`") && err.contains("update"),
        "the refusal does not name the holder:\n{err}"
    );
    assert_eq!(
        env.ok(&["stack", "export"]),
        before,
        "the refused up changed the state"
    );
    assert!(records(&env).is_empty(), "the refused up changed the world");

    release(&env);
    let first = first.wait_with_output().unwrap();
    assert!(first.status.success(), "{}", stderr(&first));
    let names: Vec<String> = env.resources().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["slow"]);
    assert_eq!(records(&env).len(), 1);
    assert_eq!(env.history(), succeeded(1));
    // The stack is free again: an update through either replica runs.
    env.ok(&["up", "--yes"]);
}

/// Kills (SIGKILL) an `up` of a [`gated`] project while its create of `slow` waits, once
/// `begun` says the create's beginning is recorded; then `up` until it takes the stack over
/// (at once on the file backend, whose lock dies with its holder; once the lease expired on
/// the service, each refusal before naming the holder). The taking over `up` warns of the
/// interrupted create, the state stays valid and a refresh clears the pending operation.
fn killed_mid_update_then_taken_over(env: &Env, begun: &dyn Fn() -> bool, held: &str) {
    let mut first = up_held(env, Stdio::null);
    eventually("the create of `slow` recorded as begun", begun);
    first.kill().unwrap();
    first.wait().unwrap();
    release(env);

    let mut refusals = 0;
    let mut taken_over = None;
    eventually("an up taking the stack over", || {
        let out = env.run(&["up", "--yes", "--skip-preview"]);
        if out.status.success() {
            taken_over = Some(out);
            return true;
        }
        let err = stderr(&out);
        assert!(err.contains(held), "not refused for the holder:\n{err}");
        refusals += 1;
        false
    });
    let out = taken_over.unwrap();
    let err = stderr(&out);
    assert!(
        err.contains(&format!("a create of {SLOW_URN} was interrupted")),
        "the interrupted create is not reported:\n{err}"
    );
    let names: Vec<String> = env.resources().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["slow"]);
    let pending = &env.export()["snapshot"]["pending_operations"];
    assert_eq!(pending[0]["kind"], "creating", "{pending}");
    assert_eq!(pending[0]["resource"]["urn"], SLOW_URN, "{pending}");
    env.ok(&["refresh", "--yes"]);
    assert!(env.export()["snapshot"]["pending_operations"].is_null());
    env.ok(&["preview", "--expect-no-changes"]);
    println!("taken over after {refusals} refusals");
}

#[test]
fn a_killed_cli_leaves_its_create_pending_and_the_next_up_takes_over_on_the_file_backend() {
    let env = gated(None);
    // A create reaches its gate only once its begin is durable in the journal: what is left to
    // see is that the journal is there (the takeover then finds the create pending).
    let begun = || env.journal().exists();
    killed_mid_update_then_taken_over(&env, &begun, "locked");
}

#[test]
fn a_killed_cli_leaves_its_create_pending_and_the_next_up_takes_over_once_its_lease_expired() {
    let team = Team::start(1, "3s");
    let env = gated(team.login(0));
    let begun = || create_begun_on_the_service(&team);
    killed_mid_update_then_taken_over(&env, &begun, USER);
    let expired = team.query("SELECT count(*) FROM updates WHERE status = 'expired'");
    assert_eq!(expired.trim(), "1", "the killed update's lease expired");
}

#[test]
fn an_update_goes_on_through_the_other_replica_when_the_one_serving_it_is_killed() {
    let mut team = Team::start(2, "300s");
    let balancer = Balancer::new(&[&team.replicas[0].url, &team.replicas[1].url]);
    let env = gated(Some(ServiceLogin {
        url: balancer.url.clone(),
        token: team.token.clone(),
    }));
    // `b` and `c` follow `slow` (each takes the previous one's value): they are created, and
    // journaled, only after the replica is gone.
    env.config("resources", "slow,b,c");
    env.config("chain", "true");
    let up = up_held(&env, Stdio::piped);
    eventually("the create of `slow` recorded as begun", || {
        create_begun_on_the_service(&team)
    });

    // So far the balancer sent every connection to the first replica: it began the update and
    // stored the create's beginning; the update is running.
    assert!(balancer.forwarded(0) > 0);
    assert_eq!(
        balancer.forwarded(1),
        0,
        "the second replica served the update"
    );
    let running = team.query("SELECT count(*) FROM updates WHERE status = 'running'");
    assert_eq!(running.trim(), "1", "the update is not running");
    team.replicas[0].kill();
    release(&env);

    let out = up.wait_with_output().unwrap();
    let err = stderr(&out);
    assert!(out.status.success(), "the update failed:\n{err}");
    assert!(
        balancer.forwarded(1) > 0,
        "the update never reached the second replica"
    );
    // Every resource once, in the state and in the world; one update, completed; nothing pending.
    let names: Vec<String> = env.resources().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["b", "c", "slow"]);
    assert_eq!(records(&env).len(), 3, "{:?}", records(&env));
    assert_eq!(env.history(), succeeded(1));
    assert!(env.export()["snapshot"]["pending_operations"].is_null());
    let updates = team.query("SELECT status FROM updates");
    assert_eq!(updates.trim(), "succeeded");
    env.ok(&["preview", "--expect-no-changes"]);
}

#[test]
fn an_update_interrupted_while_the_service_is_gone_ends_at_once_naming_its_lease() {
    let mut team = Team::start(1, "300s");
    // Through a balancer, which counts the CLI's attempts once the replica is gone.
    let balancer = Balancer::new(&[&team.replicas[0].url]);
    let mut env = gated(Some(ServiceLogin {
        url: balancer.url.clone(),
        token: team.token.clone(),
    }));
    let up = up_held(&env, Stdio::piped);
    eventually("the create of `slow` recorded as begun", || {
        create_begun_on_the_service(&team)
    });
    team.replicas[0].kill();
    interrupt(&up);
    release(&env);

    // The create's end cannot be sent, nor the update ended: the user pressed Ctrl-C, so the
    // CLI gives up soon instead of riding out the outage (all 8 tries of a call, 13 s of
    // backoff). Counted, not timed: it did try the gone service, and no call used up its tries.
    let out = up.wait_with_output().unwrap();
    let err = stderr(&out);
    assert!(!out.status.success(), "{err}");
    let tries = balancer.unserved();
    assert!(
        !tries.is_empty(),
        "the CLI never tried the gone service:\n{err}"
    );
    for request in &tries {
        let made = tries.iter().filter(|r| *r == request).count();
        assert!(
            made < TRIES_RIDING_OUT,
            "`{request}` was tried {made} times, riding out the outage: {tries:?}\n{err}"
        );
    }
    assert!(
        err.contains("the update of stack `dev` could not be ended")
            && err.contains("its lease expires at ")
            && err.contains("`plinth cancel` ends it sooner"),
        "{err}"
    );
    // The service is back: the update still holds the stack until `plinth cancel` ends it;
    // the next update knows of the create whose end was never recorded.
    let replica = team.database.serve(&["--lease", "300s"]);
    team.replicas = vec![replica];
    env.service = team.login(0);
    let held = env.fails(&["up", "--yes", "--skip-preview"]);
    assert!(held.contains(USER), "{held}");
    env.ok(&["cancel", "--yes"]);
    let out = env.run(&["up", "--yes", "--skip-preview"]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains(&format!("a create of {SLOW_URN} was interrupted")),
        "{err}"
    );
    env.ok(&["refresh", "--yes"]);
    env.ok(&["preview", "--expect-no-changes"]);
    let names: Vec<String> = env.resources().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["slow"]);
    // The interrupted create did make its record, which nothing recorded: the warning above is
    // what tells the user of it, as with any create left pending.
    assert_eq!(records(&env).len(), 2, "{:?}", records(&env));
}

#[test]
fn an_update_rides_out_a_database_restart() {
    let log = tempfile::NamedTempFile::new().unwrap();
    let database = ServiceDatabase::on_own_server();
    let token = database.token(USER);
    let replica = database.serve_logging(&[], log.reopen().unwrap());
    let team = Team {
        replicas: vec![replica],
        token,
        database,
    };
    let env = gated(team.login(0));
    let up = up_held(&env, Stdio::piped);
    eventually("the create of `slow` recorded as begun", || {
        create_begun_on_the_service(&team)
    });

    // The database goes away while the create runs; the service answers 503 to what the
    // client sends meanwhile (the create's end, a lease renewal); once it met the outage, the
    // database comes back. A clean shutdown: the test cluster commits asynchronously, so an
    // immediate stop would lose batches it acknowledged, as no durable server does.
    team.database.server.shut_down().unwrap();
    release(&env);
    eventually("the service meeting the stopped database", || {
        std::fs::read_to_string(log.path()).is_ok_and(|l| l.contains("database error"))
    });
    team.database.server.resume().unwrap();

    let out = up.wait_with_output().unwrap();
    let err = stderr(&out);
    if out.status.success() {
        // The client retried through the outage: the update is recorded once, whole.
        assert_eq!(env.history(), succeeded(1), "{err}");
        assert_eq!(records(&env).len(), 1);
        assert!(env.export()["snapshot"]["pending_operations"].is_null());
    } else {
        // It gave up: cleanly, saying why, and the next update knows what it left.
        assert!(err.contains("unavailable"), "{err}");
    }
    let names: Vec<String> = env.resources().into_iter().map(|(n, _)| n).collect();
    let recovered = env.ok(&["up", "--yes"]);
    if out.status.success() {
        assert_eq!(names, ["slow"]);
        assert!(recovered.contains("no changes"), "{recovered}");
    }
    env.ok(&["refresh", "--yes"]);
    env.ok(&["preview", "--expect-no-changes"]);
    let names: Vec<String> = env.resources().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["slow"]);
    println!(
        "the update {} through the database restart",
        if out.status.success() {
            "completed"
        } else {
            "failed cleanly"
        }
    );
}

/// `plinth ARGS` on `stack`, through `url`.
fn on_stack(env: &Env, stack: &str, url: &str, args: &[&str]) -> std::process::Command {
    let mut command = env.command(args);
    command
        .env("PLINTH_STACK", stack)
        .env("PLINTH_BACKEND_URL", url)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

/// Runs `up` on every stack at once, stack `i` through replica `i % 2`; all must succeed.
fn up_all_at_once(env: &Env, team: &Team, stacks: &[String]) {
    let running: Vec<(&String, Child)> = (stacks.iter().enumerate())
        .map(|(i, stack)| {
            let url = &team.replicas[i % 2].url;
            let child = on_stack(env, stack, url, &["up", "--yes", "--skip-preview"])
                .spawn()
                .unwrap();
            (stack, child)
        })
        .collect();
    for (stack, child) in running {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "up of {stack} failed:\n{}",
            stderr(&out)
        );
    }
}

#[test]
fn twenty_stacks_updated_at_once_through_two_replicas_lose_no_update() {
    let team = Team::start(2, "300s");
    let env = Env::scenario_with_world_on(team.login(0));
    let stacks: Vec<String> = (0..20).map(|i| format!("s{i:02}")).collect();
    for stack in &stacks {
        env.ok(&["stack", "init", stack]);
        let url = &team.replicas[0].url;
        let set = |key: &str, value: &str| {
            let out = on_stack(&env, stack, url, &["config", "set", key, value])
                .output()
                .unwrap();
            assert!(out.status.success(), "{}", stderr(&out));
        };
        set("resources", "a,b,c,d,e");
        set("chain", "true");
        set("value_a", &format!("{stack}-1"));
    }
    up_all_at_once(&env, &team, &stacks);
    for stack in &stacks {
        let url = &team.replicas[1].url;
        let out = on_stack(&env, stack, url, &["config", "set", "value_a"])
            .arg(format!("{stack}-2"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
    }
    up_all_at_once(&env, &team, &stacks);

    // Every stack has both updates and the resources the second left, read through the
    // replica that did not run its updates.
    for (i, stack) in stacks.iter().enumerate() {
        let url = &team.replicas[(i + 1) % 2].url;
        let read = |args: &[&str]| {
            let out = on_stack(&env, stack, url, args).output().unwrap();
            assert!(out.status.success(), "{}", stderr(&out));
            String::from_utf8(out.stdout).unwrap()
        };
        let history: serde_json::Value =
            serde_json::from_str(&read(&["stack", "history", "--json"])).unwrap();
        let results: Vec<&str> = (history.as_array().unwrap().iter())
            .map(|e| e["result"].as_str().unwrap())
            .collect();
        assert_eq!(results, ["succeeded", "succeeded"], "{stack}: {history}");
        assert_eq!(history[1]["changes"]["create"], 5, "{stack}: {history}");
        // `a`'s value changed, and `b`'s input that derives from it.
        assert_eq!(history[0]["changes"]["update"], 2, "{stack}: {history}");
        let names = read(&["stack", "output", "names"]);
        assert_eq!(
            names.trim(),
            format!("{stack}-2,v,v,v,v"),
            "{stack}: the second update's value is recorded"
        );
        let state: serde_json::Value = serde_json::from_str(&read(&["stack", "export"])).unwrap();
        let echoes = (state["snapshot"]["resources"].as_array().unwrap().iter())
            .filter(|r| r["type"] == "testkit:Echo")
            .count();
        assert_eq!(echoes, 5, "{stack}");
    }
    let running = team.query("SELECT count(*) FROM updates WHERE status <> 'succeeded'");
    assert_eq!(running.trim(), "0", "every update completed");
}

/// A no-op `up` of a stack with a component and stack outputs journals nothing: no batch
/// reaches the service, and the version it makes is the one before, byte for byte (the service
/// keeps it as it is rather than rebuild it). One that changes the component's outputs sends
/// them.
#[test]
fn a_no_op_up_sends_no_journal_and_its_version_is_the_one_before() {
    let team = Team::start(1, "300s");
    let env = Env::scenario_on(team.login(0).unwrap());
    env.config("resources", "a,b");
    env.config("component", "group");
    env.ok(&["up", "--yes", "--skip-preview"]);
    // The journal batches of the latest version's update.
    let batches = || {
        let latest = "SELECT update_id FROM versions ORDER BY version DESC LIMIT 1";
        let sql = format!("SELECT count(*) FROM journal_batches WHERE update_id = ({latest})");
        team.query(&sql).trim().to_owned()
    };
    // How many of the last two versions there are, how many checkpoints they have, and how
    // many they store.
    let last_two = || {
        let sql = "SELECT count(*), count(DISTINCT COALESCE(v.checkpoint, held.checkpoint)), \
                   count(v.checkpoint) FROM (SELECT * FROM versions ORDER BY version DESC \
                   LIMIT 2) v LEFT JOIN versions held ON held.version = v.checkpoint_of";
        team.query(sql).trim().to_owned()
    };
    assert_ne!(batches(), "0", "the first up sent no journal");
    let before = env.ok(&["stack", "export"]);

    env.ok(&["up", "--yes", "--skip-preview"]);
    assert_eq!(env.history(), succeeded(2));
    assert_eq!(batches(), "0", "the no-op up sent journal entries");
    assert_eq!(
        last_two(),
        "2|1|1",
        "the no-op up's version differs from the base, or stores a copy of it"
    );
    assert_eq!(env.ok(&["stack", "export"]), before);

    // The component's outputs (its child count) change, and nothing else of it.
    env.config("resources", "a,b,c");
    env.ok(&["up", "--yes", "--skip-preview"]);
    assert_ne!(batches(), "0");
    let state = env.export();
    let group = (state["snapshot"]["resources"].as_array().unwrap().iter())
        .find(|r| r["type"] == "scenario:Group")
        .expect("the component");
    assert_eq!(group["outputs"]["count"], 3, "{group}");
}

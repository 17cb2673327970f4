//! A hostile program (tests/programs/hostile) tries to make the host hold without bound:
//! applies that never end, a flood of registrations, huge inputs, applies returning huge
//! values, a log that never ends. Each meets its part of the
//! program's budget (`limits:` under `program:`) with an error naming it, while the host's
//! memory stays bounded; a first SIGTERM ends a program that never finishes; the state stays
//! valid and a later run works.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::support::{Env, guest};

const MIB: u64 = 1 << 20;

/// A project running the hostile program under `limits` (a YAML flow mapping's contents).
fn project(limits: &str) -> Env {
    Env::project(&format!(
        "name: scenario\nprogram:\n  path: {}\n  limits: {{ {limits} }}\n",
        guest("plinth-hostile-program").display()
    ))
}

/// After an attack: the state loads with nothing pending, and a harmless run works.
fn assert_recovers(env: &Env) {
    let state = env.export();
    assert!(
        state["snapshot"]["pending_operations"]
            .as_array()
            .is_none_or(Vec::is_empty),
        "{state:#}"
    );
    env.config("mode", "one");
    env.ok(&["up", "--yes", "--skip-preview"]);
    assert_eq!(env.resources(), [("ok".to_owned(), String::new())]);
}

#[test]
fn each_part_of_the_budget_stops_its_attack_with_its_own_error() {
    let attacks = [
        (
            "registrations",
            "registrations: 20000",
            "the program exceeded its budget of 20000 registrations in one run",
            "raise `limits: { registrations: ... }` under `program:` in Plinth.yaml",
        ),
        (
            "endless-applies",
            "applies: 20000",
            "the program exceeded its budget of 20000 applies in one run",
            "raise `limits: { applies: ... }` under `program:` in Plinth.yaml",
        ),
        (
            "huge-results",
            "input-bytes: 64MiB",
            "the program exceeded its budget of 67108864 bytes of inputs in one run",
            "raise `limits: { input-bytes: ... }` under `program:` in Plinth.yaml",
        ),
        (
            "huge-inputs",
            "input-bytes: 64MiB",
            "the program exceeded its budget of 67108864 bytes of inputs in one run",
            "raise `limits: { input-bytes: ... }` under `program:` in Plinth.yaml",
        ),
        (
            "logs",
            "log-bytes: 1MiB",
            "the program exceeded its budget of 1048576 bytes of log messages in one run",
            "raise `limits: { log-bytes: ... }` under `program:` in Plinth.yaml",
        ),
    ];
    for (mode, limits, error, advice) in attacks {
        let env = project(limits);
        env.config("mode", mode);
        for command in [&["preview"][..], &["up", "--yes", "--skip-preview"]] {
            let (peak, stderr) = env.peak_rss(command);
            println!("{mode}, {command:?}: peak RSS {} MiB", peak / MIB);
            assert!(
                stderr.contains(error) && stderr.contains(advice),
                "{mode}: {stderr}"
            );
            // The program's own memory (its limit is 256 MiB; it uses a few) and what the
            // budget lets the host hold, several times over for `up` (the state, the journal,
            // their encodings), with room for the host and its allocator: an unbounded attack
            // grows into gigabytes. `up` of 64 MiB of inputs peaked at 300-426 MiB on CI.
            assert!(peak < 768 * MIB, "{mode}: peak RSS {} MiB", peak / MIB);
        }
        assert_recovers(&env);
    }
}

/// How long the SIGTERM test waits for plinth to start the program, and then to end: far more
/// than either takes on a loaded machine, only there so that a regression fails the test
/// (plinth killed, the wait named) instead of hanging the suite.
const BOUND: Duration = Duration::from_secs(180);

/// Kills `pid` outright: plinth overran [`BOUND`], and the test is about to fail saying so.
fn kill_hard(pid: u32) {
    let _ = Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status();
}

/// `preview` of a program whose every resume registers another apply ran until it had taken
/// 10 GB; SIGTERM only printed "Cancelling". The first SIGTERM now ends it.
#[test]
fn a_first_sigterm_ends_a_program_that_never_finishes() {
    let env = project("applies: 1000000000");
    env.config("mode", "endless-applies");
    for command in [&["preview"][..], &["up", "--yes", "--skip-preview"]] {
        let mut child = env
            .command(command)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id();
        // stdout is read to its end on a thread of its own, so that plinth never meets a full
        // or closed pipe; the thread says when the program has started.
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (started_tx, started) = mpsc::channel();
        let reader = std::thread::spawn(move || {
            for line in stdout.lines().map_while(Result::ok) {
                if line.contains("hostile: resumed 100 times") {
                    let _ = started_tx.send(());
                }
            }
        });
        if let Err(e) = started.recv_timeout(BOUND) {
            kill_hard(pid);
            panic!("{command:?}: the program did not start within {BOUND:?} ({e})");
        }
        let status = Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let (done_tx, done) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = done_tx.send(child.wait_with_output());
        });
        let out = match done.recv_timeout(BOUND) {
            Ok(out) => out.unwrap(),
            Err(e) => {
                kill_hard(pid);
                panic!("{command:?}: plinth did not end within {BOUND:?} of SIGTERM ({e})");
            }
        };
        reader.join().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{command:?}");
        assert!(stderr.contains("cancelled"), "{command:?}: {stderr}");
    }
    assert_recovers(&env);
}

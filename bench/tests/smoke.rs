//! The harness end to end at a tiny size: every step runs through the CLI and the harness's own
//! checks (the items each checkpoint records, the changed ones) pass; the report holds every
//! figure. Uses the debug `plinth` that `cargo test` builds for the CLI's tests.

use std::path::PathBuf;
use std::process::Command;

/// A debug binary of the workspace beside the bench's, built by `package`.
fn debug_binary(name: &str, package: &str) -> PathBuf {
    let bench = PathBuf::from(env!("CARGO_BIN_EXE_plinth-bench"));
    let binary = bench.with_file_name(name);
    assert!(
        binary.is_file(),
        "{} is missing: build it first (cargo build -p {package})",
        binary.display()
    );
    binary
}

fn debug_plinth() -> PathBuf {
    debug_binary("plinth", "plinth-cli")
}

#[test]
fn a_tiny_run_measures_every_step_and_both_plugins() {
    let work = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_plinth-bench"))
        .args(["--sizes", "12", "--shapes", "chains,fanout", "--json"])
        .args(["--calls", "50", "--starts", "2", "--compiles", "1"])
        .arg("--plinth")
        .arg(debug_plinth())
        .arg("--work")
        .arg(work.path())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();

    let scenarios = report["scenarios"].as_array().unwrap();
    assert_eq!(scenarios.len(), 2);
    for scenario in scenarios {
        assert_eq!(scenario["resources"], 12);
        let steps = scenario["steps"].as_array().unwrap();
        let names: Vec<&str> = steps.iter().map(|s| s["step"].as_str().unwrap()).collect();
        assert_eq!(
            names,
            [
                "up",
                "no-op up",
                "no-op preview",
                "preview 10%",
                "up 10%",
                "refresh",
                "export",
                "history",
                "logs",
                "destroy"
            ]
        );
        let up = &steps[0];
        assert!(up["checkpoint_bytes"].as_u64().unwrap() > 1_000, "{up}");
        assert!(up["peak_rss_bytes"].as_u64().unwrap() > 1_000_000, "{up}");
        assert!(up["wall_s"].as_f64().unwrap() > 0.0, "{up}");
        assert!(up["cpu_s"].as_f64().unwrap() > 0.0, "{up}");
    }

    let plugins = &report["plugins"];
    for figure in [
        "wasm_compile_us",
        "wasm_start_us",
        "grpc_start_us",
        "wasm_call_us",
        "grpc_call_us",
        "start_ratio",
        "call_ratio",
    ] {
        assert!(
            plugins[figure].as_f64().unwrap() > 0.0,
            "{figure}: {plugins}"
        );
    }
}

/// The harness at 12 chained items on both backends, the service's with `options`, in a work
/// directory of its own.
fn tiny_run_on_the_service(options: &[&str]) -> std::process::Output {
    let work = tempfile::tempdir().unwrap();
    Command::new(env!("CARGO_BIN_EXE_plinth-bench"))
        .args([
            "--sizes",
            "12",
            "--shapes",
            "chains",
            "--json",
            "--no-plugins",
        ])
        .arg("--service")
        .args(options)
        .arg("--plinth")
        .arg(debug_plinth())
        .arg("--plinth-serve")
        .arg(debug_binary("plinth-serve", "plinth-service"))
        .arg("--work")
        .arg(work.path())
        .output()
        .unwrap()
}

/// Run twice, the second run on stacks of its own on the same service; each figure the median.
/// Once on a PostgreSQL with `fsync` off, as the tests run it, and once with it on, as a
/// production server runs.
#[test]
fn a_tiny_run_on_the_service_counts_what_crossed_the_wire() {
    let output = tiny_run_on_the_service(&["--runs", "2", "--service-fsync", "off,on"]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["runs"], 2);
    let scenarios = report["scenarios"].as_array().unwrap();
    let backends: Vec<&str> = (scenarios.iter())
        .map(|s| s["backend"].as_str().unwrap())
        .collect();
    assert_eq!(
        backends,
        ["file", "service", "service (fsync on)"],
        "one scenario each, of the two runs"
    );
    for on_service in [&scenarios[1], &scenarios[2]] {
        a_service_scenario_counts_its_traffic(on_service);
    }
    assert!(
        scenarios[0]["steps"][0].get("requests").is_none(),
        "no traffic on the file backend"
    );
}

/// With `--service-cpu`, the service runs on the last CPU the harness may use, the commands on
/// the others (the harness checks `plinth serve`'s own CPUs), and the report says so; with one
/// CPU, the harness refuses, saying why.
#[test]
fn a_run_with_the_service_on_a_cpu_of_its_own_says_where_each_side_ran() {
    let output = tiny_run_on_the_service(&["--service-cpu"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let cpus = allowed_cpus();
    let Some(&last) = cpus.last().filter(|_| cpus.len() >= 2) else {
        assert!(!output.status.success());
        assert!(stderr.contains("needs at least two CPUs"), "{stderr}");
        return;
    };
    assert!(output.status.success(), "{stderr}");
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let placement = report["placement"].as_str().unwrap();
    assert!(
        placement.starts_with(&format!(
            "the service and PostgreSQL on CPU {last}, every plinth command on CPU {}",
            cpus[0]
        )),
        "{placement}"
    );
    let scenarios = report["scenarios"].as_array().unwrap();
    assert_eq!(scenarios.len(), 2, "file and service");
    a_service_scenario_counts_its_traffic(&scenarios[1]);
}

/// The CPUs this test may run on, as the harness it starts reads its own.
fn allowed_cpus() -> Vec<usize> {
    // SAFETY: `set` is a plain C bit set the kernel fills in.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: a valid pointer to `set` and its size; 0 names this thread.
    let got = unsafe { libc::sched_getaffinity(0, size_of::<libc::cpu_set_t>(), &mut set) };
    assert_eq!(got, 0, "{}", std::io::Error::last_os_error());
    // SAFETY: every index is below the set's size.
    (0..libc::CPU_SETSIZE as usize)
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
        .collect()
}

/// A service scenario's steps: each made requests, and all but the previews sent a journal.
fn a_service_scenario_counts_its_traffic(scenario: &serde_json::Value) {
    let on_service = scenario["steps"].as_array().unwrap();
    assert_eq!(on_service.len(), 10);
    for step in on_service {
        assert!(step["requests"].as_u64().unwrap() >= 1, "{step}");
        // Every step reads the stack (its state, history or logs); all but a preview and the
        // reading steps send a journal.
        assert!(step["bytes_received"].as_u64().unwrap() > 100, "{step}");
        let name = step["step"].as_str().unwrap();
        let reads = name.contains("preview") || ["export", "history", "logs"].contains(&name);
        assert_eq!(step["bytes_sent"].as_u64().unwrap() > 100, !reads, "{step}");
    }
    let up = &on_service[0];
    assert!(up["checkpoint_bytes"].as_u64().unwrap() > 1_000, "{up}");
    // The journal of 12 created items went over the wire.
    assert!(
        up["bytes_sent"].as_u64().unwrap() > up["checkpoint_bytes"].as_u64().unwrap() / 2,
        "{up}"
    );
}

/// With `--secrets`, each shape runs again with a secret in every item, and the report gives
/// each of its steps' ratio to the same step without secrets (the issue 26 figure).
#[test]
fn a_tiny_run_with_secrets_reports_their_cost_per_step() {
    let work = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_plinth-bench"))
        .args(["--sizes", "12", "--shapes", "chains", "--secrets"])
        .args(["--json", "--no-plugins"])
        .arg("--plinth")
        .arg(debug_plinth())
        .arg("--work")
        .arg(work.path())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let scenarios = report["scenarios"].as_array().unwrap();
    let shapes: Vec<&str> = (scenarios.iter())
        .map(|s| s["shape"].as_str().unwrap())
        .collect();
    assert_eq!(shapes, ["chains", "chains+secrets"]);
    assert!(
        scenarios[0].get("secrets_ratio").is_none(),
        "{}",
        scenarios[0]
    );
    let ratios = scenarios[1]["secrets_ratio"].as_object().unwrap();
    assert_eq!(ratios.len(), 10, "a ratio per step: {ratios:?}");
    for (step, ratio) in ratios {
        assert!(ratio.as_f64().unwrap() > 0.0, "{step}: {ratio}");
    }
}

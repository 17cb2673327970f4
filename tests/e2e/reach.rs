//! Sandbox grants beyond directories, and per-plugin limits, from `Plinth.yaml`: the `reach`
//! provider (tests/plugins/reach) reads environment variables, connects over TCP, looks names
//! up, sends UDP datagrams and HTTP requests to servers this test runs on 127.0.0.1, and
//! listens on local ports, allocates memory and burns time. Without a grant each attempt fails with an error naming the
//! plugin, the attempt and the Plinth.yaml line that allows it; with the grant it works; a grant
//! opens its own endpoint only.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::{Env, guest};

/// A scenario project whose `reach` plugin has `sections` (YAML lines at the level of
/// `grants:`, indented by four spaces), with one resource `x` of type `ty` and `inputs`
/// (`key=value;...`).
fn reach(sections: &str, ty: &str, inputs: &str) -> Env {
    let env = Env::scenario_with(&format!(
        "  reach:\n    path: {}\n{sections}",
        guest("plinth-reach").display()
    ));
    env.config("resources", "x");
    env.config("type_x", ty);
    env.config("inputs_x", inputs);
    env
}

/// `grants:` with the lines `lines` under it (e.g. `tcp: ["127.0.0.1:80"]`).
fn grants(lines: &[&str]) -> String {
    let mut yaml = "    grants:\n".to_owned();
    for line in lines {
        yaml.push_str(&format!("      {line}\n"));
    }
    yaml
}

/// The outputs of resource `x` after a successful `up`.
fn up_outputs(env: &Env) -> Value {
    env.ok(&["up", "--yes", "--skip-preview"]);
    let state = env.export();
    state["snapshot"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["urn"].as_str().unwrap().ends_with("::x"))
        .unwrap_or_else(|| panic!("no resource `x` in {state:#}"))["outputs"]
        .clone()
}

/// Runs a failing `up` and checks that its error names the plugin, every one of `says` (the
/// attempt) and the line to add under the plugin's grants; `x` is not created.
fn denied(env: &Env, says: &[&str], line: &str) -> String {
    let stderr = env.fails(&["up", "--yes", "--skip-preview"]);
    assert_denial(&stderr, says, line);
    let resources = env.resources();
    assert!(
        resources.iter().all(|(name, _)| name != "x"),
        "{resources:?}"
    );
    stderr
}

/// `line` is the Plinth.yaml line to add, quoted in backticks unless it is quoted already.
fn assert_denial(stderr: &str, says: &[&str], line: &str) {
    let grant = if line.starts_with('`') {
        format!("add {line} under `plugins.reach.grants` in Plinth.yaml")
    } else {
        format!("add `{line}` under `plugins.reach.grants` in Plinth.yaml")
    };
    for needle in ["plugin `reach`", grant.as_str()].iter().chain(says) {
        assert!(stderr.contains(needle), "missing {needle:?} in:\n{stderr}");
    }
}

/// A server on 127.0.0.1 that answers each line (TCP) or datagram (UDP) with `echo: ` and
/// what it got, and counts what it served.
struct Echo {
    port: u16,
    served: Arc<AtomicUsize>,
    _thread: JoinHandle<()>,
}

impl Echo {
    fn tcp() -> Echo {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let served = Arc::new(AtomicUsize::new(0));
        let count = served.clone();
        // The thread ends with the test process; its port is never reused within it.
        let thread = std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                count.fetch_add(1, Ordering::SeqCst);
                let mut line = String::new();
                let mut reader = BufReader::new(&stream);
                if reader.read_line(&mut line).is_ok() {
                    let _ = write!(&stream, "echo: {line}");
                }
            }
        });
        Echo {
            port,
            served,
            _thread: thread,
        }
    }

    fn udp() -> Echo {
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        let port = socket.local_addr().unwrap().port();
        let served = Arc::new(AtomicUsize::new(0));
        let count = served.clone();
        let thread = std::thread::spawn(move || {
            let mut buf = [0u8; 1024];
            while let Ok((n, from)) = socket.recv_from(&mut buf) {
                count.fetch_add(1, Ordering::SeqCst);
                let reply = format!("echo: {}", String::from_utf8_lossy(&buf[..n]));
                let _ = socket.send_to(reply.as_bytes(), from);
            }
        });
        Echo {
            port,
            served,
            _thread: thread,
        }
    }

    fn served(&self) -> usize {
        self.served.load(Ordering::SeqCst)
    }
}

/// An HTTP server on 127.0.0.1 that answers every request with `hello from <path>`.
struct Http {
    port: u16,
    served: Arc<AtomicUsize>,
    server: Arc<tiny_http::Server>,
    thread: Option<JoinHandle<()>>,
}

impl Http {
    fn start() -> Http {
        let server = Arc::new(tiny_http::Server::http("127.0.0.1:0").unwrap());
        let port = server.server_addr().to_ip().unwrap().port();
        let served = Arc::new(AtomicUsize::new(0));
        let (serving, count) = (server.clone(), served.clone());
        let thread = std::thread::spawn(move || {
            for request in serving.incoming_requests() {
                count.fetch_add(1, Ordering::SeqCst);
                let body = format!("hello from {}", request.url());
                let _ = request.respond(tiny_http::Response::from_string(body));
            }
        });
        Http {
            port,
            served,
            server,
            thread: Some(thread),
        }
    }
}

impl Drop for Http {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[test]
fn environment_variables_are_passed_only_when_granted() {
    let var = "PLINTH_REACH_TEST_TOKEN";
    let inputs = format!("name={var}");
    let with_var = |env: &Env, args: &[&str]| {
        env.command(args)
            .env(var, "s3cret")
            .output()
            .expect("running plinth")
    };

    // Not granted: the plugin does not see it, and the error says how to pass it.
    let env = reach("", "reach:Env", &inputs);
    let out = with_var(&env, &["up", "--yes", "--skip-preview"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "plugin `reach` sees no environment variable `{var}`: plinth has it, but does not \
             pass it; to pass it, add `env: [{var}]` under `plugins.reach.grants` in Plinth.yaml"
        )),
        "{stderr}"
    );

    // Granted: the plugin sees plinth's value, and no other variable of plinth's.
    let env = reach(&grants(&[&format!("env: [{var}]")]), "reach:Env", &inputs);
    let out = with_var(&env, &["up", "--yes", "--skip-preview"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let state = env.export();
    let x = state["snapshot"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["urn"].as_str().unwrap().ends_with("::x"))
        .unwrap()
        .clone();
    assert_eq!(x["outputs"]["value"], "s3cret", "{x}");
    env.ok(&["destroy", "--yes"]);
    env.config("inputs_x", "name=PATH");
    let stderr = with_var(&env, &["up", "--yes", "--skip-preview"]).stderr;
    let stderr = String::from_utf8_lossy(&stderr);
    assert!(stderr.contains("add `env: [PATH]`"), "{stderr}");

    // Granted but not set for plinth: absent in the plugin too, and the error says so.
    let env = reach(&grants(&[&format!("env: [{var}]")]), "reach:Env", &inputs);
    let stderr = env.fails(&["up", "--yes", "--skip-preview"]);
    assert!(
        stderr.contains(&format!(
            "plugin `reach` is granted the environment variable `{var}`, but it is not set in \
             plinth's environment"
        )),
        "{stderr}"
    );
}

#[test]
fn tcp_connects_only_to_granted_endpoints() {
    let (server, other) = (Echo::tcp(), Echo::tcp());
    let inputs = |port: u16| format!("host=127.0.0.1;port={port};line=ping");
    let endpoint = format!("127.0.0.1:{}", server.port);

    let env = reach("", "reach:Tcp", &inputs(server.port));
    denied(
        &env,
        &[&format!("TCP connect to {endpoint}")],
        &format!("tcp: [\"{endpoint}\"]"),
    );
    assert_eq!(server.served(), 0, "a denied connect reached the server");

    let env = reach(
        &grants(&[&format!("tcp: [\"{endpoint}\"]")]),
        "reach:Tcp",
        &inputs(server.port),
    );
    assert_eq!(up_outputs(&env)["reply"], "echo: ping");
    assert_eq!(server.served(), 1);

    // The grant opens its endpoint only: not another port, not another host.
    env.ok(&["destroy", "--yes"]);
    env.config("inputs_x", &inputs(other.port));
    denied(
        &env,
        &[&format!("TCP connect to 127.0.0.1:{}", other.port)],
        &format!("tcp: [\"127.0.0.1:{}\"]", other.port),
    );
    env.config(
        "inputs_x",
        &format!("host=127.0.0.2;port={};line=ping", server.port),
    );
    denied(
        &env,
        &[&format!("TCP connect to 127.0.0.2:{}", server.port)],
        &format!("tcp: [\"127.0.0.2:{}\"]", server.port),
    );
    assert_eq!((server.served(), other.served()), (1, 0));
}

#[test]
fn names_resolve_only_when_a_grant_names_them() {
    let (server, other) = (Echo::tcp(), Echo::tcp());

    // No grant names `localhost`: the lookup itself is refused.
    let env = reach("", "reach:Lookup", "host=localhost");
    denied(
        &env,
        &["name lookup of `localhost`"],
        "`tcp: [\"localhost:<port>\"]` (or `udp: [\"localhost:<port>\"]`)",
    );

    // A grant naming it lets the plugin look it up, and connect to what it resolved to on the
    // granted port.
    let granted = grants(&[&format!("tcp: [\"localhost:{}\"]", server.port)]);
    let env = reach(&granted, "reach:Lookup", "host=localhost");
    let addresses = up_outputs(&env)["addresses"].as_str().unwrap().to_owned();
    assert!(
        addresses.split(',').any(|a| a == "127.0.0.1" || a == "::1"),
        "{addresses}"
    );
    let env = reach(
        &granted,
        "reach:Tcp",
        &format!("host=localhost;port={};line=by name", server.port),
    );
    assert_eq!(up_outputs(&env)["reply"], "echo: by name");

    // Not on another port of the same name, and no other name resolves.
    env.ok(&["destroy", "--yes"]);
    env.config(
        "inputs_x",
        &format!("host=localhost;port={};line=x", other.port),
    );
    let stderr = denied(
        &env,
        &["(an address of `localhost`)"],
        &format!("tcp: [\"localhost:{}\"]", other.port),
    );
    assert!(stderr.contains(&format!(":{}", other.port)), "{stderr}");
    env.config("type_x", "reach:Lookup");
    env.config("inputs_x", "host=db.example.internal");
    denied(
        &env,
        &["name lookup of `db.example.internal`"],
        "`tcp: [\"db.example.internal:<port>\"]` (or `udp: [\"db.example.internal:<port>\"]`)",
    );
    assert_eq!(other.served(), 0);
}

#[test]
fn udp_sends_only_to_granted_endpoints() {
    let (server, other) = (Echo::udp(), Echo::udp());
    let inputs = |port: u16| format!("host=127.0.0.1;port={port};message=ping");
    let endpoint = format!("127.0.0.1:{}", server.port);

    let env = reach("", "reach:Udp", &inputs(server.port));
    denied(
        &env,
        &[&format!("UDP send to {endpoint}")],
        &format!("udp: [\"{endpoint}\"]"),
    );
    assert_eq!(server.served(), 0, "a denied datagram reached the server");

    // A TCP grant of the same endpoint is not a UDP grant.
    let env = reach(
        &grants(&[&format!("tcp: [\"{endpoint}\"]")]),
        "reach:Udp",
        &inputs(server.port),
    );
    denied(
        &env,
        &[&format!("UDP send to {endpoint}")],
        &format!("udp: [\"{endpoint}\"]"),
    );

    let env = reach(
        &grants(&[&format!("udp: [\"{endpoint}\"]")]),
        "reach:Udp",
        &inputs(server.port),
    );
    assert_eq!(up_outputs(&env)["reply"], "echo: ping");
    assert_eq!(server.served(), 1);

    env.ok(&["destroy", "--yes"]);
    env.config("inputs_x", &inputs(other.port));
    denied(
        &env,
        &[&format!("UDP send to 127.0.0.1:{}", other.port)],
        &format!("udp: [\"127.0.0.1:{}\"]", other.port),
    );
    assert_eq!(other.served(), 0);
}

/// A free local port, for a listener: bound by the host then released.
fn free_port(protocol: &str) -> u16 {
    match protocol {
        "tcp" => TcpListener::bind("127.0.0.1:0").unwrap().local_addr(),
        _ => UdpSocket::bind("127.0.0.1:0").unwrap().local_addr(),
    }
    .unwrap()
    .port()
}

/// `tcp: ["*:47020"]` once let a plugin listen on 0.0.0.0:47020: listening (binding a fixed
/// local port) takes `tcp-listen` or `udp-listen`, which grant that address only; `tcp` and
/// `udp` grant the peers to reach.
#[test]
fn listening_takes_a_listen_grant_of_its_own() {
    for (protocol, proto) in [("tcp", "TCP"), ("udp", "UDP")] {
        let port = free_port(protocol);
        let inputs = |address: &str| format!("protocol={protocol};address={address}");
        let any = format!("0.0.0.0:{port}");
        let local = format!("127.0.0.1:{port}");

        for granted in ["", &format!("{protocol}: [\"*:{port}\", \"*:*\"]")] {
            let sections = if granted.is_empty() {
                String::new()
            } else {
                grants(&[granted])
            };
            let env = reach(&sections, "reach:Listen", &inputs(&any));
            denied(
                &env,
                &[&format!("{proto} bind to {any}")],
                &format!("{protocol}-listen: [\"{any}\"]"),
            );
        }

        // A listen grant opens its own address only.
        let env = reach(
            &grants(&[&format!("{protocol}-listen: [\"{local}\"]")]),
            "reach:Listen",
            &inputs(&local),
        );
        assert_eq!(up_outputs(&env)["bound"], local.as_str());
        env.ok(&["destroy", "--yes"]);
        env.config("inputs_x", &inputs(&any));
        denied(
            &env,
            &[&format!("{proto} bind to {any}")],
            &format!("{protocol}-listen: [\"{any}\"]"),
        );
    }
}

#[test]
fn http_requests_go_only_to_granted_authorities() {
    let (server, other) = (Http::start(), Http::start());
    let url = |host: &str, port: u16| format!("url=http://{host}:{port}/status");
    let authority = format!("127.0.0.1:{}", server.port);

    let env = reach("", "reach:Http", &url("127.0.0.1", server.port));
    let stderr = denied(
        &env,
        &[&format!("HTTP request to {authority}")],
        &format!("http: [\"{authority}\"]"),
    );
    // The guest saw wasi:http's own refusal.
    assert!(stderr.contains("HttpRequestDenied"), "{stderr}");

    // wasi:http is not governed by the socket grants: a TCP grant does not allow it.
    let env = reach(
        &grants(&[&format!("tcp: [\"{authority}\"]")]),
        "reach:Http",
        &url("127.0.0.1", server.port),
    );
    denied(&env, &[], &format!("http: [\"{authority}\"]"));
    assert_eq!(server.served.load(Ordering::SeqCst), 0);

    let env = reach(
        &grants(&[&format!("http: [\"{authority}\"]")]),
        "reach:Http",
        &url("127.0.0.1", server.port),
    );
    let outputs = up_outputs(&env);
    assert_eq!(outputs["status"], 200.0, "{outputs}");
    assert_eq!(outputs["body"], "hello from /status", "{outputs}");

    // Another port, or the same port under another name, is another authority.
    env.ok(&["destroy", "--yes"]);
    env.config("inputs_x", &url("127.0.0.1", other.port));
    denied(
        &env,
        &[&format!("HTTP request to 127.0.0.1:{}", other.port)],
        &format!("http: [\"127.0.0.1:{}\"]", other.port),
    );
    env.config("inputs_x", &url("localhost", server.port));
    denied(
        &env,
        &[&format!("HTTP request to localhost:{}", server.port)],
        &format!("http: [\"localhost:{}\"]", server.port),
    );
    assert_eq!(server.served.load(Ordering::SeqCst), 1);
    assert_eq!(other.served.load(Ordering::SeqCst), 0);
}

#[test]
fn the_memory_limit_comes_from_plinth_yaml() {
    // 48 MiB fit in the default 256 MiB, not in 32 MiB.
    let env = reach("", "reach:Alloc", "mib=48");
    assert_eq!(up_outputs(&env)["mib"], 48.0);
    let env = reach(
        "    limits:\n      memory: 32MiB\n",
        "reach:Alloc",
        "mib=48",
    );
    let stderr = env.fails(&["up", "--yes", "--skip-preview"]);
    assert!(
        stderr.contains("plugin `reach`")
            && stderr.contains("`create` ran out of memory")
            && stderr.contains("the limit is 32 MiB"),
        "{stderr}"
    );
    env.config("inputs_x", "mib=8");
    env.ok(&["up", "--yes", "--skip-preview"]);
}

#[test]
fn the_call_timeout_comes_from_plinth_yaml() {
    // Busy in WebAssembly, or waiting in the host: either way the call ends at its deadline.
    for ty in ["reach:Spin", "reach:Sleep"] {
        let env = reach("    limits:\n      call-timeout: 300ms\n", ty, "ms=20000");
        let started = Instant::now();
        let stderr = env.fails(&["up", "--yes", "--skip-preview"]);
        let took = started.elapsed();
        assert!(
            stderr.contains("plugin `reach`") && stderr.contains("`create` timed out after 300ms"),
            "{ty}: {stderr}"
        );
        // Tells the deadline from a hang; generous, as a loaded machine runs slowly.
        assert!(took < Duration::from_secs(60), "{ty} took {took:?}");
        env.config("inputs_x", "ms=50");
        env.ok(&["up", "--yes", "--skip-preview"]);
    }
}

#[test]
fn bad_grants_and_limits_are_clear_errors() {
    let cases = [
        (
            grants(&["tcp: [\"db.internal:99999\"]"]),
            "`db.internal:99999` is not a valid network endpoint (`host:port`): the port `99999` \
             is not a number from 1 to 65535 or `*`",
        ),
        (
            grants(&["udp: [\"db.internal\"]"]),
            "it has no port: write `db.internal:<port>`, or `db.internal:*` for every port",
        ),
        (
            grants(&["http: [\"https://api.example.com\"]"]),
            "write the host (and port) only, without a scheme or a path",
        ),
        (
            "    limits:\n      memory: lots\n".to_owned(),
            "memory `lots` is not a size such as `512MiB` or `1GiB`",
        ),
        (
            "    limits:\n      memory: 64KiB\n".to_owned(),
            "is too small: a guest needs at least 1 MiB",
        ),
        (
            "    limits:\n      memory: 8GiB\n".to_owned(),
            "is too large: a 32-bit guest cannot use more than 4 GiB",
        ),
        (
            "    limits:\n      call-timeout: 30\n".to_owned(),
            "call-timeout `30` has no unit: write e.g. `30s` or `30ms`",
        ),
        (
            "    limits:\n      call-timeout: soon\n".to_owned(),
            "call-timeout `soon` is not a duration such as `30s` or `2m`",
        ),
        (
            "    limits:\n      cpu: 2\n".to_owned(),
            "unknown field `cpu`",
        ),
    ];
    let env = reach("", "reach:Spin", "ms=1");
    let yaml = std::fs::read_to_string(env.project.join("Plinth.yaml")).unwrap();
    for (section, expected) in cases {
        std::fs::write(env.project.join("Plinth.yaml"), format!("{yaml}{section}")).unwrap();
        let stderr = env.fails(&["preview"]);
        assert!(
            stderr.contains("Plinth.yaml is malformed") && stderr.contains(expected),
            "{section}: missing {expected:?} in:\n{stderr}"
        );
    }
}

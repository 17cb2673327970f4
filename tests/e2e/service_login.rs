//! The CLI on a real `plinth serve` (a real PostgreSQL behind it): `plinth login URL` checks the
//! token before storing it, `whoami` names the user and the service, `up` and `destroy` keep
//! the stack's state (and `logs` the update's events) on the service, a stack another update
//! holds is refused naming its holder, and a service without a token is a clear error.

use std::os::unix::fs::PermissionsExt;

use plinth_backend::service::Transport;
use serde_json::json;

use crate::count_line;
use crate::support::service::TestService;
use crate::support::{Env, ServiceLogin, own_home};

#[test]
fn login_whoami_up_and_destroy_on_the_service() {
    let service = TestService::start();
    let url = service.url().to_owned();
    let env = Env::scenario_on(ServiceLogin {
        url: url.clone(),
        token: service.token.clone(),
    });
    let home = own_home();
    // As a user runs plinth: no variable names the backend or the token; the login does.
    let plinth = |args: &[&str]| {
        let mut cmd = env.command(args);
        cmd.env("PLINTH_HOME", home.path())
            .env_remove("PLINTH_BACKEND_URL")
            .env_remove("PLINTH_ACCESS_TOKEN");
        let out = cmd.output().unwrap();
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        (out.status.success(), text(&out.stdout), text(&out.stderr))
    };

    // No token, and no terminal to ask on.
    let (ok, _, err) = plinth(&["login", &url]);
    assert!(!ok && err.contains("pass --token"), "{err}");
    // A wrong token is refused before anything is stored.
    let (ok, _, err) = plinth(&["login", &format!("{url}/"), "--token", "not-a-token"]);
    assert!(!ok && err.contains("not valid"), "{err}");
    let credentials = home.path().join("credentials.json");
    assert!(!credentials.exists());

    let (ok, out, err) = plinth(&["login", &format!("{url}/"), "--token", &service.token]);
    assert!(ok, "{err}");
    assert!(
        out.contains(&format!("Logged in to {url} as alice.")),
        "{out}"
    );
    let mode = std::fs::metadata(&credentials)
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "credentials must be private");
    let (ok, out, err) = plinth(&["whoami"]);
    assert!(ok, "{err}");
    assert!(
        out.contains("User: alice") && out.contains(&format!("Backend: {url}")),
        "{out}"
    );

    let (ok, out, err) = plinth(&["stack", "ls"]);
    assert!(ok && out.contains("dev"), "{out}{err}");
    let (ok, out, err) = plinth(&["up", "--yes"]);
    assert!(ok, "{out}{err}");
    assert!(count_line(&out).contains("created"), "{out}");
    let created = env.resources();
    assert!(!created.is_empty());
    let (ok, out, err) = plinth(&["preview", "--expect-no-changes"]);
    assert!(ok, "{out}{err}");
    let (ok, out, _) = plinth(&["stack", "history"]);
    assert!(
        ok && out.contains("update") && out.contains("succeeded"),
        "{out}"
    );
    // The update's events are on the service too, for `plinth logs`.
    let (ok, out, err) = plinth(&["logs"]);
    assert!(ok, "{err}");
    assert!(
        out.contains("create urn:plinth:dev::scenario::") && out.contains("done after"),
        "{out}"
    );
    // A token that may only read this stack previews it, and changes nothing.
    let reader = service.database.token_granting(
        "ci",
        &["--level", "read", "--project", "scenario", "--stack", "dev"],
    );
    let as_reader = |args: &[&str]| {
        let out = (env.command(args))
            .env("PLINTH_HOME", home.path())
            .env("PLINTH_ACCESS_TOKEN", &reader)
            .output()
            .unwrap();
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        (out.status.success(), text(&out.stdout), text(&out.stderr))
    };
    let (ok, out, err) = as_reader(&["preview", "--expect-no-changes"]);
    assert!(ok, "{out}{err}");
    for command in [&["up", "--yes"][..], &["destroy", "--yes"]] {
        let (ok, out, err) = as_reader(command);
        assert!(!ok, "{command:?} with a read token: {out}");
        assert!(
            err.contains("grants read on stack scenario/dev") && err.contains("needs write"),
            "{command:?}: {err}"
        );
    }
    assert_eq!(env.resources(), created, "nothing changed");

    // The state lives in the service's database: one version, made by that update.
    let db = &service.database;
    let versions = (db.server)
        .psql(&db.name, "SELECT count(*) FROM versions")
        .unwrap();
    assert_eq!(versions.trim(), "1");

    // Another update holds the stack: `up` is refused, naming it.
    let bob = service.database.token("bob");
    let held = Transport::new(&url, &bob)
        .call(
            "POST",
            "stacks/scenario/dev/updates",
            None,
            Some(&json!({ "kind": "update" })),
        )
        .unwrap();
    let (ok, _, err) = plinth(&["up", "--yes"]);
    assert!(!ok, "a held stack is not updated");
    assert!(
        err.contains("`update` by bob") && err.contains("lease expires"),
        "{err}"
    );
    let (ok, out, err) = plinth(&["cancel", "--yes"]);
    assert!(ok && out.contains("bob"), "{out}{err}");
    drop(held);

    let (ok, out, err) = plinth(&["destroy", "--yes"]);
    assert!(ok, "{out}{err}");
    assert!(count_line(&out).contains("deleted"), "{out}");
    assert!(env.resources().is_empty());
    let (ok, _, err) = plinth(&["stack", "rm", "dev"]);
    assert!(ok, "{err}");
    let (ok, out, _) = plinth(&["stack", "ls"]);
    assert!(ok && !out.contains("dev"), "{out}");

    let (ok, out, _) = plinth(&["logout"]);
    assert!(ok && out.contains(&format!("Logged out of {url}")), "{out}");
    // The variable still names the service; without a login or a token, a clear line.
    let mut cmd = env.command(&["stack", "ls"]);
    cmd.env("PLINTH_HOME", home.path())
        .env_remove("PLINTH_ACCESS_TOKEN");
    let out = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains(&format!(
            "run `plinth login {url}`, or set PLINTH_ACCESS_TOKEN"
        )),
        "{err}"
    );
}

/// Issue 27: what the CLI says of a backend URL that names no plinth service (a path after it,
/// another server, a name that does not resolve, a closed port), said at once; a token refused
/// says to log in once; a held stack is named without the refused client's URL; history shows
/// who ran each update.
#[test]
fn a_url_that_names_no_plinth_service_is_said_so_at_once() {
    use std::io::{Read, Write};
    use std::time::{Duration, Instant};
    let service = TestService::start();
    let url = service.url().to_owned();
    let env = Env::scenario_on(ServiceLogin {
        url: url.clone(),
        token: service.token.clone(),
    });
    let home = own_home();
    let plinth = |backend: &str, token: &str, args: &[&str]| {
        let out = (env.command(args))
            .env("PLINTH_HOME", home.path())
            .env("PLINTH_BACKEND_URL", backend)
            .env("PLINTH_ACCESS_TOKEN", token)
            .output()
            .unwrap();
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        (out.status.success(), text(&out.stdout), text(&out.stderr))
    };
    // Another HTTP server, answering HTML to everything.
    let other = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let other_url = format!("http://{}", other.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in other.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut head = [0u8; 4096];
            let _ = stream.read(&mut head);
            let page = "<html><body>It works!</body></html>";
            let answer = format!(
                "HTTP/1.1 404 Not Found\r\nContent-Type: text/html\r\nContent-Length: {}\r\n\
                 Connection: close\r\n\r\n{page}",
                page.len()
            );
            let _ = stream.write_all(answer.as_bytes());
        }
    });
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", listener.local_addr().unwrap())
    };
    let bound = Duration::from_secs(8);
    for (backend, expected) in [
        (format!("{url}/foo"), "without a path"),
        (other_url, "not how a plinth service answers"),
        ("http://plinth.invalid".to_owned(), "does not resolve"),
        (closed, "connection refused"),
    ] {
        let started = Instant::now();
        let (ok, _, err) = plinth(&backend, &service.token, &["whoami"]);
        assert!(!ok, "{backend}");
        assert!(err.contains(expected), "{backend}: {err}");
        assert!(
            !err.contains("<html>") && !err.trim().ends_with("error:"),
            "{err}"
        );
        assert!(
            started.elapsed() < bound,
            "{backend}: {:?}",
            started.elapsed()
        );
    }

    let (ok, _, err) = plinth(&url, "not-a-token", &["whoami"]);
    assert!(!ok && err.matches("log in again").count() == 1, "{err}");

    // The stack's history names who ran each update.
    let (ok, out, err) = plinth(&url, &service.token, &["up", "--yes"]);
    assert!(ok, "{out}{err}");
    let (ok, out, _) = plinth(&url, &service.token, &["stack", "history"]);
    assert!(ok && out.contains("USER") && out.contains("alice"), "{out}");

    // A refused client's own URL is not where the update began: the message names neither.
    let bob = service.database.token("bob");
    let held = Transport::new(&url, &bob)
        .call(
            "POST",
            "stacks/scenario/dev/updates",
            None,
            Some(&json!({ "kind": "update" })),
        )
        .unwrap();
    let (ok, _, err) = plinth(&url, &service.token, &["up", "--yes"]);
    assert!(!ok && err.contains("`update` by bob"), "{err}");
    assert!(!err.contains(&url), "{err}");
    drop(held);
}

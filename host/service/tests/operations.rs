//! Operating the service (issue 27): the database URL kept off the command line, metrics and
//! request logs.

mod common;

use std::io::{BufRead, BufReader, Read};
use std::process::{ChildStderr, Command, Output, Stdio};

use common::*;

/// `plinth-serve ARGS` with the environment `env` (and no inherited database variables).
fn admin(args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(serve_binary())
        .args(args)
        .env_remove("PLINTH_DATABASE_URL")
        .env_remove("PLINTH_DATABASE_FILE")
        .envs(env.iter().copied())
        .output()
        .unwrap()
}

/// A service started with `args` and `env`, and its standard error.
fn start(args: &[&str], env: &[(&str, &str)]) -> (Service, ChildStderr) {
    let mut child = Command::new(serve_binary())
        .args(args)
        .env_remove("PLINTH_DATABASE_URL")
        .env_remove("PLINTH_DATABASE_FILE")
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = (line.trim().strip_prefix("listening on "))
        .unwrap_or_else(|| panic!("the service did not start: {line:?}"))
        .to_owned();
    (Service { child, url }, stderr)
}

/// Stops `service` and returns all it wrote on `stderr`.
fn stopped(service: Service, mut stderr: ChildStderr) -> String {
    drop(service);
    let mut text = String::new();
    stderr.read_to_string(&mut text).unwrap();
    text
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

const WARNING: &str = "password is on the command line";

#[test]
fn the_database_url_comes_from_the_environment_or_a_file_and_one_on_the_command_line_is_warned_of()
{
    let (_server, database) = database();
    let dir = tempfile::tempdir().unwrap();

    // The URL in a file: a token made with it, nothing warned.
    let file = dir.path().join("database-url");
    std::fs::write(&file, format!("{database}\n")).unwrap();
    let file = file.to_str().unwrap();
    let created = admin(
        &[
            "token",
            "create",
            "--user",
            "alice",
            "--database-file",
            file,
        ],
        &[],
    );
    assert!(created.status.success(), "{}", text(&created.stderr));
    assert!(
        !text(&created.stderr).contains(WARNING),
        "{}",
        text(&created.stderr)
    );
    let token = text(&created.stdout).trim().to_owned();

    // The service started with the URL in the environment only answers that token, and does
    // not warn; started with it on the command line, it warns.
    let (service, stderr) = start(
        &["--listen", "127.0.0.1:0"],
        &[("PLINTH_DATABASE_URL", &database)],
    );
    let (status, user) = call(&service, "GET", "user", Some(&token), None, None);
    assert_eq!(
        (status, user["name"].as_str()),
        (200, Some("alice")),
        "{user}"
    );
    let stderr = stopped(service, stderr);
    assert!(!stderr.contains(WARNING), "{stderr}");
    let (service, stderr) = start(&["--listen", "127.0.0.1:0", "--database", &database], &[]);
    let stderr = stopped(service, stderr);
    assert!(stderr.contains(WARNING), "no warning: {stderr}");

    // The same URL on the command line works, and is warned of, without the password.
    let listed = admin(&["token", "list", "--database", &database], &[]);
    assert!(listed.status.success(), "{}", text(&listed.stderr));
    let stderr = text(&listed.stderr);
    assert!(stderr.contains(WARNING), "no warning: {stderr}");
    assert!(stderr.contains("PLINTH_DATABASE_URL") && stderr.contains("--database-file"));
    let password = database
        .split(':')
        .nth(2)
        .unwrap()
        .split('@')
        .next()
        .unwrap();
    assert!(!stderr.contains(password), "{stderr}");

    // The environment's URL is never shown by --help.
    let help = admin(
        &["token", "list", "--help"],
        &[("PLINTH_DATABASE_URL", &database)],
    );
    assert!(help.status.success());
    assert!(
        !text(&help.stdout).contains(password),
        "{}",
        text(&help.stdout)
    );

    // Mistakes say what to do.
    let none = admin(&["token", "list"], &[]);
    assert!(!none.status.success());
    assert!(
        text(&none.stderr).contains("no database: set PLINTH_DATABASE_URL"),
        "{}",
        text(&none.stderr)
    );
    let empty = dir.path().join("empty");
    std::fs::write(&empty, "\n").unwrap();
    let out = admin(
        &["token", "list", "--database-file", empty.to_str().unwrap()],
        &[],
    );
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("does not hold a database URL"),
        "{}",
        text(&out.stderr)
    );
    let out = admin(
        &["token", "list", "--database-file", "/nonexistent/url"],
        &[],
    );
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("cannot read the database URL from /nonexistent/url"),
        "{}",
        text(&out.stderr)
    );
    let both = admin(
        &[
            "token",
            "list",
            "--database",
            &database,
            "--database-file",
            file,
        ],
        &[],
    );
    assert!(!both.status.success());
    assert!(
        text(&both.stderr).contains("cannot be used with"),
        "{}",
        text(&both.stderr)
    );
}

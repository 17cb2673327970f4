//! Run metadata: `--message` and the CI context from the environment (or the project's git
//! commit and branch), recorded with the update in history on both backends and shown by
//! `stack history`, escaped.

use std::process::{Command, Output};

use serde_json::Value;

use crate::support::service::TestService;
use crate::support::{CI_VARS, Env, ServiceLogin};

fn run_in_ci(env: &Env, args: &[&str], vars: &[(&str, &str)]) -> Output {
    let mut cmd = env.command(args);
    for var in CI_VARS {
        cmd.env_remove(var);
    }
    cmd.envs(vars.iter().copied()).output().unwrap()
}

fn history(env: &Env) -> Vec<Value> {
    serde_json::from_str(&env.ok(&["stack", "history", "--json"])).unwrap()
}

const HOSTILE_MESSAGE: &str = "deploy \u{1b}[2Jcleared\nsecond line";

fn records_and_shows_metadata(env: Env) {
    let github = [
        ("CI", "true"),
        ("GITHUB_ACTIONS", "true"),
        ("GITHUB_SHA", "0123abcd"),
        ("GITHUB_REF", "refs/pull/42/merge"),
        ("GITHUB_REF_NAME", "42/merge"),
        ("GITHUB_HEAD_REF", "feature"),
    ];
    let out = run_in_ci(
        &env,
        &["up", "--yes", "--message", HOSTILE_MESSAGE],
        &github,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let entries = history(&env);
    assert_eq!(entries[0]["version"], 1);
    let metadata = &entries[0]["metadata"];
    assert_eq!(metadata["message"], HOSTILE_MESSAGE);
    assert_eq!(metadata["ci"], "github-actions");
    assert_eq!(metadata["commit"], "0123abcd");
    assert_eq!(metadata["branch"], "feature");
    assert_eq!(metadata["pull_request"], "42");

    let gitlab = [
        ("GITLAB_CI", "true"),
        ("CI_COMMIT_SHA", "fedc9876"),
        ("CI_COMMIT_REF_NAME", "topic"),
        ("CI_MERGE_REQUEST_IID", "7"),
    ];
    let out = run_in_ci(&env, &["destroy", "--yes"], &gitlab);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let entries = history(&env);
    assert_eq!(entries[0]["version"], 2);
    let metadata = &entries[0]["metadata"];
    assert_eq!(
        (&metadata["ci"], &metadata["pull_request"]),
        (&Value::from("gitlab-ci"), &Value::from("7"))
    );
    assert!(metadata.get("message").is_none(), "{metadata}");

    // The table shows it under each row, escaped: no terminal control, no line of its own.
    let table = env.ok(&["stack", "history"]);
    assert!(
        table.contains(r"message: deploy \u{1b}[2Jcleared\nsecond line"),
        "{table}"
    );
    assert!(
        table.contains("ci: github-actions  commit: 0123abcd  branch: feature  pull request: 42"),
        "{table}"
    );
    assert!(
        !table.contains('\u{1b}') && !table.contains("\nsecond line"),
        "{table}"
    );

    // A message past the cap is refused before anything runs.
    let long = "m".repeat(1025);
    let out = run_in_ci(&env, &["up", "--yes", "--message", &long], &[]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("at most 1024"), "{err}");
    assert_eq!(history(&env).len(), 2);
}

#[test]
fn metadata_is_recorded_and_shown_on_files() {
    records_and_shows_metadata(Env::scenario());
}

#[test]
fn metadata_is_recorded_and_shown_on_the_service() {
    let service = TestService::start();
    records_and_shows_metadata(Env::scenario_on(ServiceLogin {
        url: service.url().to_owned(),
        token: service.token.clone(),
    }));
}

#[test]
fn outside_ci_the_projects_git_commit_and_branch_are_recorded() {
    let env = Env::scenario();
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .args(["-c", "user.name=e2e", "-c", "user.email=e2e@example.com"])
            .args(args)
            .current_dir(&env.project)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    };
    git(&["init", "-q", "-b", "trunk"]);
    git(&["add", "Plinth.yaml"]);
    git(&["commit", "-q", "-m", "init"]);
    let commit = git(&["rev-parse", "HEAD"]);
    let out = run_in_ci(&env, &["up", "--yes"], &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let metadata = &history(&env)[0]["metadata"];
    assert_eq!(metadata["commit"], commit.as_str());
    assert_eq!(metadata["branch"], "trunk");
    assert!(metadata.get("ci").is_none(), "{metadata}");
}

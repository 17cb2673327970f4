//! `--message` and the context a recorded run is recorded with: the CI system, commit, branch
//! and pull request its environment names (GitHub Actions, GitLab CI, any CI that sets
//! `CI=true`), else the project directory's git commit and branch.

use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{Result, bail};
use clap::Args;
use plinth_backend::RunMetadata;
use plinth_backend::run_metadata::{MAX_FIELD, MAX_MESSAGE};

#[derive(Args)]
pub struct MetadataArgs {
    /// A message recorded with the update in the stack's history (`plinth stack history`).
    #[arg(short, long, value_name = "TEXT")]
    message: Option<String>,
}

impl MetadataArgs {
    /// The run's metadata: the message, and the context from the environment and `project_dir`.
    pub fn metadata(&self, project_dir: &Path) -> Result<RunMetadata> {
        if let Some(message) = &self.message {
            let length = message.chars().count();
            if length > MAX_MESSAGE {
                bail!(
                    "the --message is {length} characters long; at most {MAX_MESSAGE} are kept: \
                     shorten it"
                );
            }
        }
        let mut metadata = from_env(|name| std::env::var(name).ok());
        metadata.message = self.message.clone();
        if metadata.commit.is_none() || metadata.branch.is_none() {
            // One git for both: the commit's line, then the branch's (`HEAD` when detached,
            // which is no branch).
            let found = git(project_dir, &["rev-parse", "HEAD", "--abbrev-ref", "HEAD"]);
            let mut lines = found.as_deref().unwrap_or_default().lines();
            let (commit, branch) = (lines.next(), lines.next());
            metadata.commit = (metadata.commit).or_else(|| commit.map(|c| capped(c.to_owned())));
            metadata.branch = (metadata.branch).or_else(|| {
                branch
                    .filter(|b| *b != "HEAD")
                    .map(|b| capped(b.to_owned()))
            });
        }
        Ok(metadata)
    }
}

/// The CI context `var` gives: GitHub Actions', GitLab CI's, or a CI's that names itself by
/// `CI=true` only. Values longer than the history keeps are cut.
fn from_env(var: impl Fn(&str) -> Option<String>) -> RunMetadata {
    let set = |name: &str| var(name).filter(|v| !v.is_empty()).map(capped);
    let is_true = |name: &str| var(name).is_some_and(|v| v.eq_ignore_ascii_case("true"));
    if is_true("GITHUB_ACTIONS") {
        // A pull request's run is on `refs/pull/N/merge`; its branch is the head's.
        let pull_request = var("GITHUB_REF").and_then(|r| {
            let number = r.strip_prefix("refs/pull/")?.strip_suffix("/merge")?;
            number
                .bytes()
                .all(|b| b.is_ascii_digit())
                .then(|| capped(number.to_owned()))
        });
        return RunMetadata {
            ci: Some("github-actions".into()),
            commit: set("GITHUB_SHA"),
            branch: set("GITHUB_HEAD_REF").or_else(|| set("GITHUB_REF_NAME")),
            pull_request,
            message: None,
        };
    }
    if is_true("GITLAB_CI") {
        return RunMetadata {
            ci: Some("gitlab-ci".into()),
            commit: set("CI_COMMIT_SHA"),
            branch: set("CI_COMMIT_REF_NAME"),
            pull_request: set("CI_MERGE_REQUEST_IID"),
            message: None,
        };
    }
    RunMetadata {
        ci: is_true("CI").then(|| "ci".into()),
        ..RunMetadata::default()
    }
}

/// `value`, cut to the characters the history keeps.
fn capped(value: String) -> String {
    match value.char_indices().nth(MAX_FIELD) {
        Some((end, _)) => value[..end].to_owned(),
        None => value,
    }
}

/// What `git ARGS` prints in `dir`, trimmed; `None` without git or outside a repository.
/// Its output is captured, never passed on (a `--json` stdout holds JSON only). Each line is
/// cut to what the history keeps by the caller.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let output = Command::new("git")
        .arg("-C")
        .arg(dir)
        // A repository's own configuration may name programs to run; none is wanted here.
        .args(["-c", "core.fsmonitor=false"])
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8(output.stdout).ok()?;
    let text = text.trim();
    (output.status.success() && !text.is_empty()).then(|| text.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let vars: HashMap<String, String> = (vars.iter())
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| vars.get(name).cloned()
    }

    #[test]
    fn github_actions_gives_the_pull_request_and_its_head_branch() {
        let metadata = from_env(env(&[
            ("CI", "true"),
            ("GITHUB_ACTIONS", "true"),
            ("GITHUB_SHA", "abc123"),
            ("GITHUB_REF", "refs/pull/42/merge"),
            ("GITHUB_REF_NAME", "42/merge"),
            ("GITHUB_HEAD_REF", "feature"),
        ]));
        assert_eq!(metadata.ci.as_deref(), Some("github-actions"));
        assert_eq!(metadata.commit.as_deref(), Some("abc123"));
        assert_eq!(metadata.branch.as_deref(), Some("feature"));
        assert_eq!(metadata.pull_request.as_deref(), Some("42"));
        // A push: the branch is the ref's name, and there is no pull request.
        let push = from_env(env(&[
            ("GITHUB_ACTIONS", "true"),
            ("GITHUB_REF", "refs/heads/main"),
            ("GITHUB_REF_NAME", "main"),
            ("GITHUB_HEAD_REF", ""),
        ]));
        assert_eq!(push.branch.as_deref(), Some("main"));
        assert_eq!(push.pull_request, None);
    }

    #[test]
    fn gitlab_ci_and_a_generic_ci_are_told_apart() {
        let gitlab = from_env(env(&[
            ("CI", "true"),
            ("GITLAB_CI", "true"),
            ("CI_COMMIT_SHA", "def456"),
            ("CI_COMMIT_REF_NAME", "topic"),
            ("CI_MERGE_REQUEST_IID", "7"),
        ]));
        assert_eq!(
            (gitlab.ci.as_deref(), gitlab.commit.as_deref()),
            (Some("gitlab-ci"), Some("def456"))
        );
        assert_eq!(gitlab.pull_request.as_deref(), Some("7"));
        assert_eq!(from_env(env(&[("CI", "true")])).ci.as_deref(), Some("ci"));
        assert!(from_env(env(&[])).is_empty());
    }

    #[test]
    fn an_overlong_value_is_cut_to_what_history_keeps() {
        let long = "é".repeat(MAX_FIELD + 10);
        let metadata = from_env(env(&[("GITLAB_CI", "true"), ("CI_COMMIT_REF_NAME", &long)]));
        assert_eq!(metadata.branch.unwrap().chars().count(), MAX_FIELD);
    }
}

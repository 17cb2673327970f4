//! Saved plans (`plinth preview --save-plan`, `plinth up --plan`): the file, what it pins, and
//! the checks that refuse a plan that is no longer true, each naming the first difference.
//!
//! A plan file is JSON. Its secrets are sealed with the stack's key, as in state: the file
//! never holds a plaintext secret, and only someone who can open the stack's secrets can use
//! it.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::Path;

use anyhow::{Context, Result, anyhow};
use plinth_backend::secrets::{Crypter, open_tree, seal_tree};
use plinth_backend::{PluginUse, write_atomically};
use plinth_engine::plan::{self, PlannedStep};
use plinth_engine::shown::escape_controls;
use plinth_engine::snapshot::Snapshot;
use plinth_engine::value::{SIG_KEY, Value};
use serde::{Deserialize, Serialize};

use crate::plugin::store::sha256_hex;
use crate::stack_transfer::MAX_IMPORT_BYTES;

/// The largest plan read: it holds the steps' inputs, so it is about a checkpoint's size, and
/// none could be bigger than the largest checkpoint plinth imports. Read whole, a hostile one
/// (`/dev/zero`) would exhaust memory.
const MAX_PLAN_BYTES: u64 = MAX_IMPORT_BYTES;

/// The format this plinth writes and reads; a plan of any other is refused, never misread.
pub const FORMAT: u64 = 1;
/// The key that marks a JSON file as a plan; it holds the format version.
const FORMAT_KEY: &str = "plinth-plan";

/// What `up --plan` applies, and everything it was made from.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    #[serde(rename = "plinth-plan")]
    pub format: u64,
    /// The plinth that made it: for people, not checked.
    pub plinth: String,
    pub project: String,
    pub stack: String,
    /// The backend's URL.
    pub backend: String,
    /// The state the plan was made against.
    pub state: StateMark,
    /// The SHA-256 of the program component.
    pub program: String,
    /// The plugins the preview loaded.
    pub plugins: Vec<PluginUse>,
    /// The stack's configuration; secrets sealed.
    pub config: BTreeMap<String, Value>,
    pub options: PlanOptions,
    pub steps: Vec<PlannedStep>,
}

/// Which state a plan was made against.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StateMark {
    /// The state's version: the number of updates in its history (on the service, the version
    /// it names).
    pub version: u64,
    /// The SHA-256 of the state, secrets left out (see [`state_digest`]).
    pub digest: String,
}

/// The options of the preview that made the plan, which `up --plan` runs with.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct PlanOptions {
    pub refresh: bool,
    pub targets: Vec<String>,
    pub target_dependents: bool,
    /// `--exclude` and `--exclude-dependents` (absent from plans of plinths before them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exclude: Vec<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub exclude_dependents: bool,
    pub replace: Vec<String>,
}

impl PlanOptions {
    /// The resources the plan's preview ran on: the names it targeted or excluded, with their
    /// dependents or not, and whether they were excluded.
    pub fn selection(&self) -> (Vec<String>, bool, bool) {
        if self.exclude.is_empty() {
            (self.targets.clone(), self.target_dependents, false)
        } else {
            (self.exclude.clone(), self.exclude_dependents, true)
        }
    }
}

/// Why a plan cannot be applied: the first difference found. Nothing was changed.
pub fn refused(reason: impl std::fmt::Display) -> anyhow::Error {
    anyhow!(
        "the plan cannot be applied: {reason}. Nothing was changed; make a new plan with \
         `plinth preview --save-plan FILE`"
    )
}

impl Plan {
    /// Writes the plan to `path` whole or not at all, its secrets sealed by `crypter`.
    pub fn write(&self, path: &Path, crypter: &dyn Crypter) -> Result<()> {
        let mut tree = serde_json::to_value(self).context("encoding the plan")?;
        seal_tree(&mut tree, crypter).context("sealing the plan's secrets")?;
        let mut bytes = serde_json::to_vec_pretty(&tree).context("encoding the plan")?;
        bytes.push(b'\n');
        write_atomically(path, &bytes)
            .with_context(|| format!("cannot write the plan to {}", path.display()))
    }

    /// Reads the plan at `path`, its secrets opened by `crypter`: a file that is not a plan of
    /// this format, or is one of another stack than `(project, stack, backend)`, is a clear
    /// error before any secret is opened.
    pub fn read(path: &Path, stack: (&str, &str, &str), crypter: &dyn Crypter) -> Result<Plan> {
        let shown = path.display();
        let mut bytes = Vec::new();
        // A regular file's size is known before it is read; a stream's only by reading it.
        let size = (std::fs::File::open(path).and_then(|file| {
            let size = file.metadata()?.len();
            if size <= MAX_PLAN_BYTES {
                file.take(MAX_PLAN_BYTES + 1).read_to_end(&mut bytes)?;
            }
            Ok(size)
        }))
        .with_context(|| format!("cannot read the plan {shown}"))?;
        if size.max(bytes.len() as u64) > MAX_PLAN_BYTES {
            return Err(anyhow!(
                "{shown} is larger than {} MiB, the most a plan may be (as much as `stack \
                 import` reads): is it the right file?",
                MAX_PLAN_BYTES >> 20
            ));
        }
        let not_a_plan = |why: String| {
            anyhow!(
                "{shown} is not a plinth plan ({why}); make one with `plinth preview \
                 --save-plan FILE`"
            )
        };
        let mut tree: serde_json::Value = serde_json::from_slice(&bytes)
            .map_err(|e| not_a_plan(format!("it is not whole JSON: {e}")))?;
        match tree.get(FORMAT_KEY).map(|v| (v, v.as_u64())) {
            None => {
                return Err(not_a_plan(format!(
                    "it has no `{FORMAT_KEY}` format version"
                )));
            }
            Some((_, Some(FORMAT))) => {}
            Some((_, Some(other))) => {
                return Err(anyhow!(
                    "{shown} is a plan of format version {other}, but this plinth reads \
                     version {FORMAT}: make the plan again with this plinth"
                ));
            }
            Some((v, None)) => {
                let v = v.to_string();
                return Err(not_a_plan(format!(
                    "its format version is {}, not a number",
                    escape_controls(&v)
                )));
            }
        }
        // Whose it is, read first: another stack's key cannot open its secrets.
        let head: Head = serde_json::from_value(tree.clone()).map_err(|e| {
            let e = e.to_string();
            anyhow!("{shown} is not a valid plan: {}", escape_controls(&e))
        })?;
        head.check_stack(stack.0, stack.1, stack.2)?;
        open_tree(&mut tree, crypter)
            .with_context(|| format!("cannot open the secrets of the plan {shown}"))?;
        serde_json::from_value(tree).map_err(|e| {
            let e = e.to_string();
            anyhow!(
                "{shown} is not a valid plan: {}; make it again with `plinth preview \
                 --save-plan FILE`",
                escape_controls(&e)
            )
        })
    }
}

/// The stack a plan file names.
#[derive(Deserialize)]
struct Head {
    project: String,
    stack: String,
    backend: String,
}

impl Head {
    /// Refuses a plan made for another stack or backend.
    fn check_stack(&self, project: &str, stack: &str, backend: &str) -> Result<()> {
        if (self.project.as_str(), self.stack.as_str()) != (project, stack) {
            return Err(refused(format!(
                "it was made for stack `{}` of project `{}`, not stack `{stack}` of project \
                 `{project}`",
                escape_controls(&self.stack),
                escape_controls(&self.project)
            )));
        }
        if self.backend != backend {
            return Err(refused(format!(
                "it was made on the backend {}, not {backend}",
                escape_controls(&self.backend)
            )));
        }
        Ok(())
    }
}

impl Plan {
    /// Refuses a plan whose configuration is not the stack's now.
    pub fn check_config(&self, config: &BTreeMap<String, Value>) -> Result<()> {
        let keys: BTreeSet<&String> = self.config.keys().chain(config.keys()).collect();
        for key in keys {
            let key_shown = escape_controls(key);
            match (self.config.get(key), config.get(key)) {
                (Some(planned), Some(now)) if planned == now => {}
                (Some(_), Some(_)) => {
                    return Err(refused(format!(
                        "the configuration value `{key_shown}` changed since the plan was made"
                    )));
                }
                (Some(_), None) => {
                    return Err(refused(format!(
                        "the configuration value `{key_shown}` was removed since the plan was \
                         made"
                    )));
                }
                (None, _) => {
                    return Err(refused(format!(
                        "the configuration value `{key_shown}` was set since the plan was made"
                    )));
                }
            }
        }
        Ok(())
    }

    /// Refuses a plan made with another program.
    pub fn check_program(&self, digest: &str) -> Result<()> {
        if self.program != digest {
            return Err(refused(format!(
                "the program changed since the plan was made (its SHA-256 is now {digest}, \
                 not {})",
                escape_controls(&self.program)
            )));
        }
        Ok(())
    }

    /// Refuses a plan whose state is not the stack's now.
    pub fn check_state(&self, now: &StateMark) -> Result<()> {
        if self.state.version != now.version {
            return Err(refused(format!(
                "the stack's state moved since the plan was made: it is now at version {}, \
                 the plan was made against version {}",
                now.version, self.state.version
            )));
        }
        if self.state.digest != now.digest {
            return Err(refused(format!(
                "the stack's state changed since the plan was made (version {}, but its digest \
                 is now {}, not {})",
                now.version,
                now.digest,
                escape_controls(&self.state.digest)
            )));
        }
        Ok(())
    }

    /// Refuses a plan whose plugins are not the ones the preview loaded now.
    pub fn check_plugins(&self, now: &[PluginUse]) -> Result<()> {
        let by_name = |plugins: &[PluginUse]| -> BTreeMap<String, PluginUse> {
            plugins
                .iter()
                .map(|p| (p.name.clone(), p.clone()))
                .collect()
        };
        let (planned, now) = (by_name(&self.plugins), by_name(now));
        let names: BTreeSet<&String> = planned.keys().chain(now.keys()).collect();
        for name in names {
            let name_shown = escape_controls(name);
            match (planned.get(name), now.get(name)) {
                (Some(p), Some(n)) if p == n => {}
                (Some(p), Some(n)) => {
                    return Err(refused(format!(
                        "the plugin `{name_shown}` changed since the plan was made: it is now \
                         version {} with SHA-256 {}, not version {} with SHA-256 {}",
                        escape_controls(&n.version),
                        n.sha256,
                        escape_controls(&p.version),
                        escape_controls(&p.sha256)
                    )));
                }
                (Some(_), None) => {
                    return Err(refused(format!(
                        "the plugin `{name_shown}` is no longer used"
                    )));
                }
                (None, _) => {
                    return Err(refused(format!(
                        "the plugin `{name_shown}` is used now, but was not when the plan was \
                         made"
                    )));
                }
            }
        }
        Ok(())
    }

    /// Refuses a plan whose steps are not the ones a preview finds now.
    pub fn check_steps(&self, now: &[PlannedStep]) -> Result<()> {
        plan::compare(&self.steps, now).map_err(refused)
    }
}

/// The SHA-256 of a state, its secrets' values left out so that the digest a plan file holds
/// cannot be used to guess them: a secret changes only by an update, which moves the version.
pub fn state_digest(snapshot: &Snapshot) -> Result<String> {
    let mut tree = serde_json::to_value(snapshot).context("encoding the state for its digest")?;
    redact(&mut tree);
    let bytes = serde_json::to_vec(&tree).context("encoding the state for its digest")?;
    Ok(sha256_hex(&bytes))
}

fn redact(tree: &mut serde_json::Value) {
    match tree {
        serde_json::Value::Object(map) => {
            if map.get(SIG_KEY).and_then(|v| v.as_str()) == Some("secret") {
                map.insert("value".to_owned(), serde_json::Value::Null);
                return;
            }
            map.values_mut().for_each(redact);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(redact),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_is_out_of_the_state_digest() {
        let with = |output: serde_json::Value| {
            let snapshot: Snapshot = serde_json::from_value(serde_json::json!({"resources": [{
                "urn": "urn:plinth:dev::p::testkit:Echo::a",
                "type": "testkit:Echo",
                "custom": true,
                "id": "a-1",
                "outputs": {"s": output},
            }]}))
            .unwrap();
            state_digest(&snapshot).unwrap()
        };
        let secret = |text: &str| serde_json::json!({SIG_KEY: "secret", "value": text});
        assert_eq!(with(secret("one")), with(secret("two")));
        assert_ne!(with(secret("one")), with("one".into()));
        assert_ne!(with("one".into()), with("two".into()));
    }
}

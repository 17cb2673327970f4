//! Policy packs for `preview` and `up`: `--policy-pack PATH|oci://…` (repeatable), those
//! `policy-packs:` in Plinth.yaml names (a registry's pulled, verified and pinned in
//! Plinth.lock by `plugin::packs`), and `--policy-pack-config FILE`, the configuration of their policies
//! in Pulumi's format: a JSON object keyed by policy name, each a level (`"advisory"`,
//! `"mandatory"`, `"disabled"`) or an object of configuration with an optional
//! `enforcementLevel`.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use clap::Args;
use plinth_backend::FetchedPack;
use plinth_backend::{PackLimits, RequiredPack};
use plinth_engine::policy::{EnforcementLevel, PolicyPack, PolicyPacks};
use plinth_engine::shown::escape_controls;
use plinth_runtime::{Limits, LoadError, PolicySettings, Runtime, Tier};

use crate::build::component_path;
use crate::compiler::Compiler;
use crate::guest::Role;
use crate::home::plinth_home;
use crate::plugin::lockfile::{self, Pin};
use crate::plugin::oci::Reference;
use crate::plugin::packs;
use crate::plugin::signature::TrustPolicy;
use crate::plugin::store::Store;
use crate::project::{PackSource, Project};

/// The largest configuration file read: it holds a few settings per policy.
const MAX_CONFIG_BYTES: u64 = 1 << 20;

#[derive(Args, Default, Clone)]
pub struct PolicyArgs {
    /// Run this policy pack (a `.wasm` file, a guest directory to build, or
    /// `oci://HOST/REPOSITORY[:TAG|@sha256:…]`, pinned in Plinth.lock) on every change;
    /// repeatable. Adds to the `policy-packs:` of Plinth.yaml.
    #[arg(long = "policy-pack", value_name = "PATH | oci://…")]
    packs: Vec<PathBuf>,
    /// The configuration of the packs' policies: JSON keyed by policy name, each a level
    /// (`advisory`, `mandatory`, `disabled`) or an object with an optional `enforcementLevel`.
    #[arg(long, value_name = "FILE")]
    policy_pack_config: Option<PathBuf>,
}

/// Loads every pack `project` and `args` name, configured as `args` says, and the packs the
/// backend enforces (`enforced`), configured as the backend says: the client's configuration
/// does not apply to them, so it cannot lower their levels.
pub async fn load(
    runtime: &Runtime,
    project: &Project,
    args: &PolicyArgs,
    enforced: &[FetchedPack],
    compiler: Compiler,
) -> Result<PolicyPacks> {
    let config = match &args.policy_pack_config {
        Some(path) => read_config(path)?,
        None => Config::default(),
    };
    let given = (args.packs.iter())
        .map(|path| {
            PackSource::parse(path)
                .map(|source| (source, Limits::default()))
                .map_err(|e| anyhow::anyhow!("--policy-pack: {e}"))
        })
        .collect::<Result<Vec<_>>>()?;
    let named = (project.file.policy_packs.iter())
        .map(|spec| (spec.source.clone(), spec.limits.0))
        .chain(given);
    let mut packs: Vec<Arc<dyn PolicyPack>> = Vec::new();
    let mut known = BTreeSet::new();
    let mut registry = Registry::new(project)?;
    for (source, limits) in named {
        let path = match source {
            PackSource::Path(path) => project.resolve(&path),
            PackSource::Registry(reference) => {
                let tier = compiler.tier(false);
                let pack = (registry.load(runtime, &reference, limits, &config, tier)).await?;
                known.extend(pack.policies().map(str::to_owned));
                packs.push(pack);
                continue;
            }
        };
        let source = path.clone();
        let component = tokio::task::spawn_blocking(move || {
            component_path(&source, "policy pack", Role::PolicyPack)
        })
        .await??;
        let tier = compiler.tier(path.is_dir());
        let pack = (runtime.load_policy_pack(&component, limits, &config.settings, tier))
            .await
            .map_err(|e| match e {
                // A pack built from a directory is a file in the build cache: the directory
                // named below is the one the user knows.
                LoadError::Start { message, .. } if component != path => anyhow::anyhow!(message),
                e => e.into(),
            })
            .with_context(|| format!("cannot load the policy pack {}", path.display()))?;
        known.extend(pack.policies().map(str::to_owned));
        packs.push(pack);
    }
    if let Some(note) = registry.pin()? {
        // On stderr: with `--json`, stdout holds events only.
        eprintln!("{note}");
    }
    for fetched in enforced {
        let pack = load_enforced(runtime, fetched, compiler).await?;
        known.extend(pack.policies().map(str::to_owned));
        packs.push(pack);
    }
    if let Some(unknown) = config.settings.keys().find(|name| !known.contains(*name)) {
        bail!(
            "the policy pack configuration names the policy `{}`, which no policy pack holds \
             (they hold: {}); check its spelling",
            escape_controls(unknown),
            if known.is_empty() {
                "none".to_owned()
            } else {
                known.into_iter().collect::<Vec<_>>().join(", ")
            }
        );
    }
    Ok(PolicyPacks(packs))
}

/// The packs from registries a run loads, and the pins it keeps of them.
struct Registry<'a> {
    project: &'a Project,
    store: Store,
    trust: TrustPolicy,
    locked: BTreeMap<String, Pin>,
    pins: BTreeMap<String, Pin>,
}

impl<'a> Registry<'a> {
    fn new(project: &'a Project) -> Result<Registry<'a>> {
        Ok(Registry {
            project,
            store: Store::in_home(&plinth_home()?),
            trust: TrustPolicy::new(&project.file.trust).map_err(|e| anyhow::anyhow!(e))?,
            locked: lockfile::read_lock(&project.dir)?.policy_packs,
            pins: BTreeMap::new(),
        })
    }

    /// The pack `reference` names: pinned, or pulled, verified and stored; compiled from the
    /// bytes checked, granted nothing.
    async fn load(
        &mut self,
        runtime: &Runtime,
        reference: &Reference,
        limits: Limits,
        config: &Config,
        tier: Tier,
    ) -> Result<Arc<plinth_runtime::ComponentPolicyPack>> {
        let key = reference.to_string();
        let fetched = packs::fetch(
            &self.store,
            reference,
            self.locked.get(&key),
            false,
            &self.trust,
        )
        .await?;
        let loading = runtime.load_policy_pack_bytes(
            fetched.component.clone(),
            limits,
            &config.settings,
            tier,
        );
        let pack = (loading.await).with_context(|| format!("cannot load the policy pack {key}"))?;
        let (key, pin) = fetched.settle(&self.store, pack.name(), pack.version())?;
        self.pins.insert(key, pin);
        Ok(pack)
    }

    /// Pins in Plinth.lock the packs loaded; a note saying what changed.
    fn pin(&self) -> Result<Option<String>> {
        if self.pins.is_empty() {
            return Ok(None);
        }
        lockfile::pin_packs(&self.project.dir, &self.pins)
    }
}

/// The limits a pack the service enforces runs under: the service's, the defaults where it
/// sets none.
fn limits_of(set: &PackLimits) -> Limits {
    let default = Limits::default();
    Limits {
        memory_bytes: (set.memory_bytes).map_or(default.memory_bytes, |m| {
            usize::try_from(m).unwrap_or(usize::MAX)
        }),
        call_timeout: (set.call_timeout_ms)
            .map_or(default.call_timeout, std::time::Duration::from_millis),
    }
}

/// Loads the pack a backend enforces, configured and limited as the backend says.
async fn load_enforced(
    runtime: &Runtime,
    fetched: &FetchedPack,
    compiler: Compiler,
) -> Result<Arc<plinth_runtime::ComponentPolicyPack>> {
    let name = escape_controls(&fetched.pack.name).into_owned();
    let failed = || format!("cannot load the policy pack `{name}` the service enforces");
    let settings = match &fetched.pack.config {
        Some(config) => {
            parse_config(&config.to_string())
                .with_context(|| format!("the service's configuration of `{name}` is malformed"))?
                .settings
        }
        None => BTreeMap::new(),
    };
    // The runtime loads components from files: this one lives as long as the load.
    let mut file = tempfile::Builder::new()
        .prefix("enforced-pack-")
        .suffix(".wasm")
        .tempfile()
        .with_context(failed)?;
    std::io::Write::write_all(&mut file, &fetched.component).with_context(failed)?;
    let limits = limits_of(&fetched.pack.limits);
    (runtime.load_policy_pack(file.path(), limits, &settings, compiler.tier(false)))
        .await
        .with_context(failed)
}

/// Refuses to go on if the packs the update was told to run, as it began, are not those
/// loaded (`enforced`): the service's packs changed in between.
pub fn check_enforced(enforced: &[FetchedPack], told: &[RequiredPack]) -> Result<()> {
    let loaded: BTreeSet<&str> = enforced.iter().map(|f| f.pack.digest.as_str()).collect();
    let told: BTreeSet<&str> = told.iter().map(|p| p.digest.as_str()).collect();
    if loaded != told {
        bail!(
            "the policy packs the service enforces on this stack changed while the run \
             started; nothing was changed: run it again"
        );
    }
    Ok(())
}

/// What `--policy-pack-config` says.
#[derive(Debug, Default, PartialEq)]
struct Config {
    settings: BTreeMap<String, PolicySettings>,
}

fn read_config(path: &Path) -> Result<Config> {
    let file = std::fs::File::open(path).with_context(|| {
        format!(
            "cannot read the policy pack configuration {}",
            path.display()
        )
    })?;
    let mut text = String::new();
    file.take(MAX_CONFIG_BYTES + 1)
        .read_to_string(&mut text)
        .with_context(|| {
            format!(
                "cannot read the policy pack configuration {}",
                path.display()
            )
        })?;
    if text.len() as u64 > MAX_CONFIG_BYTES {
        bail!(
            "the policy pack configuration {} is larger than {} KiB: is it the right file?",
            path.display(),
            MAX_CONFIG_BYTES >> 10
        );
    }
    parse_config(&text).with_context(|| {
        format!(
            "the policy pack configuration {} is malformed",
            path.display()
        )
    })
}

fn parse_config(text: &str) -> Result<Config> {
    let root: serde_json::Value = serde_json::from_str(text)?;
    let serde_json::Value::Object(entries) = root else {
        bail!("it must be a JSON object keyed by policy name");
    };
    let mut settings = BTreeMap::new();
    for (name, entry) in entries {
        let shown = escape_controls(&name).into_owned();
        let setting = match entry {
            serde_json::Value::String(level) => PolicySettings {
                level: Some(parse_level(&shown, &level)?),
                config: None,
            },
            serde_json::Value::Object(mut object) => {
                let level = match object.remove("enforcementLevel") {
                    None => None,
                    Some(serde_json::Value::String(level)) => Some(parse_level(&shown, &level)?),
                    Some(other) => bail!(
                        "`{shown}`: `enforcementLevel` is {other}, not one of \"advisory\", \
                         \"mandatory\", \"disabled\""
                    ),
                };
                let config =
                    (!object.is_empty()).then(|| serde_json::Value::Object(object).to_string());
                PolicySettings { level, config }
            }
            other => bail!(
                "`{shown}` is {other}: give a level (\"advisory\", \"mandatory\", \"disabled\") \
                 or an object of configuration"
            ),
        };
        settings.insert(name, setting);
    }
    Ok(Config { settings })
}

fn parse_level(policy: &str, level: &str) -> Result<EnforcementLevel> {
    EnforcementLevel::parse(level).with_context(|| {
        format!(
            "`{policy}`: the level \"{}\" is not one of \"advisory\", \"mandatory\", \"disabled\"",
            escape_controls(level)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_pulumis_format() {
        let config = parse_config(
            r#"{"password-length": {"minimum": 32},
                "no-superuser": "advisory",
                "short": {"enforcementLevel": "disabled"}}"#,
        )
        .unwrap();
        let setting = |name: &str| config.settings[name].clone();
        assert_eq!(
            setting("password-length"),
            PolicySettings {
                level: None,
                config: Some(r#"{"minimum":32}"#.into())
            }
        );
        assert_eq!(
            setting("no-superuser").level,
            Some(EnforcementLevel::Advisory)
        );
        assert_eq!(
            setting("short"),
            PolicySettings {
                level: Some(EnforcementLevel::Disabled),
                config: None
            }
        );
    }

    #[test]
    fn bad_configurations_say_what_is_wrong() {
        for (text, expected) in [
            ("[1]", "JSON object keyed by policy name"),
            (r#"{"p": "strict"}"#, "the level \"strict\" is not one of"),
            (
                r#"{"p": {"enforcementLevel": 3}}"#,
                "`enforcementLevel` is 3",
            ),
            (r#"{"p": 3}"#, "`p` is 3: give a level"),
        ] {
            let error = format!("{:#}", parse_config(text).unwrap_err());
            assert!(error.contains(expected), "{text}: {error}");
        }
    }
}

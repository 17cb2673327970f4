//! `Plinth.lock`, beside `Plinth.yaml`: the SHA-256 of every plugin the project loads from a
//! `.wasm` file, the store or a registry, so that a changed plugin is never run unnoticed; for a
//! registry's plugin also the version its range resolved to, the manifest to fetch it again by,
//! and the capabilities it asks for (approved like the digest). Plugins built from a crate
//! directory are development builds and are not pinned.
//!
//! Policy packs from a registry are pinned the same way, under `policy-packs:`, by the
//! `oci://` reference they are named by (in Plinth.yaml or with `--policy-pack`).
//!
//! Version 1 locks (no registry pins) are read as they are and rewritten as version 2 when the
//! lock next changes or `plinth plugin lock` runs. A lock that pins policy packs is version 3,
//! so that a plinth that does not know them refuses it, naming its version, instead of
//! ignoring the pins.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use plinth_backend::write_atomically;
use plinth_engine::shown::escape_controls;
use serde::{Deserialize, Serialize};

use super::approval::PinnedCapabilities;

pub const LOCK_FILE: &str = "Plinth.lock";

/// The lock schema this plinth writes; [`PACKS_VERSION`] when it pins policy packs.
const LOCK_VERSION: u32 = 2;
const PACKS_VERSION: u32 = 3;
/// The schemas it reads: version 1 is version 2 without registry pins, version 2 is version 3
/// without policy packs.
const READS_VERSIONS: [u32; 3] = [1, 2, 3];

const HEADER: &str = "\
# Written by plinth: the exact build of each plugin this project uses. Commit it.
# To accept a changed plugin, run `plinth plugin lock`.
";

/// One pinned plugin. Every field but `sha256` is optional, so that a pin can grow (a signer,
/// a signature) without breaking the locks written before.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pin {
    /// The SHA-256 (hex) of the component's bytes: what runs.
    pub sha256: String,
    /// The version, for a plugin from the store or a registry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The path Plinth.yaml gives, for a `.wasm` file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<PathBuf>,
    /// The repository, `oci://HOST[:PORT]/REPOSITORY`, for a plugin from a registry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The digest of the manifest the version resolved to: the component is fetched again by
    /// it, never by its tag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manifest: Option<String>,
    /// What a registry's plugin asks for, approved with the pin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<PinnedCapabilities>,
    /// The id of the trusted key that signed it, when one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signer: Option<String>,
    /// Its minisign signature, kept so that runs verify it offline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
}

impl Pin {
    pub fn origin(&self) -> String {
        let shown = |s: &str| escape_controls(s).into_owned();
        match (&self.source, &self.version, &self.path) {
            (Some(source), Some(version), _) => {
                format!("version {} from {}", shown(version), shown(source))
            }
            (None, Some(version), _) => format!("version {} from the store", shown(version)),
            (_, None, Some(path)) => format!("file {}", shown(&path.display().to_string())),
            _ => "unknown origin".to_owned(),
        }
    }
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct LockFile {
    version: u32,
    #[serde(default)]
    plugins: BTreeMap<String, Pin>,
    #[serde(
        default,
        rename = "policy-packs",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    policy_packs: BTreeMap<String, Pin>,
}

/// What a `Plinth.lock` pins.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Lock {
    /// Plugins by name.
    pub plugins: BTreeMap<String, Pin>,
    /// Policy packs from a registry, by their `oci://` reference.
    pub policy_packs: BTreeMap<String, Pin>,
}

/// The plugins' pins of the project's `Plinth.lock`; none without one.
pub fn locked(project_dir: &Path) -> Result<BTreeMap<String, Pin>> {
    Ok(read_lock(project_dir)?.plugins)
}

/// Everything the project's `Plinth.lock` pins; nothing without one.
pub fn read_lock(project_dir: &Path) -> Result<Lock> {
    Ok(read(&project_dir.join(LOCK_FILE))?
        .map(|(_, lock)| lock)
        .unwrap_or_default())
}

/// Checks the project's plugins, as `pins` pins them, against its `Plinth.lock`: a plugin whose
/// SHA-256 differs from the pinned one is an error (but for a registry's plugin: resolving it
/// held it to the lock already, and a move is the user's, by its range or `--upgrade`). A project without a lock gets one; plugins added to or removed
/// from `Plinth.yaml` are added to or removed from it. Returns a note saying what was written.
pub fn verify(project_dir: &Path, pins: &BTreeMap<String, Pin>) -> Result<Option<String>> {
    let path = project_dir.join(LOCK_FILE);
    let Some((_, lock)) = read(&path)? else {
        if pins.is_empty() {
            return Ok(None);
        }
        save(
            &path,
            &Lock {
                plugins: pins.clone(),
                ..Lock::default()
            },
        )?;
        return Ok(Some(format!(
            "Wrote {LOCK_FILE}, pinning {}.",
            names(pins.keys())
        )));
    };
    let locked = &lock.plugins;
    let mut mismatches = String::new();
    for (name, pin) in pins {
        if let Some(old) = locked.get(name)
            && old.sha256 != pin.sha256
            && pin.source.is_none()
        {
            let _ = write!(
                mismatches,
                "\n  plugin `{name}` does not match {LOCK_FILE}: it pins sha256 {} ({}), the \
                 project now has sha256 {} ({})",
                old.sha256,
                old.origin(),
                pin.sha256,
                pin.origin()
            );
        }
    }
    if !mismatches.is_empty() {
        bail!(
            "refusing to run plugins that changed since {LOCK_FILE} was written:{mismatches}\n\
             If the change is expected, accept it with `plinth plugin lock`."
        );
    }
    if locked == pins {
        return Ok(None);
    }
    let added: Vec<_> = pins.keys().filter(|n| !locked.contains_key(*n)).collect();
    let removed: Vec<_> = locked.keys().filter(|n| !pins.contains_key(*n)).collect();
    // Registry plugins whose range left their pin behind, or whose source changed.
    let moved: Vec<String> = pins
        .iter()
        .filter_map(|(name, pin)| {
            let old = locked.get(name).filter(|old| old.sha256 != pin.sha256)?;
            Some(format!(
                "`{name}` from sha256 {} ({}) to sha256 {} ({})",
                old.sha256,
                old.origin(),
                pin.sha256,
                pin.origin()
            ))
        })
        .collect();
    let written = Lock {
        plugins: pins.clone(),
        policy_packs: lock.policy_packs.clone(),
    };
    save(&path, &written)?;
    if written.plugins.is_empty() && written.policy_packs.is_empty() {
        return Ok(Some(format!(
            "Removed {LOCK_FILE}: no plugin is left to pin."
        )));
    }
    let mut note = format!("Updated {LOCK_FILE}");
    if !added.is_empty() {
        let _ = write!(note, ", pinning {}", names(added));
    }
    if !removed.is_empty() {
        let _ = write!(note, ", dropping {}", names(removed));
    }
    if !moved.is_empty() {
        let _ = write!(note, ", moving {}", moved.join(", "));
    }
    Ok(Some(note + "."))
}

/// Rewrites the lock to pin the plugins and policy packs as `pins` does now; returns one line
/// per change.
pub fn relock(project_dir: &Path, pins: &Lock) -> Result<Vec<String>> {
    let path = project_dir.join(LOCK_FILE);
    let (schema, old) = read(&path)?.unwrap_or((LOCK_VERSION, Lock::default()));
    let mut changes = Vec::new();
    changes.extend(changes_of(
        &old.plugins,
        &pins.plugins,
        |n| format!("`{n}`"),
        "no longer in the project",
    ));
    changes.extend(changes_of(
        &old.policy_packs,
        &pins.policy_packs,
        |r| format!("the policy pack {}", escape_controls(r)),
        "Plinth.yaml does not name it (a run with `--policy-pack` pins it again)",
    ));
    let wanted = schema_of(pins);
    if pins != &old || schema != wanted {
        if schema != wanted && !(pins.plugins.is_empty() && pins.policy_packs.is_empty()) {
            changes.push(format!(
                "rewrote it in version {wanted} of its format (it was version {schema})"
            ));
        }
        save(&path, pins)?;
    }
    Ok(changes)
}

/// Pins the policy packs of `pins` (by reference), keeping the lock's other pins: those of
/// packs this run did not name stay for the runs that do. Returns a note saying what changed.
pub fn pin_packs(project_dir: &Path, pins: &BTreeMap<String, Pin>) -> Result<Option<String>> {
    let path = project_dir.join(LOCK_FILE);
    let old = read(&path)?.map(|(_, lock)| lock).unwrap_or_default();
    let mut lock = old.clone();
    lock.policy_packs
        .extend(pins.iter().map(|(r, p)| (r.clone(), p.clone())));
    if lock == old {
        return Ok(None);
    }
    let changes = changes_of(
        &old.policy_packs,
        &lock.policy_packs,
        |r| format!("the policy pack {}", escape_controls(r)),
        "",
    );
    save(&path, &lock)?;
    Ok(Some(format!(
        "Updated {LOCK_FILE}: {}.",
        changes.join("; ")
    )))
}

/// One line per pin added, moved or dropped from `old` to `new`; `why_dropped` says why a
/// dropped one went.
fn changes_of(
    old: &BTreeMap<String, Pin>,
    new: &BTreeMap<String, Pin>,
    shown: impl Fn(&str) -> String,
    why_dropped: &str,
) -> Vec<String> {
    let mut changes = Vec::new();
    for (name, pin) in new {
        match old.get(name) {
            None => changes.push(format!(
                "pinned {}: sha256 {} ({})",
                shown(name),
                pin.sha256,
                pin.origin()
            )),
            Some(was) if was.sha256 != pin.sha256 => changes.push(format!(
                "updated {}: sha256 {} ({}) -> {} ({})",
                shown(name),
                was.sha256,
                was.origin(),
                pin.sha256,
                pin.origin()
            )),
            Some(_) => {}
        }
    }
    for name in old.keys().filter(|n| !new.contains_key(*n)) {
        changes.push(format!("dropped {}: {why_dropped}", shown(name)));
    }
    changes
}

/// The schema a lock holding `lock` is written in.
fn schema_of(lock: &Lock) -> u32 {
    if lock.policy_packs.is_empty() {
        LOCK_VERSION
    } else {
        PACKS_VERSION
    }
}

fn names<'a>(names: impl IntoIterator<Item = &'a String>) -> String {
    names
        .into_iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The lock's schema version and pins.
fn read(path: &Path) -> Result<Option<(u32, Lock)>> {
    let Some(text) = crate::yaml_file::read(path)? else {
        return Ok(None);
    };
    let lock: LockFile = crate::yaml_file::parse(path, &text).map_err(|e| {
        anyhow::anyhow!(
            "{e}; restore it from version control or rewrite it with `plinth plugin lock`"
        )
    })?;
    if !READS_VERSIONS.contains(&lock.version) {
        bail!(
            "{} has version {}, this plinth reads versions {READS_VERSIONS:?}; use the plinth \
             that wrote it, or rewrite it with `plinth plugin lock`",
            path.display(),
            lock.version
        );
    }
    Ok(Some((
        lock.version,
        Lock {
            plugins: lock.plugins,
            policy_packs: lock.policy_packs,
        },
    )))
}

/// Writes the lock, or removes it when nothing is left to pin: a lock would only say so.
fn save(path: &Path, lock: &Lock) -> Result<()> {
    if lock.plugins.is_empty() && lock.policy_packs.is_empty() {
        return match std::fs::remove_file(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(e).with_context(|| format!("cannot remove {}", path.display()))
            }
            _ => Ok(()),
        };
    }
    let file = LockFile {
        version: schema_of(lock),
        plugins: lock.plugins.clone(),
        policy_packs: lock.policy_packs.clone(),
    };
    let yaml = serde_yaml_ng::to_string(&file)?;
    write_atomically(path, format!("{HEADER}{yaml}").as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pins of plugins by name; a plugin without a hash (a crate directory) has none.
    fn resolved(entries: &[(&str, Option<&str>)]) -> BTreeMap<String, Pin> {
        entries
            .iter()
            .filter_map(|(name, sha)| {
                let pin = Pin {
                    sha256: (*sha)?.to_owned(),
                    version: Some("0.1.0".into()),
                    ..Pin::default()
                };
                Some((name.to_string(), pin))
            })
            .collect()
    }

    fn plugins_only(plugins: BTreeMap<String, Pin>) -> Lock {
        Lock {
            plugins,
            ..Lock::default()
        }
    }

    #[test]
    fn policy_packs_are_pinned_beside_plugins_in_version_3() {
        let dir = tempfile::tempdir().unwrap();
        let lock = dir.path().join(LOCK_FILE);
        let pack = |sha: &str| {
            BTreeMap::from([(
                "oci://r.example/packs/base:1.0.0".to_owned(),
                Pin {
                    sha256: sha.into(),
                    version: Some("1.0.0".into()),
                    source: Some("oci://r.example/packs/base".into()),
                    manifest: Some("sha256:00".into()),
                    ..Pin::default()
                },
            )])
        };
        let note = pin_packs(dir.path(), &pack("aa")).unwrap().unwrap();
        assert!(
            note.contains("pinned the policy pack oci://r.example"),
            "{note}"
        );
        assert!(
            std::fs::read_to_string(&lock)
                .unwrap()
                .contains("version: 3")
        );
        assert_eq!(pin_packs(dir.path(), &pack("aa")).unwrap(), None);

        // Plugins pinned by a run keep the packs' pins, and the other way round.
        verify(dir.path(), &resolved(&[("a", Some("11"))])).unwrap();
        let read = read_lock(dir.path()).unwrap();
        assert_eq!(read.policy_packs, pack("aa"));
        assert_eq!(read.plugins.len(), 1);
        // A run that names no plugin drops their pins, not the packs'.
        verify(dir.path(), &BTreeMap::new()).unwrap();
        assert!(lock.exists());
        assert_eq!(read_lock(dir.path()).unwrap().policy_packs, pack("aa"));

        // `plugin lock` pins what Plinth.yaml names: a pack it does not name is dropped.
        let changes = relock(dir.path(), &Lock::default()).unwrap();
        assert!(
            changes
                .iter()
                .any(|c| c.contains("dropped the policy pack")),
            "{changes:?}"
        );
        assert!(!lock.exists());
    }

    #[test]
    fn written_on_first_use_then_enforced() {
        let dir = tempfile::tempdir().unwrap();
        let lock = dir.path().join(LOCK_FILE);
        assert_eq!(
            verify(dir.path(), &resolved(&[("dev", None)])).unwrap(),
            None
        );
        assert!(!lock.exists(), "nothing pinned, no lock");

        let note = verify(dir.path(), &resolved(&[("a", Some("11")), ("dev", None)])).unwrap();
        assert!(note.unwrap().contains("pinning `a`"));
        let text = std::fs::read_to_string(&lock).unwrap();
        assert!(
            text.starts_with("# Written by plinth") && text.contains("sha256: '11'"),
            "{text}"
        );
        assert_eq!(
            verify(dir.path(), &resolved(&[("a", Some("11"))])).unwrap(),
            None
        );

        let err = verify(dir.path(), &resolved(&[("a", Some("22"))]))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("plugin `a`") && err.contains("11") && err.contains("22"),
            "{err}"
        );
        assert!(err.contains("plinth plugin lock"), "{err}");

        let note = verify(
            dir.path(),
            &resolved(&[("a", Some("11")), ("b", Some("33"))]),
        );
        assert_eq!(note.unwrap().unwrap(), "Updated Plinth.lock, pinning `b`.");
        let changes = relock(dir.path(), &plugins_only(resolved(&[("a", Some("22"))]))).unwrap();
        assert_eq!(changes.len(), 2, "{changes:?}");
        assert_eq!(
            verify(dir.path(), &resolved(&[("a", Some("22"))])).unwrap(),
            None
        );

        let note = verify(dir.path(), &resolved(&[("a", None)])).unwrap();
        assert!(note.unwrap().starts_with("Removed Plinth.lock"));
        assert!(!lock.exists());
    }

    #[test]
    fn a_version_1_lock_keeps_working_and_is_rewritten_by_lock() {
        let dir = tempfile::tempdir().unwrap();
        let lock = dir.path().join(LOCK_FILE);
        let v1 = "version: 1\nplugins:\n  a:\n    sha256: '11'\n    version: 0.1.0\n";
        std::fs::write(&lock, v1).unwrap();
        let pins = resolved(&[("a", Some("11"))]);
        assert_eq!(verify(dir.path(), &pins).unwrap(), None);
        assert_eq!(std::fs::read_to_string(&lock).unwrap(), v1, "left as it is");
        let err = verify(dir.path(), &resolved(&[("a", Some("22"))])).unwrap_err();
        assert!(err.to_string().contains("plugin `a`"), "{err}");

        let changes = relock(dir.path(), &plugins_only(pins.clone())).unwrap();
        assert_eq!(changes.len(), 1, "{changes:?}");
        assert!(changes[0].contains("version 2"), "{changes:?}");
        let text = std::fs::read_to_string(&lock).unwrap();
        assert!(text.contains("version: 2"), "{text}");
        assert_eq!(locked(dir.path()).unwrap(), pins);

        std::fs::write(&lock, "version: 4\nplugins: {}\n").unwrap();
        let err = verify(dir.path(), &pins).unwrap_err().to_string();
        assert!(err.contains("has version 4"), "{err}");
    }

    #[test]
    fn a_malformed_lock_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(LOCK_FILE), "version: 1\nplugins: [x]\n").unwrap();
        let err = verify(dir.path(), &resolved(&[("a", Some("11"))])).unwrap_err();
        assert!(
            err.to_string().contains("Plinth.lock is malformed"),
            "{err}"
        );
    }
}

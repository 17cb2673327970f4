//! The content-addressed plugin store in the plinth home:
//!
//! ```text
//! <home>/plugins/sha256/<hex>.wasm   each component, named by the SHA-256 of its bytes
//! <home>/plugins/index.json          what is installed: name, version, WIT version, sha256,
//!                                    size, when, and where from; and, apart, the components
//!                                    fetched by digest for a project's Plinth.lock (registry
//!                                    plugins and policy packs), which a `version:` alone
//!                                    does not name
//! <home>/plugins/sha256/<hex>.minisig the signature a component came with
//! <home>/plugins/index.lock          held while a command reads and rewrites the index
//! ```
//!
//! Blobs are written before the index names them and removed after it stops naming them, each
//! through a rename, so a crash leaves at worst an unreferenced blob, never a dangling entry.

use std::cmp::Ordering;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use plinth_backend::write_atomically;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The index schema this plinth reads and writes.
const INDEX_VERSION: u32 = 1;

/// One installed plugin.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredPlugin {
    pub name: String,
    pub version: String,
    /// The version of the `plinth:plugin` WIT package the plugin was built against.
    pub wit: String,
    pub sha256: String,
    pub size: u64,
    /// Seconds since the Unix epoch.
    pub installed_at: u64,
    /// The file or URL it was installed from.
    pub source: String,
    /// A provider plugin, or a policy pack (only ever fetched for a lock).
    #[serde(default, skip_serializing_if = "StoredKind::is_plugin")]
    pub kind: StoredKind,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StoredKind {
    #[default]
    Plugin,
    PolicyPack,
}

impl StoredKind {
    fn is_plugin(&self) -> bool {
        *self == StoredKind::Plugin
    }

    pub fn shown(self) -> &'static str {
        match self {
            StoredKind::Plugin => "plugin",
            StoredKind::PolicyPack => "policy pack",
        }
    }
}

impl StoredPlugin {
    pub fn id(&self) -> String {
        format!("{}@{}", self.name, self.version)
    }
}

#[derive(Serialize, Deserialize)]
struct Index {
    version: u32,
    plugins: Vec<StoredPlugin>,
    /// Components a run or `plugin lock` fetched by digest for a project's Plinth.lock: kept
    /// and listed, not installed under their name. (A plinth that predates the field drops it
    /// when it rewrites the index; only the listing is lost, never a blob.)
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pinned: Vec<StoredPlugin>,
}

/// What [`Store::add`] did.
#[derive(Debug, PartialEq, Eq)]
pub enum Added {
    Installed,
    /// The same build was installed already: nothing changed.
    AlreadyInstalled,
    /// Another build of the same name and version was replaced (`--force`).
    Replaced {
        old_sha256: String,
    },
}

pub struct Store {
    dir: PathBuf,
}

impl Store {
    pub fn in_home(home: &Path) -> Store {
        Store {
            dir: home.join("plugins"),
        }
    }

    /// Where the component with this SHA-256 is kept.
    pub fn blob(&self, sha256: &str) -> PathBuf {
        self.dir.join("sha256").join(format!("{sha256}.wasm"))
    }

    /// Where the signature a stored component came with is kept: beside it, named by its
    /// SHA-256 too.
    pub fn signature_path(&self, sha256: &str) -> PathBuf {
        self.dir.join("sha256").join(format!("{sha256}.minisig"))
    }

    /// The signature the component `sha256` came with, if any (read up to a signature's size).
    pub fn signature(&self, sha256: &str) -> Result<Option<String>> {
        let path = self.signature_path(sha256);
        let mut text = String::new();
        match File::open(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
            Ok(file) => {
                use std::io::Read;
                file.take(super::signature::MAX_SIGNATURE_BYTES as u64 + 1)
                    .read_to_string(&mut text)
                    .with_context(|| format!("cannot read {}", path.display()))?;
            }
        }
        Ok(Some(text))
    }

    /// Keeps `signature` beside the stored component `sha256`.
    pub fn add_signature(&self, sha256: &str, signature: &str) -> Result<()> {
        let path = self.signature_path(sha256);
        write_atomically(&path, signature.as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))
    }

    fn index_path(&self) -> PathBuf {
        self.dir.join("index.json")
    }

    /// Every installed plugin, by name, then version (oldest first).
    pub fn list(&self) -> Result<Vec<StoredPlugin>> {
        let mut plugins = self.read_index()?.plugins;
        plugins.sort_by(|a, b| {
            a.name
                .cmp(&b.name)
                .then(compare_versions(&a.version, &b.version))
        });
        Ok(plugins)
    }

    /// The components fetched for a project's lock that are not also installed, by name.
    pub fn list_pinned(&self) -> Result<Vec<StoredPlugin>> {
        let index = self.read_index()?;
        let mut pinned: Vec<StoredPlugin> = (index.pinned.into_iter())
            .filter(|p| !index.plugins.iter().any(|i| i.sha256 == p.sha256))
            .collect();
        pinned.sort_by(|a, b| {
            a.name
                .cmp(&b.name)
                .then(compare_versions(&a.version, &b.version))
        });
        Ok(pinned)
    }

    /// Records `plugin`, whose blob is stored already, as fetched for a project's lock; a
    /// component the index lists already is left as it is.
    pub fn record_pinned(&self, plugin: StoredPlugin) -> Result<()> {
        let _lock = self.lock()?;
        let mut index = self.read_index()?;
        let known = (index.plugins.iter())
            .chain(&index.pinned)
            .any(|p| p.sha256 == plugin.sha256);
        if known {
            return Ok(());
        }
        index.pinned.push(plugin);
        self.write_index(&index)
    }

    /// The installed plugins called `name`, of `version` if given.
    pub fn matching(&self, name: &str, version: Option<&str>) -> Result<Vec<StoredPlugin>> {
        Ok(self
            .list()?
            .into_iter()
            .filter(|p| p.name == name && version.is_none_or(|v| p.version == v))
            .collect())
    }

    /// The one installed plugin `name[@version]` names; an error saying what is installed
    /// otherwise.
    pub fn find(&self, name: &str, version: Option<&str>) -> Result<StoredPlugin> {
        let mut found = self.matching(name, version)?;
        match (found.len(), version) {
            (1, _) => Ok(found.remove(0)),
            (0, _) => bail!("{}", self.not_installed(name, version)?),
            (_, _) => bail!(
                "plugin `{name}` is installed in several versions ({}); name one, e.g. `{}`",
                versions(&found),
                found[found.len() - 1].id()
            ),
        }
    }

    /// Explains that `name[@version]` is not installed, naming the versions that are.
    pub fn not_installed(&self, name: &str, version: Option<&str>) -> Result<String> {
        let what = match version {
            Some(v) => format!("plugin `{name}` version {v} is not installed"),
            None => format!("no plugin `{name}` is installed"),
        };
        let others = self.matching(name, None)?;
        Ok(if others.is_empty() {
            format!("{what}; install it with `plinth plugin install <file.wasm | https://…>`")
        } else {
            format!(
                "{what} (installed: {}); install it with `plinth plugin install <file.wasm | https://…>`",
                versions(&others)
            )
        })
    }

    /// Stores `bytes`, the component `plugin` describes. The same build again is a no-op;
    /// another build under the same name and version is refused unless `force`.
    pub fn add(&self, bytes: &[u8], plugin: StoredPlugin, force: bool) -> Result<Added> {
        let _lock = self.lock()?;
        let mut index = self.read_index()?;
        let existing = index
            .plugins
            .iter()
            .position(|p| p.name == plugin.name && p.version == plugin.version);
        let added = match existing.map(|i| &index.plugins[i]) {
            Some(old) if old.sha256 == plugin.sha256 => {
                // Repairs a blob deleted by hand; the entry stays as first installed.
                self.write_blob(&plugin.sha256, bytes)?;
                return Ok(Added::AlreadyInstalled);
            }
            Some(old) if !force => bail!(
                "plugin `{}` is already installed from another build (sha256 {}, from {}); this one \
                 is sha256 {}. A different build should carry a different version; to replace it \
                 anyway, pass --force",
                plugin.id(),
                old.sha256,
                old.source,
                plugin.sha256
            ),
            Some(old) => Added::Replaced {
                old_sha256: old.sha256.clone(),
            },
            None => Added::Installed,
        };
        self.write_blob(&plugin.sha256, bytes)?;
        match existing {
            Some(i) => index.plugins[i] = plugin,
            None => index.plugins.push(plugin),
        }
        self.write_index(&index)?;
        if let Added::Replaced { old_sha256 } = &added {
            self.remove_blob_unless_used(&index, old_sha256)?;
        }
        Ok(added)
    }

    /// Uninstalls `name[@version]`; refused when `name` alone matches several versions.
    pub fn remove(&self, name: &str, version: Option<&str>) -> Result<StoredPlugin> {
        let _lock = self.lock()?;
        let mut index = self.read_index()?;
        let found = self.find(name, version)?;
        index
            .plugins
            .retain(|p| !(p.name == found.name && p.version == found.version));
        self.write_index(&index)?;
        self.remove_blob_unless_used(&index, &found.sha256)?;
        Ok(found)
    }

    /// Keeps `bytes`, whose SHA-256 is `sha256`, as a blob no index entry names: a registry's
    /// plugin, which Plinth.lock names by digest.
    pub fn put_blob(&self, sha256: &str, bytes: &[u8]) -> Result<()> {
        if sha256_hex(bytes) != sha256 {
            bail!("internal error: a blob stored under another hash than its own");
        }
        self.write_blob(sha256, bytes)
    }

    fn write_blob(&self, sha256: &str, bytes: &[u8]) -> Result<()> {
        let path = self.blob(sha256);
        if file_sha256(&path).ok().as_deref() == Some(sha256) {
            return Ok(());
        }
        let dir = self.dir.join("sha256");
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        write_atomically(&path, bytes).with_context(|| format!("cannot write {}", path.display()))
    }

    fn remove_blob_unless_used(&self, index: &Index, sha256: &str) -> Result<()> {
        // A component a lock pins stays: an offline run needs it.
        if (index.plugins.iter())
            .chain(&index.pinned)
            .any(|p| p.sha256 == sha256)
        {
            return Ok(());
        }
        let path = self.blob(sha256);
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(e).with_context(|| format!("cannot remove {}", path.display()))
            }
            _ => Ok(()),
        }
    }

    fn read_index(&self) -> Result<Index> {
        let path = self.index_path();
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Index {
                    version: INDEX_VERSION,
                    plugins: Vec::new(),
                    pinned: Vec::new(),
                });
            }
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
        };
        let index: Index = serde_json::from_slice(&bytes).with_context(|| {
            format!(
                "the plugin index {} is damaged; move it away and reinstall the plugins",
                path.display()
            )
        })?;
        if index.version != INDEX_VERSION {
            bail!(
                "the plugin index {} has schema version {}, this plinth reads version {INDEX_VERSION}; \
                 use the plinth that wrote it",
                path.display(),
                index.version
            );
        }
        Ok(index)
    }

    fn write_index(&self, index: &Index) -> Result<()> {
        let path = self.index_path();
        let mut json = serde_json::to_vec_pretty(index)?;
        json.push(b'\n');
        write_atomically(&path, &json).with_context(|| format!("cannot write {}", path.display()))
    }

    /// Serializes read-modify-write cycles of the index between processes.
    fn lock(&self) -> Result<File> {
        std::fs::create_dir_all(&self.dir)
            .with_context(|| format!("cannot create {}", self.dir.display()))?;
        let path = self.dir.join("index.lock");
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .with_context(|| format!("cannot open {}", path.display()))?;
        file.lock()
            .with_context(|| format!("cannot lock {}", path.display()))?;
        Ok(file)
    }

    /// A temporary file in the store, for a component being downloaded; removed when dropped.
    pub fn staging_file(&self) -> Result<tempfile::NamedTempFile> {
        std::fs::create_dir_all(&self.dir)
            .with_context(|| format!("cannot create {}", self.dir.display()))?;
        tempfile::Builder::new()
            .prefix(".download-")
            .suffix(".wasm")
            .tempfile_in(&self.dir)
            .with_context(|| format!("cannot create a file in {}", self.dir.display()))
    }
}

/// Orders versions as semantic versions where both are, as text otherwise.
fn compare_versions(a: &str, b: &str) -> Ordering {
    match (semver::Version::parse(a), semver::Version::parse(b)) {
        (Ok(a), Ok(b)) => a.cmp(&b),
        _ => a.cmp(b),
    }
}

fn versions(plugins: &[StoredPlugin]) -> String {
    let versions: Vec<_> = plugins.iter().map(|p| p.version.as_str()).collect();
    versions.join(", ")
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// The SHA-256 of a file's contents, in hex, read in chunks.
pub fn file_sha256(path: &Path) -> std::io::Result<String> {
    let mut hasher = Sha256::new();
    std::io::copy(&mut File::open(path)?, &mut HashWriter(&mut hasher))?;
    Ok(hex::encode(hasher.finalize()))
}

struct HashWriter<'a>(&'a mut Sha256);

impl Write for HashWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plugin(version: &str, bytes: &[u8]) -> StoredPlugin {
        StoredPlugin {
            name: "kit".into(),
            version: version.into(),
            wit: "0.1.0".into(),
            sha256: sha256_hex(bytes),
            size: bytes.len() as u64,
            installed_at: 0,
            source: "kit.wasm".into(),
            kind: StoredKind::Plugin,
        }
    }

    #[test]
    fn components_pinned_by_a_lock_are_listed_apart_and_kept() {
        let home = tempfile::tempdir().unwrap();
        let store = Store::in_home(home.path());
        let mut pack = plugin("1.0.0", b"pack");
        pack.kind = StoredKind::PolicyPack;
        store.put_blob(&pack.sha256, b"pack").unwrap();
        store.record_pinned(pack.clone()).unwrap();
        store.record_pinned(pack.clone()).unwrap();
        assert_eq!(store.list_pinned().unwrap(), [pack.clone()]);
        assert!(store.list().unwrap().is_empty(), "not installed by name");
        assert!(store.find("kit", Some("1.0.0")).is_err());

        // Installed under its name, it is listed as installed only; uninstalled, its blob
        // stays while the lock's record names it.
        let mut installed = pack.clone();
        installed.kind = StoredKind::Plugin;
        store.add(b"pack", installed, false).unwrap();
        assert!(store.list_pinned().unwrap().is_empty(), "listed once");
        store.remove("kit", Some("1.0.0")).unwrap();
        assert!(store.blob(&pack.sha256).exists());
        assert_eq!(store.list_pinned().unwrap(), [pack]);
    }

    #[test]
    fn adds_finds_and_removes_by_content_hash() {
        let home = tempfile::tempdir().unwrap();
        let store = Store::in_home(home.path());
        assert_eq!(
            store.add(b"one", plugin("0.1.0", b"one"), false).unwrap(),
            Added::Installed
        );
        assert_eq!(
            store.add(b"one", plugin("0.1.0", b"one"), false).unwrap(),
            Added::AlreadyInstalled
        );
        let blob = store.blob(&sha256_hex(b"one"));
        assert_eq!(std::fs::read(&blob).unwrap(), b"one");

        let err = store
            .add(b"two", plugin("0.1.0", b"two"), false)
            .unwrap_err();
        assert!(err.to_string().contains("--force"), "{err}");
        assert!(matches!(
            store.add(b"two", plugin("0.1.0", b"two"), true).unwrap(),
            Added::Replaced { .. }
        ));
        assert!(!blob.exists(), "the replaced build's blob is removed");

        store.add(b"ten", plugin("0.10.0", b"ten"), false).unwrap();
        store.add(b"nine", plugin("0.9.0", b"nine"), false).unwrap();
        let listed: Vec<_> = store
            .list()
            .unwrap()
            .into_iter()
            .map(|p| p.version)
            .collect();
        assert_eq!(listed, ["0.1.0", "0.9.0", "0.10.0"]);

        let err = store.remove("kit", None).unwrap_err().to_string();
        assert!(
            err.contains("several versions") && err.contains("kit@0.10.0"),
            "{err}"
        );
        let removed = store.remove("kit", Some("0.9.0")).unwrap();
        assert!(!store.blob(&removed.sha256).exists());
        let err = store.find("kit", Some("0.9.0")).unwrap_err().to_string();
        assert!(err.contains("installed: 0.1.0, 0.10.0"), "{err}");
    }

    #[test]
    fn a_damaged_index_is_a_clear_error() {
        let home = tempfile::tempdir().unwrap();
        let store = Store::in_home(home.path());
        std::fs::create_dir_all(home.path().join("plugins")).unwrap();
        std::fs::write(store.index_path(), "{not json").unwrap();
        let err = format!("{:#}", store.list().unwrap_err());
        assert!(err.contains("is damaged"), "{err}");
    }
}

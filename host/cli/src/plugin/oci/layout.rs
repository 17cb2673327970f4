//! An OCI image-layout directory (the OCI image specification's `oci-layout`, `index.json`,
//! `blobs/sha256/<hex>`), read and written as a registry is: what `plinth plugin mirror --to
//! DIR` writes and a `file://` mirror rule reads, and what `skopeo` reads as `oci:DIR:REF`.
//!
//! One layout holds many repositories: each tagged manifest is named in `index.json` by the
//! annotation `org.opencontainers.image.ref.name` = `REPOSITORY:TAG` (e.g.
//! `plinth/random:0.1.0`, or the signature's `plinth/random:sha256-<hex>.sig`).
//!
//! A layout may have travelled on any medium: everything read from it is checked as a
//! registry's answer is (sizes capped, digests verified, names checked before use).

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};
use plinth_backend::write_atomically;
use plinth_engine::shown::escape_controls;
use serde::{Deserialize, Serialize};

use super::artifact::{Descriptor, INDEX_MEDIA_TYPE, MANIFEST_MEDIA_TYPE, digest_of};
use super::client::MAX_MANIFEST_BYTES;
use super::endpoint::Endpoint;
use super::reference::{check_digest, check_tag};

/// The annotation naming a manifest of the index.
const REF_NAME: &str = "org.opencontainers.image.ref.name";
const LAYOUT_FILE: &str = "oci-layout";
const LAYOUT_VERSION: &str = "1.0.0";
const INDEX_FILE: &str = "index.json";
/// The largest `index.json` read: about 200 bytes an entry, so tens of thousands of entries.
const MAX_INDEX_BYTES: u64 = 16 * 1024 * 1024;

pub struct Layout {
    dir: PathBuf,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct LayoutFile {
    image_layout_version: String,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Index {
    schema_version: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    media_type: Option<String>,
    #[serde(default)]
    manifests: Vec<Entry>,
}

#[derive(Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Entry {
    media_type: String,
    digest: String,
    size: u64,
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    annotations: std::collections::BTreeMap<String, String>,
}

impl Entry {
    fn name(&self) -> Option<&str> {
        self.annotations.get(REF_NAME).map(String::as_str)
    }
}

impl Layout {
    /// The layout at `dir`, to read: it must be one.
    pub fn open(dir: &Path) -> Result<Layout> {
        let layout = Layout {
            dir: dir.to_owned(),
        };
        let path = dir.join(LAYOUT_FILE);
        let text = read_capped(&path, 4096)
            .with_context(|| format!("{} is not an OCI image layout", dir.display()))?;
        let parsed: LayoutFile = serde_json::from_slice(&text).with_context(|| {
            format!(
                "{} is not an OCI image layout: bad {LAYOUT_FILE}",
                dir.display()
            )
        })?;
        if parsed.image_layout_version != LAYOUT_VERSION {
            bail!(
                "{}: image layout version {} is not the {LAYOUT_VERSION} plinth reads",
                dir.display(),
                escape_controls(&parsed.image_layout_version)
            );
        }
        Ok(layout)
    }

    /// The layout at `dir`, to write: made if the directory is missing or empty; an existing
    /// layout is added to.
    pub fn create(dir: &Path) -> Result<Layout> {
        let empty = match std::fs::read_dir(dir) {
            Ok(mut entries) => entries.next().is_none(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => true,
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", dir.display())),
        };
        if !empty {
            return Layout::open(dir).with_context(|| {
                format!(
                    "{} is neither empty nor an OCI image layout: give a new directory",
                    dir.display()
                )
            });
        }
        std::fs::create_dir_all(dir.join("blobs/sha256"))
            .with_context(|| format!("cannot create {}", dir.display()))?;
        let layout = Layout {
            dir: dir.to_owned(),
        };
        layout.write(
            &dir.join(LAYOUT_FILE),
            &serde_json::to_vec(&LayoutFile {
                image_layout_version: LAYOUT_VERSION.into(),
            })?,
        )?;
        layout.write_index(&Index {
            schema_version: 2,
            media_type: Some(INDEX_MEDIA_TYPE.into()),
            manifests: Vec::new(),
        })?;
        Ok(layout)
    }

    fn blob_path(&self, digest: &str) -> Result<PathBuf> {
        let checked = check_digest(digest, &self.dir.display().to_string())?;
        let hex = checked.trim_start_matches("sha256:");
        Ok(self.dir.join("blobs/sha256").join(hex))
    }

    fn read_index(&self) -> Result<Index> {
        let path = self.dir.join(INDEX_FILE);
        let bytes = read_capped(&path, MAX_INDEX_BYTES)?;
        serde_json::from_slice(&bytes)
            .with_context(|| format!("{} is not an OCI image index", path.display()))
    }

    fn write_index(&self, index: &Index) -> Result<()> {
        self.write(&self.dir.join(INDEX_FILE), &serde_json::to_vec(index)?)
    }

    fn write(&self, path: &Path, bytes: &[u8]) -> Result<()> {
        write_atomically(path, bytes).with_context(|| format!("cannot write {}", path.display()))
    }

    /// The blob `digest`, read up to `max` bytes and checked to be those bytes.
    fn read_blob(&self, digest: &str, max: u64, what: &str) -> Result<Vec<u8>> {
        let bytes = read_capped(&self.blob_path(digest)?, max)?;
        let actual = digest_of(&bytes);
        if actual != digest {
            bail!(
                "{what}: {} holds bytes with digest {actual}, not {digest}; refused, nothing was \
                 stored",
                self.dir.display()
            );
        }
        Ok(bytes)
    }
}

impl Endpoint for Layout {
    fn manifest(&mut self, repository: &str, reference: &str) -> Result<(Vec<u8>, String)> {
        self.manifest_if_any(repository, reference)?.ok_or_else(|| {
            anyhow!(
                "{} holds no {repository}:{reference} (see the names in its {INDEX_FILE})",
                self.dir.display()
            )
        })
    }

    fn manifest_if_any(
        &mut self,
        repository: &str,
        reference: &str,
    ) -> Result<Option<(Vec<u8>, String)>> {
        let what = format!("{}:{repository}:{reference}", self.dir.display());
        let digest = if reference.starts_with("sha256:") {
            if !self.blob_path(reference)?.exists() {
                return Ok(None);
            }
            reference.to_owned()
        } else {
            let name = format!("{repository}:{reference}");
            let index = self.read_index()?;
            let Some(entry) = index.manifests.iter().find(|e| e.name() == Some(&name)) else {
                return Ok(None);
            };
            if entry.size > MAX_MANIFEST_BYTES {
                bail!("{what}: its manifest is {} bytes; refused", entry.size);
            }
            entry.digest.clone()
        };
        let bytes = self.read_blob(&digest, MAX_MANIFEST_BYTES, &what)?;
        Ok(Some((bytes, digest)))
    }

    fn blob(&mut self, repository: &str, descriptor: &Descriptor, max: u64) -> Result<Vec<u8>> {
        let what = format!(
            "blob {} of {}:{repository}",
            descriptor.digest,
            self.dir.display()
        );
        if descriptor.size > max {
            bail!(
                "{what} is {} bytes, larger than the {max} plinth accepts; refused",
                descriptor.size
            );
        }
        let bytes = self.read_blob(&descriptor.digest, descriptor.size + 1, &what)?;
        if bytes.len() as u64 != descriptor.size {
            bail!(
                "{what}: {} bytes, not the {} the manifest names; refused, nothing was stored",
                bytes.len(),
                descriptor.size
            );
        }
        Ok(bytes)
    }

    fn tags(&mut self, repository: &str) -> Result<Vec<String>> {
        let prefix = format!("{repository}:");
        Ok(self
            .read_index()?
            .manifests
            .iter()
            .filter_map(|e| e.name()?.strip_prefix(&prefix))
            .filter(|tag| check_tag(tag).is_ok())
            .map(str::to_owned)
            .collect())
    }

    fn push_blob(&mut self, _repository: &str, bytes: &[u8]) -> Result<String> {
        let digest = digest_of(bytes);
        let path = self.blob_path(&digest)?;
        // Content-addressed: a blob there already with the right bytes is kept.
        if read_capped(&path, bytes.len() as u64).is_ok_and(|held| digest_of(&held) == digest) {
            return Ok(digest);
        }
        self.write(&path, bytes)?;
        Ok(digest)
    }

    fn push_manifest(&mut self, repository: &str, tag: &str, manifest: &[u8]) -> Result<String> {
        let digest = self.push_blob(repository, manifest)?;
        let name = format!("{repository}:{tag}");
        let mut index = self.read_index()?;
        index.manifests.retain(|e| e.name() != Some(&name));
        index.manifests.push(Entry {
            media_type: MANIFEST_MEDIA_TYPE.into(),
            digest: digest.clone(),
            size: manifest.len() as u64,
            annotations: [(REF_NAME.to_owned(), name)].into(),
        });
        self.write_index(&index)?;
        Ok(digest)
    }
}

/// Reads `path` whole, refusing one longer than `max` bytes or that is not a regular file.
fn read_capped(path: &Path, max: u64) -> Result<Vec<u8>> {
    let file = File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let meta = file
        .metadata()
        .with_context(|| format!("cannot read {}", path.display()))?;
    if !meta.is_file() {
        bail!("{} is not a regular file; refused", path.display());
    }
    let mut bytes = Vec::new();
    file.take(max + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("cannot read {}", path.display()))?;
    if bytes.len() as u64 > max {
        bail!("{} is larger than {max} bytes; refused", path.display());
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugin::oci::artifact::{component_layer, pack};

    #[test]
    fn writes_and_reads_back_by_tag_and_digest() {
        let dir = tempfile::tempdir().unwrap();
        let at = dir.path().join("mirror");
        let mut layout = Layout::create(&at).unwrap();
        let packed = pack(b"\0asm component", "0.1.0").unwrap();
        layout.push_blob("plinth/kit", &packed.config).unwrap();
        layout.push_blob("plinth/kit", b"\0asm component").unwrap();
        let digest = layout
            .push_manifest("plinth/kit", "0.1.0", &packed.manifest)
            .unwrap();

        let mut read = Layout::open(&at).unwrap();
        assert_eq!(read.tags("plinth/kit").unwrap(), ["0.1.0"]);
        assert!(read.tags("plinth/other").unwrap().is_empty());
        let (manifest, by_tag) = read.manifest("plinth/kit", "0.1.0").unwrap();
        assert_eq!(by_tag, digest);
        let (_, by_digest) = read.manifest("plinth/kit", &digest).unwrap();
        assert_eq!(by_digest, digest);
        let layer = component_layer(&manifest, "kit").unwrap();
        assert_eq!(
            read.blob("plinth/kit", &layer, 1 << 20).unwrap(),
            b"\0asm component"
        );
        assert!(
            read.manifest_if_any("plinth/kit", "9.9.9")
                .unwrap()
                .is_none()
        );

        // A layout is added to; another push under the same name replaces the entry.
        let mut again = Layout::create(&at).unwrap();
        again
            .push_manifest("plinth/kit", "0.1.0", &packed.manifest)
            .unwrap();
        let index = std::fs::read_to_string(at.join(INDEX_FILE)).unwrap();
        assert_eq!(index.matches("plinth/kit:0.1.0").count(), 1, "{index}");

        // Bytes changed on the medium are refused.
        let hex = layer.digest.trim_start_matches("sha256:");
        std::fs::write(at.join("blobs/sha256").join(hex), b"\0asm componenT").unwrap();
        let err = read.blob("plinth/kit", &layer, 1 << 20).unwrap_err();
        assert!(err.to_string().contains("refused"), "{err}");
    }

    #[test]
    fn a_directory_that_is_not_a_layout_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("notes.txt"), "mine").unwrap();
        let err = format!("{:#}", Layout::create(dir.path()).err().unwrap());
        assert!(
            err.contains("neither empty nor an OCI image layout"),
            "{err}"
        );
        let err = format!("{:#}", Layout::open(dir.path()).err().unwrap());
        assert!(err.contains("is not an OCI image layout"), "{err}");
    }
}

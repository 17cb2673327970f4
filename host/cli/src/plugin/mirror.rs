//! Mirrors, for networks that cannot reach the registries plugins come from.
//!
//! `plinth plugin mirror --to oci://MIRROR/PREFIX` copies every plugin and policy pack the
//! project's `Plinth.lock` pins from an OCI registry, with its signature, byte for byte (so the
//! digests and signatures the lock holds stay valid) to `MIRROR/PREFIX/<repository>`;
//! `--to DIR` writes them into an OCI image-layout directory instead, each named
//! `<repository>:<tag>`, to carry across an air gap. A rule then rewrites sources:
//! `PLINTH_PLUGIN_MIRROR=oci://MIRROR/PREFIX` (or `file:///DIR`) for every registry, or
//! `mirrors:` in `$PLINTH_HOME/settings.yaml` per registry:
//!
//! ```yaml
//! mirrors:
//!   registry.example.com: oci://mirror.internal:5000/plinth-mirror
//!   ghcr.io: file:///srv/plinth-mirror
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};
use plinth_engine::shown::escape_controls;
use serde::Deserialize;

use super::lockfile::{self, Pin};
use super::oci::artifact::{Manifest, digest_of};
use super::oci::signature as oci_signature;
use super::oci::{Client, Endpoint, Layout, Reference};
use super::store::Store;
use crate::home::plinth_home;
use crate::project::Project;

pub const MIRROR_VAR: &str = "PLINTH_PLUGIN_MIRROR";
const SETTINGS_FILE: &str = "settings.yaml";

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Settings {
    /// Mirrors (`oci://HOST/PREFIX` or `file:///DIR`) by the registry (`host[:port]`) they
    /// stand for.
    #[serde(default)]
    mirrors: BTreeMap<String, String>,
}

/// A mirror: a registry and the repository path the copies live under, or an OCI
/// image-layout directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mirror {
    Registry { registry: String, prefix: String },
    Layout(PathBuf),
}

/// A reference and where it is read from: its registry, or an image-layout directory that
/// stands for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    pub reference: Reference,
    pub layout: Option<PathBuf>,
}

impl Located {
    /// `reference`, read from its own registry.
    pub fn direct(reference: Reference) -> Located {
        Located {
            reference,
            layout: None,
        }
    }

    /// The same place, naming another tag or digest.
    pub fn at(&self, tag: Option<String>, digest: Option<String>) -> Located {
        Located {
            reference: Reference {
                tag,
                digest,
                ..self.reference.clone()
            },
            layout: self.layout.clone(),
        }
    }

    /// Connects to the registry, or opens the layout (which must exist).
    pub fn open(&self) -> Result<Box<dyn Endpoint>> {
        Ok(match &self.layout {
            None => Box::new(Client::connect(&self.reference.registry)?),
            Some(dir) => Box::new(Layout::open(dir)?),
        })
    }
}

impl fmt::Display for Located {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Some(dir) = &self.layout else {
            return self.reference.fmt(f);
        };
        // skopeo's name for it: `oci:DIR:REPOSITORY:TAG`.
        let r = &self.reference;
        write!(
            f,
            "oci:{}:{}",
            escape_controls(&dir.display().to_string()),
            r.repository
        )?;
        if let Some(tag) = &r.tag {
            write!(f, ":{tag}")?;
        }
        if let Some(digest) = &r.digest {
            write!(f, "@{digest}")?;
        }
        Ok(())
    }
}

impl Mirror {
    /// Parses `oci://HOST[:PORT]/PREFIX` (checked as a reference is) or `file:///DIR` (an
    /// absolute path).
    pub fn parse(text: &str) -> Result<Mirror> {
        if let Some(path) = text.strip_prefix("file://") {
            let dir = PathBuf::from(path);
            if !dir.is_absolute() {
                bail!(
                    "a mirror directory is `file:///ABSOLUTE/PATH`: `{}` is not absolute",
                    escape_controls(text)
                );
            }
            return Ok(Mirror::Layout(dir));
        }
        let reference = Reference::parse(text).map_err(|e| {
            anyhow!("{e} (a mirror is `oci://HOST[:PORT]/PREFIX` or `file:///DIR`)")
        })?;
        if reference.tag.is_some() || reference.digest.is_some() {
            bail!(
                "a mirror is `oci://HOST[:PORT]/PREFIX`, without a tag or digest: `{}`",
                reference
            );
        }
        Ok(Mirror::Registry {
            registry: reference.registry,
            prefix: reference.repository,
        })
    }

    /// Where `reference`'s copy lives in this mirror: the same repository path (under the
    /// prefix, in a registry), with the same tag and digest.
    pub fn locate(&self, reference: &Reference) -> Located {
        match self {
            Mirror::Registry { registry, prefix } => Located::direct(Reference {
                registry: registry.clone(),
                repository: format!("{prefix}/{}", reference.repository),
                ..reference.clone()
            }),
            Mirror::Layout(dir) => Located {
                reference: reference.clone(),
                layout: Some(dir.clone()),
            },
        }
    }
}

/// The mirror rule for `registry`, if any: `PLINTH_PLUGIN_MIRROR`, else plinth's settings.
pub fn rule_for(registry: &str) -> Result<Option<Mirror>> {
    if let Some(mirror) = std::env::var(MIRROR_VAR).ok().filter(|m| !m.is_empty()) {
        return Mirror::parse(&mirror)
            .with_context(|| format!("{MIRROR_VAR} is not a mirror"))
            .map(Some);
    }
    let path = plinth_home()?.join(SETTINGS_FILE);
    let Some(text) = crate::yaml_file::read(&path)? else {
        return Ok(None);
    };
    let settings: Settings = crate::yaml_file::parse(&path, &text)?;
    settings
        .mirrors
        .get(registry)
        .map(|m| {
            Mirror::parse(m)
                .with_context(|| format!("{}: the mirror of {registry} is not one", path.display()))
        })
        .transpose()
}

/// Where to read `reference` from: its mirror when a rule names one, else its registry.
pub fn rewrite(reference: Reference) -> Result<Located> {
    Ok(match rule_for(&reference.registry)? {
        Some(mirror) => mirror.locate(&reference),
        None => Located::direct(reference),
    })
}

/// Where `plugin mirror --to` copies to: `oci://…` or `file:///…` as a rule names them, or a
/// directory path (relative to where plinth runs).
fn target(to: &str) -> Result<Mirror> {
    if to.starts_with("oci://") || to.starts_with("file://") {
        return Mirror::parse(to);
    }
    let dir = std::path::absolute(to)
        .with_context(|| format!("`{}` is not a directory path", escape_controls(to)))?;
    Ok(Mirror::Layout(dir))
}

/// The registry reference a pin was fetched by, pinned to its manifest's digest, if it came
/// from a registry.
fn pinned_origin(pin: &Pin, stored: &[super::store::StoredPlugin]) -> Result<Option<Reference>> {
    // A `source: oci://` plugin's (or a policy pack's) pin names its repository and manifest;
    // one pulled into the store, the store's record.
    let origin = match (&pin.source, &pin.manifest) {
        (Some(source), Some(manifest)) => {
            let tag = match &pin.version {
                Some(version) => Some(
                    super::oci::reference::check_tag(version)
                        .map(|()| version.clone())
                        .map_err(|e| anyhow!("{}: {e}", lockfile::LOCK_FILE))?,
                ),
                None => None,
            };
            Some(Reference {
                tag,
                digest: Some(super::oci::reference::check_digest(manifest, source)?),
                ..Reference::parse(source)?
            })
        }
        _ => stored
            .iter()
            .find(|p| p.sha256 == pin.sha256 && p.source.starts_with("oci://"))
            .map(|p| Reference::parse(&p.source))
            .transpose()?,
    };
    Ok(origin.filter(|o| o.digest.is_some()))
}

/// Copies every plugin and policy pack the lock of the project at `start` pins from an OCI
/// registry to `to`.
pub async fn mirror(start: &Path, store: &Store, to: &str) -> Result<()> {
    let target = target(to)?;
    let project = Project::find(start)?;
    let locked = lockfile::read_lock(&project.dir)?;
    if locked.plugins.is_empty() && locked.policy_packs.is_empty() {
        bail!(
            "{} has no {}: run `plinth plugin lock` first, so that the mirror holds exactly the \
             builds the project pins",
            project.dir.display(),
            lockfile::LOCK_FILE
        );
    }
    let stored = store.list()?;
    let mut copies = Vec::new();
    let named = (locked.plugins.iter().map(|(n, p)| (format!("`{n}`"), p))).chain(
        (locked.policy_packs.iter())
            .map(|(r, p)| (format!("the policy pack {}", escape_controls(r)), p)),
    );
    for (what, pin) in named {
        match pinned_origin(pin, &stored)? {
            Some(origin) => copies.push((what, pin.sha256.clone(), origin)),
            None => println!(
                "Skipped {what}: it did not come from an OCI registry (publish it to the mirror \
                 with `plinth plugin publish`)."
            ),
        }
    }
    let layout_dir = match &target {
        Mirror::Layout(dir) => Some(dir.clone()),
        Mirror::Registry { .. } => None,
    };
    let copied = tokio::task::spawn_blocking(move || -> Result<Vec<String>> {
        copies
            .into_iter()
            .map(|(what, sha256, origin)| {
                let to = target.locate(&origin);
                let signed = copy(&origin, &to, &sha256)
                    .with_context(|| format!("mirroring {what} from {origin} to {to}"))?;
                Ok(format!(
                    "Copied {what} to {to}{}",
                    if signed { ", with its signature" } else { "" }
                ))
            })
            .collect()
    })
    .await??;
    for line in copied {
        println!("{line}");
    }
    if let Some(dir) = layout_dir {
        println!(
            "Where the registries cannot be reached, run plinth with \
             {MIRROR_VAR}=file://{} (or name it under `mirrors:` in $PLINTH_HOME/{SETTINGS_FILE}).",
            escape_controls(&dir.display().to_string())
        );
    }
    Ok(())
}

/// Copies the artifact `from` (pinned to its digest) and its signature, if it has one, byte for
/// byte; refused unless its component is the one the lock pins (`sha256`). Returns whether a
/// signature was copied.
fn copy(from: &Reference, to: &Located, sha256: &str) -> Result<bool> {
    let digest = from
        .digest
        .clone()
        .ok_or_else(|| anyhow!("{from} names no digest"))?;
    let mut source = Client::connect(&from.registry)?;
    let mut target: Box<dyn Endpoint> = match &to.layout {
        None => Box::new(Client::connect(&to.reference.registry)?),
        Some(dir) => Box::new(Layout::create(dir)?),
    };
    let what = from.to_string();
    let (manifest, _) = source.manifest(&from.repository, &digest)?;
    let layer = super::oci::artifact::component_layer(&manifest, &what)?;
    if layer.digest != format!("sha256:{sha256}") {
        bail!(
            "{what} holds the component {}, not the sha256:{sha256} Plinth.lock pins; refused",
            layer.digest
        );
    }
    let tag = to
        .reference
        .tag
        .clone()
        .ok_or_else(|| anyhow!("{to} names no tag to copy to"))?;
    copy_manifest(
        &mut source,
        target.as_mut(),
        from,
        to,
        &tag,
        &manifest,
        &digest,
    )?;
    let signature_tag = oci_signature::tag(&digest);
    let Some((signature, signature_digest)) =
        source.manifest_if_any(&from.repository, &signature_tag)?
    else {
        return Ok(false);
    };
    copy_manifest(
        &mut source,
        target.as_mut(),
        from,
        to,
        &signature_tag,
        &signature,
        &signature_digest,
    )?;
    Ok(true)
}

/// Copies the blobs `manifest` names, then the manifest itself under `tag`.
fn copy_manifest(
    source: &mut Client,
    target: &mut dyn Endpoint,
    from: &Reference,
    to: &Located,
    tag: &str,
    manifest: &[u8],
    digest: &str,
) -> Result<()> {
    let parsed: Manifest = serde_json::from_slice(manifest)
        .with_context(|| format!("{from}: the manifest {digest} is not an OCI image manifest"))?;
    let repository = &to.reference.repository;
    for descriptor in std::iter::once(&parsed.config).chain(&parsed.layers) {
        super::oci::reference::check_digest(&descriptor.digest, &from.to_string())?;
        let bytes = source.blob(
            &from.repository,
            descriptor,
            plinth_runtime::MAX_COMPONENT_BYTES,
        )?;
        target.push_blob(repository, &bytes)?;
    }
    let pushed = target.push_manifest(repository, tag, manifest)?;
    debug_assert_eq!(pushed, digest_of(manifest));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mirrors_keep_the_repository_tag_and_digest() {
        let mirror = Mirror::parse("oci://mirror.local:5000/copies").unwrap();
        let origin = Reference::parse("oci://registry.example.com/plinth/random:0.1.0").unwrap();
        assert_eq!(
            mirror.locate(&origin).to_string(),
            "oci://mirror.local:5000/copies/plinth/random:0.1.0"
        );
        let err = Mirror::parse("oci://mirror.local/copies:1").unwrap_err();
        assert!(err.to_string().contains("without a tag"), "{err}");

        let layout = Mirror::parse("file:///srv/mirror").unwrap();
        assert_eq!(
            layout.locate(&origin).to_string(),
            "oci:/srv/mirror:plinth/random:0.1.0"
        );
        let err = Mirror::parse("file://srv/mirror").unwrap_err();
        assert!(err.to_string().contains("not absolute"), "{err}");
    }
}

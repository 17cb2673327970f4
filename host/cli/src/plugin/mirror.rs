//! Mirrors, for networks that cannot reach the registries plugins come from.
//!
//! `plinth plugin mirror --to oci://MIRROR/PREFIX` copies every plugin the project's
//! `Plinth.lock` pins from an OCI registry, with its signature, byte for byte (so the digests and
//! signatures the lock holds stay valid) to `MIRROR/PREFIX/<repository>`. A rule then rewrites
//! sources: `PLINTH_PLUGIN_MIRROR=oci://MIRROR/PREFIX` for every registry, or `mirrors:` in
//! `$PLINTH_HOME/settings.yaml` per registry:
//!
//! ```yaml
//! mirrors:
//!   registry.example.com: oci://mirror.internal:5000/plinth-mirror
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result, anyhow, bail};
use serde::Deserialize;

use super::lockfile;
use super::oci::artifact::{Manifest, digest_of};
use super::oci::signature as oci_signature;
use super::oci::{Client, Reference};
use super::store::Store;
use crate::home::plinth_home;
use crate::project::Project;

pub const MIRROR_VAR: &str = "PLINTH_PLUGIN_MIRROR";
const SETTINGS_FILE: &str = "settings.yaml";

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Settings {
    /// Mirror prefixes (`oci://HOST/PREFIX`) by the registry (`host[:port]`) they stand for.
    #[serde(default)]
    mirrors: BTreeMap<String, String>,
}

/// A mirror prefix: the registry and the repository path the copies live under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mirror {
    registry: String,
    prefix: String,
}

impl Mirror {
    /// Parses `oci://HOST[:PORT]/PREFIX` (checked as a reference is).
    pub fn parse(text: &str) -> Result<Mirror> {
        let reference = Reference::parse(text)?;
        if reference.tag.is_some() || reference.digest.is_some() {
            bail!(
                "a mirror is `oci://HOST[:PORT]/PREFIX`, without a tag or digest: `{}`",
                reference
            );
        }
        Ok(Mirror {
            registry: reference.registry,
            prefix: reference.repository,
        })
    }

    /// Where `reference`'s copy lives in this mirror: the same repository path, under the
    /// prefix, with the same tag and digest.
    pub fn locate(&self, reference: &Reference) -> Reference {
        Reference {
            registry: self.registry.clone(),
            repository: format!("{}/{}", self.prefix, reference.repository),
            ..reference.clone()
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

/// `reference`, rewritten to its mirror when a rule names one.
pub fn rewrite(reference: Reference) -> Result<Reference> {
    Ok(match rule_for(&reference.registry)? {
        Some(mirror) => mirror.locate(&reference),
        None => reference,
    })
}

/// Copies every plugin the lock of the project at `start` pins from an OCI registry to `to`.
pub async fn mirror(start: &Path, store: &Store, to: &str) -> Result<()> {
    let target = Mirror::parse(to)?;
    let project = Project::find(start)?;
    let locked = lockfile::locked(&project.dir)?;
    if locked.is_empty() {
        bail!(
            "{} has no {}: run `plinth plugin lock` first, so that the mirror holds exactly the \
             builds the project pins",
            project.dir.display(),
            lockfile::LOCK_FILE
        );
    }
    let stored = store.list()?;
    let mut copies = Vec::new();
    for (name, pin) in &locked {
        // A `source: oci://` plugin's pin names its repository and manifest; one pulled into
        // the store, the store's record.
        let origin = match (&pin.source, &pin.manifest, &pin.version) {
            (Some(source), Some(manifest), Some(version)) => Some(Reference {
                tag: Some(
                    super::oci::reference::check_tag(version)
                        .map(|()| version.clone())
                        .map_err(|e| anyhow!("{}: {e}", lockfile::LOCK_FILE))?,
                ),
                digest: Some(super::oci::reference::check_digest(manifest, source)?),
                ..Reference::parse(source)?
            }),
            _ => stored
                .iter()
                .find(|p| p.sha256 == pin.sha256 && p.source.starts_with("oci://"))
                .map(|p| Reference::parse(&p.source))
                .transpose()?,
        };
        match origin {
            Some(origin) if origin.digest.is_some() => {
                copies.push((name.clone(), pin.sha256.clone(), origin))
            }
            _ => println!(
                "Skipped `{name}`: it did not come from an OCI registry (publish it to the mirror \
                 with `plinth plugin publish`)."
            ),
        }
    }
    let copied = tokio::task::spawn_blocking(move || -> Result<Vec<String>> {
        copies
            .into_iter()
            .map(|(name, sha256, origin)| {
                let to = target.locate(&origin);
                let signed = copy(&origin, &to, &sha256)
                    .with_context(|| format!("mirroring `{name}` from {origin} to {to}"))?;
                Ok(format!(
                    "Copied `{name}` to {to}{}",
                    if signed { ", with its signature" } else { "" }
                ))
            })
            .collect()
    })
    .await??;
    for line in copied {
        println!("{line}");
    }
    Ok(())
}

/// Copies the artifact `from` (pinned to its digest) and its signature, if it has one, byte for
/// byte; refused unless its component is the one the lock pins (`sha256`). Returns whether a
/// signature was copied.
fn copy(from: &Reference, to: &Reference, sha256: &str) -> Result<bool> {
    let digest = from
        .digest
        .clone()
        .ok_or_else(|| anyhow!("{from} names no digest"))?;
    let mut source = Client::connect(&from.registry)?;
    let mut target = Client::connect(&to.registry)?;
    let what = from.to_string();
    let (manifest, _) = source.manifest(&from.repository, &digest)?;
    let layer = super::oci::artifact::component_layer(&manifest, &what)?;
    if layer.digest != format!("sha256:{sha256}") {
        bail!(
            "{what} holds the component {}, not the sha256:{sha256} Plinth.lock pins; refused",
            layer.digest
        );
    }
    copy_manifest(&mut source, &mut target, from, to, &manifest, &digest)?;
    let tag = oci_signature::tag(&digest);
    let Some((signature, signature_digest)) = source.manifest_if_any(&from.repository, &tag)?
    else {
        return Ok(false);
    };
    let to_signature = Reference {
        tag: Some(tag),
        digest: None,
        ..to.clone()
    };
    copy_manifest(
        &mut source,
        &mut target,
        from,
        &to_signature,
        &signature,
        &signature_digest,
    )?;
    Ok(true)
}

/// Copies the blobs `manifest` names, then the manifest itself under `to`'s tag.
fn copy_manifest(
    source: &mut Client,
    target: &mut Client,
    from: &Reference,
    to: &Reference,
    manifest: &[u8],
    digest: &str,
) -> Result<()> {
    let parsed: Manifest = serde_json::from_slice(manifest)
        .with_context(|| format!("{from}: the manifest {digest} is not an OCI image manifest"))?;
    for descriptor in std::iter::once(&parsed.config).chain(&parsed.layers) {
        super::oci::reference::check_digest(&descriptor.digest, &from.to_string())?;
        let bytes = source.blob(
            &from.repository,
            descriptor,
            plinth_runtime::MAX_COMPONENT_BYTES,
        )?;
        target.push_blob(&to.repository, &bytes)?;
    }
    let tag = to
        .tag
        .as_deref()
        .ok_or_else(|| anyhow!("{to} names no tag to copy to"))?;
    let pushed = target.push_manifest(&to.repository, tag, manifest)?;
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
    }
}

//! `plinth plugin publish` and `plinth plugin pull`: a component to and from an OCI registry,
//! in the standard Wasm artifact layout.

use anyhow::{Result, bail};
use plinth_engine::shown::escape_controls;

use super::describe::describe;
use super::locate::{check_name, locate};
use super::oci::artifact::{self, digest_of};
use super::oci::{Client, Reference};
use super::store::{Store, sha256_hex};

/// A component fetched from a registry, its digests verified.
pub struct Pulled {
    pub component: Vec<u8>,
    /// The reference pinned to the manifest's digest: what the store records it came from.
    pub origin: String,
    /// The manifest's digest, `sha256:…`.
    pub manifest: String,
}

pub async fn publish(store: &Store, plugin: &str, reference: &str) -> Result<()> {
    let reference = Reference::parse(reference)?;
    let (Some(tag), None) = (reference.tag.clone(), &reference.digest) else {
        bail!(
            "publish to `{reference}:VERSION`: the tag is the plugin's version (a digest is what \
             the registry computes, not a place to publish to)"
        );
    };
    let (path, _) = locate(store, plugin).await?;
    let component = plinth_runtime::read_component_file(&path)?;
    let described = describe(&path).await?;
    if described.sha256 != sha256_hex(&component) {
        bail!(
            "{} changed while it was being published; try again",
            path.display()
        );
    }
    let (Some(name), Some(version)) = (described.name, described.version) else {
        bail!(
            "{} is a {} component, not a provider plugin; only plugins are published",
            path.display(),
            described.kind
        );
    };
    check_name(&name, &version)?;
    if tag != version {
        bail!(
            "{name} calls itself version {}, not {tag}: publish it as {}:{}",
            escape_controls(&version),
            reference.repository_url(),
            escape_controls(&version)
        );
    }
    let packed = artifact::pack(&component, &version)?;
    let target = reference.clone();
    let digest = tokio::task::spawn_blocking(move || -> Result<String> {
        let mut client = Client::connect(&target.registry)?;
        client.push_blob(&target.repository, &packed.config)?;
        client.push_blob(&target.repository, &component)?;
        client.push_manifest(&target.repository, &tag, &packed.manifest)
    })
    .await??;
    println!("Published {name} {version} to {reference}\ndigest: {digest}");
    Ok(())
}

/// Fetches the component `reference` names (by tag or digest): the manifest, checked to be a
/// Wasm component's, then the component, refused unless its size and digest are the manifest's.
pub async fn pull(reference: &Reference) -> Result<Pulled> {
    let Some(wanted) = reference.manifest_reference().map(str::to_owned) else {
        bail!("pull `{reference}:VERSION` or `{reference}@sha256:DIGEST`: name a tag or a digest");
    };
    let reference = reference.clone();
    tokio::task::spawn_blocking(move || {
        let mut client = Client::connect(&reference.registry)?;
        let (manifest, manifest_digest) = client.manifest(&reference.repository, &wanted)?;
        let what = reference.to_string();
        let layer = artifact::component_layer(&manifest, &what)?;
        let component = client.blob(
            &reference.repository,
            &layer,
            plinth_runtime::MAX_COMPONENT_BYTES,
        )?;
        debug_assert_eq!(digest_of(&component), layer.digest);
        Ok(Pulled {
            component,
            origin: Reference {
                digest: Some(manifest_digest.clone()),
                ..reference
            }
            .to_string(),
            manifest: manifest_digest,
        })
    })
    .await?
}

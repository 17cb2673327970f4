//! `plinth plugin publish` and `plinth plugin pull`: a component to and from an OCI registry,
//! in the standard Wasm artifact layout.

use anyhow::{Result, bail};
use plinth_engine::shown::escape_controls;

use super::describe::describe;
use super::keys::{Keys, key_id};
use super::locate::{check_name, locate};
use super::oci::artifact::{self, Descriptor, MANIFEST_MEDIA_TYPE, digest_of};
use super::oci::signature as oci_signature;
use super::oci::{Client, Reference};
use super::signature;
use super::store::{Store, sha256_hex};
use crate::home::plinth_home;

/// A component fetched from a registry, its digests verified.
pub struct Pulled {
    pub component: Vec<u8>,
    /// The reference pinned to the manifest's digest: what the store records it came from.
    pub origin: String,
    /// The signature the registry holds beside it, if any (not yet verified).
    pub signature: Option<String>,
    /// The manifest's digest, `sha256:…`.
    pub manifest: String,
}

pub async fn publish(
    store: &Store,
    plugin: &str,
    reference: &str,
    key: Option<&str>,
) -> Result<()> {
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
    // Signed before anything is pushed: a wrong password leaves the registry as it was.
    let signed = match key {
        Some(key) => {
            let (public, secret) = Keys::in_home(&plinth_home()?).key_pair(key)?;
            let text = signature::sign(&public, &secret, &name, &version, &component)?;
            Some((key_id(public.keynum()), text))
        }
        None => None,
    };
    let packed = artifact::pack(&component, &version)?;
    let target = reference.clone();
    let signature_text = signed.as_ref().map(|(_, text)| text.clone());
    let (digest, signature_tag) =
        tokio::task::spawn_blocking(move || -> Result<(String, Option<String>)> {
            let mut client = Client::connect(&target.registry)?;
            client.push_blob(&target.repository, &packed.config)?;
            client.push_blob(&target.repository, &component)?;
            let digest = client.push_manifest(&target.repository, &tag, &packed.manifest)?;
            let Some(text) = signature_text else {
                return Ok((digest, None));
            };
            let subject = Descriptor {
                media_type: MANIFEST_MEDIA_TYPE.into(),
                digest: digest.clone(),
                size: packed.manifest.len() as u64,
            };
            let tag = oci_signature::push(&mut client, &target.repository, &subject, &text)?;
            Ok((digest, Some(tag)))
        })
        .await??;
    println!("Published {name} {version} to {reference}\ndigest: {digest}");
    if let (Some((signer, _)), Some(tag)) = (signed, signature_tag) {
        println!(
            "signed by key {signer}: the signature is {}:{tag}",
            reference.repository_url()
        );
    }
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
        let signature =
            oci_signature::fetch(&mut client, &reference.repository, &manifest_digest, &what)?;
        Ok(Pulled {
            component,
            signature,
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

//! `plinth plugin publish` and `plinth plugin pull`: a component to and from an OCI registry,
//! in the standard Wasm artifact layout.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result, bail};
use plinth_engine::policy::PolicyPack as _;
use plinth_engine::shown::escape_controls;
use plinth_runtime::{ComponentBytes, Limits, Runtime, Tier};

use super::describe::describe;
use super::keys::{Keys, key_id};
use super::locate::{check_name, locate};
use super::mirror::Located;
use super::oci::artifact::{self, Descriptor, MANIFEST_MEDIA_TYPE, digest_of};
use super::oci::signature as oci_signature;
use super::oci::{Client, Endpoint, Reference};
use super::signature;
use super::store::{Store, sha256_hex};
use crate::build::component_path;
use crate::guest::Role;
use crate::home::{artifact_cache, plinth_home};

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

/// Publishes the plugin (or, `policy_pack`, the policy pack) `plugin`, a file or a source
/// directory, to `reference`, whose tag must be its version; signed with `key` if given.
pub async fn publish(
    store: &Store,
    plugin: &str,
    reference: &str,
    key: Option<&str>,
    policy_pack: bool,
) -> Result<()> {
    let reference = Reference::parse(reference)?;
    let (Some(tag), None) = (reference.tag.clone(), &reference.digest) else {
        bail!(
            "publish to `{reference}:VERSION`: the tag is the plugin's version (a digest is what \
             the registry computes, not a place to publish to)"
        );
    };
    let (component, name, version) = if policy_pack {
        pack_to_publish(plugin).await?
    } else {
        plugin_to_publish(store, plugin).await?
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
            let kind = if policy_pack { "policy-pack" } else { "plugin" };
            let text = signature::sign(&public, &secret, kind, &name, &version, &component)?;
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
    let what = if policy_pack { "the policy pack " } else { "" };
    println!("Published {what}{name} {version} to {reference}\ndigest: {digest}");
    if let (Some((signer, _)), Some(tag)) = (signed, signature_tag) {
        println!(
            "signed by key {signer}: the signature is {}:{tag}",
            reference.repository_url()
        );
    }
    Ok(())
}

/// A provider plugin's bytes, name and version.
async fn plugin_to_publish(store: &Store, plugin: &str) -> Result<(Vec<u8>, String, String)> {
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
            "{} is a {} component, not a provider plugin; only plugins are published (a policy \
             pack with --policy-pack)",
            path.display(),
            described.kind
        );
    };
    Ok((component, name, version))
}

/// A policy pack's bytes, name and version: a file, or a guest directory built first, loaded
/// (granted nothing) to read who it is.
async fn pack_to_publish(pack: &str) -> Result<(Vec<u8>, String, String)> {
    let given = Path::new(pack);
    let path = if given.is_dir() {
        let dir = given.to_owned();
        tokio::task::spawn_blocking(move || component_path(&dir, "policy pack", Role::PolicyPack))
            .await??
    } else {
        given.to_owned()
    };
    let component = plinth_runtime::read_component_file(&path)?;
    let runtime = Runtime::new(artifact_cache()?)?;
    let loaded = (runtime.load_policy_pack_bytes(
        ComponentBytes::new(path.clone(), component.clone()),
        Limits::default(),
        &BTreeMap::new(),
        // Read for its name and version; the optimized build is what later runs load.
        Tier::Optimized,
    ))
    .await
    .with_context(|| format!("{} is not a policy pack", path.display()))?;
    Ok((
        component,
        loaded.name().to_owned(),
        loaded.version().to_owned(),
    ))
}

/// Fetches the component `located` names (by tag or digest): the manifest, checked to be a
/// Wasm component's, then the component, refused unless its size and digest are the manifest's,
/// and the signature beside it, if any.
pub async fn pull(located: &Located) -> Result<Pulled> {
    let reference = &located.reference;
    let Some(wanted) = reference.manifest_reference().map(str::to_owned) else {
        bail!("pull `{reference}:VERSION` or `{reference}@sha256:DIGEST`: name a tag or a digest");
    };
    let located = located.clone();
    tokio::task::spawn_blocking(move || {
        let mut endpoint = located.open()?;
        let repository = &located.reference.repository;
        let (manifest, manifest_digest) = endpoint.manifest(repository, &wanted)?;
        let what = located.to_string();
        let layer = artifact::component_layer(&manifest, &what)?;
        let component = endpoint.blob(repository, &layer, plinth_runtime::MAX_COMPONENT_BYTES)?;
        debug_assert_eq!(digest_of(&component), layer.digest);
        let signature =
            oci_signature::fetch(endpoint.as_mut(), repository, &manifest_digest, &what)?;
        Ok(Pulled {
            component,
            signature,
            origin: located
                .at(located.reference.tag.clone(), Some(manifest_digest.clone()))
                .to_string(),
            manifest: manifest_digest,
        })
    })
    .await?
}

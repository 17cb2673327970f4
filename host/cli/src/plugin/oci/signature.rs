//! A plugin's signature beside it in the registry, under cosign's tag scheme: the signature of
//! the artifact whose manifest digest is `sha256:<hex>` is the artifact tagged
//! `sha256-<hex>.sig` in the same repository. That needs no OCI 1.1 referrers API, so it works
//! on every registry, and copying both tags (`plugin mirror`, `skopeo copy`) carries it along.
//!
//! The signature artifact is an OCI image manifest with the empty config
//! (`application/vnd.oci.empty.v1+json`, as OCI 1.1 says an artifact without a config should
//! have) and one layer, the minisign signature file, typed
//! `application/vnd.plinth.plugin.signature.v1+minisign`: not cosign's own media types, since
//! cosign could not read a minisign signature, and a type of plinth's own that says what the
//! bytes are. Its `subject` names the signed manifest, for registries that index referrers.

use anyhow::{Result, bail};

use super::Endpoint;
use super::artifact::{Descriptor, MANIFEST_MEDIA_TYPE, Manifest, digest_of};
use crate::plugin::signature::MAX_SIGNATURE_BYTES;

pub const SIGNATURE_MEDIA_TYPE: &str = "application/vnd.plinth.plugin.signature.v1+minisign";
pub const EMPTY_MEDIA_TYPE: &str = "application/vnd.oci.empty.v1+json";
const EMPTY: &[u8] = b"{}";

/// The tag of the signature of the manifest `digest` (`sha256:<hex>`).
pub fn tag(digest: &str) -> String {
    digest.replacen(':', "-", 1) + ".sig"
}

/// Pushes `signature` as the signature of the manifest `subject` (its digest and size).
pub fn push(
    client: &mut dyn Endpoint,
    repository: &str,
    subject: &Descriptor,
    signature: &str,
) -> Result<String> {
    client.push_blob(repository, EMPTY)?;
    client.push_blob(repository, signature.as_bytes())?;
    let manifest = Manifest {
        schema_version: 2,
        media_type: Some(MANIFEST_MEDIA_TYPE.into()),
        artifact_type: Some(SIGNATURE_MEDIA_TYPE.into()),
        config: Descriptor {
            media_type: EMPTY_MEDIA_TYPE.into(),
            digest: digest_of(EMPTY),
            size: EMPTY.len() as u64,
        },
        layers: vec![Descriptor {
            media_type: SIGNATURE_MEDIA_TYPE.into(),
            digest: digest_of(signature.as_bytes()),
            size: signature.len() as u64,
        }],
        annotations: Default::default(),
        subject: Some(subject.clone()),
    };
    let tag = tag(&subject.digest);
    client.push_manifest(repository, &tag, &serde_json::to_vec(&manifest)?)?;
    Ok(tag)
}

/// The signature of the manifest `digest`, if the registry holds one; checked to be a
/// signature artifact of at most [`MAX_SIGNATURE_BYTES`] of text. `what` names the plugin.
pub fn fetch(
    client: &mut dyn Endpoint,
    repository: &str,
    digest: &str,
    what: &str,
) -> Result<Option<String>> {
    let tag = tag(digest);
    let Some((bytes, _)) = client.manifest_if_any(repository, &tag)? else {
        return Ok(None);
    };
    let what = format!("the signature of {what} ({tag})");
    let manifest: Manifest = serde_json::from_slice(&bytes)
        .map_err(|e| anyhow::anyhow!("{what} is not an OCI image manifest ({e})"))?;
    let [layer] = manifest.layers.as_slice() else {
        bail!("{what} has {} layers, not one", manifest.layers.len());
    };
    if layer.media_type != SIGNATURE_MEDIA_TYPE {
        bail!(
            "{what} is not a plinth signature: its layer is `{}`, not {SIGNATURE_MEDIA_TYPE}",
            plinth_engine::shown::escape_controls(&layer.media_type)
        );
    }
    super::reference::check_digest(&layer.digest, &what)?;
    let bytes = client.blob(repository, layer, MAX_SIGNATURE_BYTES as u64)?;
    let text = String::from_utf8(bytes).map_err(|_| anyhow::anyhow!("{what} is not text"))?;
    Ok(Some(text))
}

#[cfg(test)]
mod tests {
    #[test]
    fn tags_follow_cosign() {
        assert_eq!(super::tag("sha256:ab12"), "sha256-ab12.sig");
    }
}

//! The standard Wasm layout of an OCI artifact (CNCF TAG Runtime's, as `wkg`, `oras`, Spin and
//! wasmCloud write it): an image manifest whose config is `application/vnd.wasm.config.v0+json`
//! and whose one layer is the component, `application/wasm`.

use std::collections::BTreeMap;

use anyhow::{Result, bail};
use plinth_engine::shown::escape_controls;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

pub const MANIFEST_MEDIA_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";
pub const INDEX_MEDIA_TYPE: &str = "application/vnd.oci.image.index.v1+json";
pub const CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";
pub const LAYER_MEDIA_TYPE: &str = "application/wasm";
pub const ARTIFACT_TYPE: &str = "application/vnd.wasm.component.v1+wasm";
/// The version annotation `publish` writes.
pub const VERSION_ANNOTATION: &str = "org.opencontainers.image.version";

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Descriptor {
    pub media_type: String,
    pub digest: String,
    pub size: u64,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    pub schema_version: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_type: Option<String>,
    pub config: Descriptor,
    pub layers: Vec<Descriptor>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    /// The manifest this one refers to (a signature's), as OCI 1.1 names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<Descriptor>,
}

/// The config blob: what the Wasm layout asks for, no more.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct WasmConfig<'a> {
    architecture: &'a str,
    os: &'a str,
    layer_digests: [&'a str; 1],
}

/// `sha256:<hex>` of `bytes`.
pub fn digest_of(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// What `publish` pushes: the config blob, and the manifest naming it and the component.
pub struct Packed {
    pub config: Vec<u8>,
    pub manifest: Vec<u8>,
}

pub fn pack(component: &[u8], version: &str) -> Result<Packed> {
    let layer = Descriptor {
        media_type: LAYER_MEDIA_TYPE.into(),
        digest: digest_of(component),
        size: component.len() as u64,
    };
    let config = serde_json::to_vec(&WasmConfig {
        architecture: "wasm",
        os: "wasip2",
        layer_digests: [&layer.digest],
    })?;
    let manifest = Manifest {
        schema_version: 2,
        media_type: Some(MANIFEST_MEDIA_TYPE.into()),
        artifact_type: Some(ARTIFACT_TYPE.into()),
        config: Descriptor {
            media_type: CONFIG_MEDIA_TYPE.into(),
            digest: digest_of(&config),
            size: config.len() as u64,
        },
        layers: vec![layer],
        annotations: BTreeMap::from([(VERSION_ANNOTATION.to_owned(), version.to_owned())]),
        subject: None,
    };
    Ok(Packed {
        config,
        manifest: serde_json::to_vec(&manifest)?,
    })
}

/// Parses a manifest the registry sent and checks that it is a Wasm component in the standard
/// layout; returns the component's layer. `what` names the reference in errors.
pub fn component_layer(bytes: &[u8], what: &str) -> Result<Descriptor> {
    let manifest: Manifest = match serde_json::from_slice(bytes) {
        Ok(manifest) => manifest,
        Err(e) => {
            // An index (a multi-platform image) parses as no manifest: say what it is.
            let media_type = serde_json::from_slice::<serde_json::Value>(bytes)
                .ok()
                .and_then(|v| v.get("mediaType")?.as_str().map(str::to_owned));
            if media_type.as_deref() == Some(INDEX_MEDIA_TYPE) {
                bail!("{what} is an image index, not a Wasm component's manifest");
            }
            bail!("{what}: the registry sent a manifest that is not an OCI image manifest ({e})");
        }
    };
    let shown = |s: &str| escape_controls(s).into_owned();
    if manifest.schema_version != 2 {
        bail!(
            "{what}: manifest schemaVersion {} is not 2",
            manifest.schema_version
        );
    }
    if let Some(media_type) = &manifest.media_type
        && media_type != MANIFEST_MEDIA_TYPE
    {
        bail!(
            "{what} is a `{}`, not an OCI image manifest ({MANIFEST_MEDIA_TYPE})",
            shown(media_type)
        );
    }
    if let Some(artifact_type) = &manifest.artifact_type
        && artifact_type != ARTIFACT_TYPE
    {
        bail!(
            "{what} is an artifact of type `{}`, not a Wasm component ({ARTIFACT_TYPE})",
            shown(artifact_type)
        );
    }
    if manifest.config.media_type != CONFIG_MEDIA_TYPE {
        bail!(
            "{what} is not a Wasm component: its config is `{}`, not {CONFIG_MEDIA_TYPE} (a \
             container image cannot be a plugin)",
            shown(&manifest.config.media_type)
        );
    }
    let [layer] = manifest.layers.as_slice() else {
        bail!(
            "{what} has {} layers; a Wasm component artifact has exactly one, {LAYER_MEDIA_TYPE}",
            manifest.layers.len()
        );
    };
    if layer.media_type != LAYER_MEDIA_TYPE {
        bail!(
            "{what}: its layer is `{}`, not {LAYER_MEDIA_TYPE}",
            shown(&layer.media_type)
        );
    }
    super::reference::check_digest(&layer.digest, what)?;
    Ok(layer.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packs_what_it_accepts() {
        let packed = pack(b"\0asm component", "0.1.0").unwrap();
        let layer = component_layer(&packed.manifest, "x").unwrap();
        assert_eq!(layer.digest, digest_of(b"\0asm component"));
        let manifest: serde_json::Value = serde_json::from_slice(&packed.manifest).unwrap();
        assert_eq!(manifest["artifactType"], ARTIFACT_TYPE);
        assert_eq!(manifest["config"]["mediaType"], CONFIG_MEDIA_TYPE);
        assert_eq!(manifest["layers"][0]["mediaType"], LAYER_MEDIA_TYPE);
    }

    #[test]
    fn refuses_other_artifacts() {
        let image = br#"{"schemaVersion":2,"config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:00","size":2},"layers":[]}"#;
        let err = component_layer(image, "x").unwrap_err().to_string();
        assert!(err.contains("container image"), "{err}");
        let index = br#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[]}"#;
        let err = component_layer(index, "x").unwrap_err().to_string();
        assert!(err.contains("image index"), "{err}");
        let two = pack(b"c", "1").unwrap().manifest;
        let mut v: serde_json::Value = serde_json::from_slice(&two).unwrap();
        let layer = v["layers"][0].clone();
        v["layers"].as_array_mut().unwrap().push(layer);
        let err = component_layer(&serde_json::to_vec(&v).unwrap(), "x")
            .unwrap_err()
            .to_string();
        assert!(err.contains("2 layers"), "{err}");
    }
}

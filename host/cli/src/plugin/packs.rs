//! Policy packs from OCI registries (`--policy-pack oci://…`, `oci://` entries of
//! `policy-packs:`): pulled as plugins are (the same client, credentials, TLS rules, mirrors
//! and content-addressed store), verified under the project's `trust:` policy before anything
//! compiles them, and pinned in Plinth.lock under `policy-packs:` by the reference they are
//! named by (digest, version, manifest, signature), so that later runs load the pinned build
//! from the store without asking the registry. A pack is granted nothing, wherever it comes
//! from: it runs in the policy sandbox like any other.

use std::collections::BTreeMap;

use anyhow::{Context, Result, bail};
use console::style;
use plinth_engine::policy::PolicyPack as _;
use plinth_engine::shown::escape_controls as e;
use plinth_runtime::{ComponentBytes, Runtime, Tier};
use semver::{Version, VersionReq};

use super::lockfile::{self, Pin};
use super::mirror;
use super::oci::Reference;
use super::publish;
use super::registry::{load_pinned, now, pull_newest};
use super::signature::{TrustPolicy, Verified};
use super::store::{Store, StoredKind, StoredPlugin, sha256_hex};
use crate::home::artifact_cache;
use crate::project::{PackSource, Project};

/// The `plinth:policy` package packs are built against (wit/policy): the only version there is.
const POLICY_WIT: &str = "0.1.0";

/// A registry's pack: its bytes, checked against its pin (or, fetched for the first time, its
/// signature verified), and the pin to keep once the pack has said who it is.
pub struct Fetched {
    /// The reference it is pinned by in Plinth.lock.
    pub key: String,
    pub component: ComponentBytes,
    pin: Pin,
    /// Where it was fetched from by this run, if it was.
    fetched: Option<String>,
}

/// Resolves the pack `reference` names: its pin in `locked`, from the store (fetched by the
/// manifest's digest when the store lacks it) unless `upgrade`; else the tag or digest it
/// names (without either, its newest version), pulled, verified and stored.
pub async fn fetch(
    store: &Store,
    reference: &Reference,
    locked: Option<&Pin>,
    upgrade: bool,
    trust: &TrustPolicy,
) -> Result<Fetched> {
    let key = reference.to_string();
    let what = format!("policy pack {key}");
    let repository = reference.repository_url();
    let pinned =
        locked.filter(|pin| pin.manifest.is_some() && pin.source.as_deref() == Some(&repository));
    if let Some(pin) = pinned.filter(|_| !upgrade) {
        let (component, fetched) = load_pinned(store, &what, reference, pin).await?;
        // The lock's signature, as committed with the project, before the store's.
        let signature = match &pin.signature {
            Some(text) => Some(text.clone()),
            None => store.signature(&pin.sha256)?,
        };
        let signer = verify(
            trust,
            &what,
            &pin.sha256,
            component.bytes(),
            signature.as_deref(),
            "nothing was compiled",
        )?;
        return Ok(Fetched {
            key,
            component,
            pin: Pin {
                signer,
                signature,
                ..pin.clone()
            },
            fetched,
        });
    }
    let located = mirror::rewrite(reference.clone())?;
    let (version, pulled) = match reference.manifest_reference() {
        Some(_) => (None, publish::pull(&located).await?),
        None => {
            let (version, pulled) = pull_newest(&located, &VersionReq::STAR).await?;
            (Some(version.to_string()), pulled)
        }
    };
    let sha256 = sha256_hex(&pulled.component);
    let signer = verify(
        trust,
        &what,
        &sha256,
        &pulled.component,
        pulled.signature.as_deref(),
        "nothing was compiled or stored",
    )?;
    store.put_blob(&sha256, &pulled.component)?;
    if let Some(signature) = &pulled.signature {
        store.add_signature(&sha256, signature)?;
    }
    Ok(Fetched {
        key,
        pin: Pin {
            sha256: sha256.clone(),
            version,
            source: Some(repository),
            manifest: Some(pulled.manifest),
            signer,
            signature: pulled.signature,
            ..Pin::default()
        },
        // The bytes checked above are the bytes compiled.
        component: ComponentBytes::new(store.blob(&sha256), pulled.component),
        fetched: Some(pulled.origin),
    })
}

/// Applies the trust policy: the signer's key id when a trusted key signed it, none when the
/// policy lets it run unsigned (warning), an error saying what was refused otherwise.
fn verify(
    trust: &TrustPolicy,
    what: &str,
    sha256: &str,
    bytes: &[u8],
    signature: Option<&str>,
    nothing: &str,
) -> Result<Option<String>> {
    match trust.verify(what, &format!("sha256:{sha256}"), bytes, signature) {
        Ok(Verified::Signed { signer }) => Ok(Some(signer)),
        Ok(Verified::Warn(warning)) => {
            eprintln!("{} {warning}", style("warning:").yellow().bold());
            Ok(None)
        }
        Err(refused) => bail!("{refused}; {nothing}"),
    }
}

impl Fetched {
    /// The pin to keep for the pack, loaded, that calls itself `name` `version`; a pack
    /// fetched by this run is recorded in the store's index.
    pub fn settle(self, store: &Store, name: &str, version: &str) -> Result<(String, Pin)> {
        let mut pin = self.pin;
        // A tag that is a version names the version the pack must call itself.
        let tag = Reference::parse(&self.key)?.tag;
        let expected = (pin.version.clone()).or(tag.filter(|t| Version::parse(t).is_ok()));
        if let Some(expected) = expected
            && expected != version
        {
            bail!(
                "policy pack {}: it holds a build that calls itself version `{}`, not {expected}; \
                 refused",
                self.key,
                e(version)
            );
        }
        pin.version = Some(version.to_owned());
        if let Some(origin) = self.fetched {
            store.record_pinned(StoredPlugin {
                name: name.to_owned(),
                version: version.to_owned(),
                wit: POLICY_WIT.to_owned(),
                sha256: pin.sha256.clone(),
                size: self.component.bytes().len() as u64,
                installed_at: now(),
                source: origin,
                kind: StoredKind::PolicyPack,
            })?;
        }
        Ok((self.key, pin))
    }
}

/// Pins the registry packs Plinth.yaml names, for `plugin lock`: each resolved as a run
/// resolves it (its pin kept unless `upgrade`); one not pinned yet is loaded, granted
/// nothing, to learn its version.
pub async fn lock_all(
    project: &Project,
    store: &Store,
    upgrade: bool,
) -> Result<BTreeMap<String, Pin>> {
    let locked = lockfile::read_lock(&project.dir)?.policy_packs;
    let trust = TrustPolicy::new(&project.file.trust).map_err(|e| anyhow::anyhow!(e))?;
    let mut runtime = None;
    let mut pins = BTreeMap::new();
    for spec in &project.file.policy_packs {
        let PackSource::Registry(reference) = &spec.source else {
            continue;
        };
        let key = reference.to_string();
        let fetched = fetch(store, reference, locked.get(&key), upgrade, &trust).await?;
        // Pinned, and in the store already: nothing to learn.
        if fetched.fetched.is_none() && fetched.pin.version.is_some() {
            pins.insert(fetched.key, fetched.pin);
            continue;
        }
        let runtime = match &mut runtime {
            Some(runtime) => runtime,
            None => runtime.insert(Runtime::new(artifact_cache()?)?),
        };
        let pack = (runtime.load_policy_pack_bytes(
            fetched.component.clone(),
            spec.limits.0,
            &BTreeMap::new(),
            // Read for its name and version; the optimized build is what later runs load.
            Tier::Optimized,
        ))
        .await
        .with_context(|| format!("cannot load the policy pack {key}"))?;
        let (key, pin) = fetched.settle(store, pack.name(), pack.version())?;
        pins.insert(key, pin);
    }
    Ok(pins)
}

//! Plugins from a registry (`source: oci://…` with a `version:` range): the range resolved
//! against the repository's tags, the component pulled into the store and pinned, or, once
//! pinned, loaded from the store by its digest without asking the registry (offline runs).
//!
//! Bytes are checked against the pin before anything compiles them; a new build is described
//! (in the bare sandbox) and refused if it asks for more than the pinned one, unless the user
//! accepts it.

use std::io::Write as _;

use anyhow::{Context, Result, bail};
use plinth_engine::shown::escape_controls as e;
use plinth_runtime::ComponentBytes;
use semver::{Version, VersionReq};

use super::approval::{self, PinnedCapabilities};
use super::describe::{Description, describe};
use super::lockfile::Pin;
use super::mirror::{self, Located};
use super::oci::Reference;
use super::publish::{self, Pulled};
use super::signature::TrustPolicy;
use super::store::{Store, StoredKind, StoredPlugin, sha256_hex};
use crate::project::version_range;

/// How `preview`, `up` and `plugin lock` may move a registry's plugin.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Take a new build that asks for more than the pinned one.
    pub accept_capabilities: bool,
    pub upgrade: Upgrade,
}

/// Which pins `plugin lock --upgrade` moves to the newest version their range allows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Upgrade {
    #[default]
    None,
    All,
    Only(String),
}

impl Upgrade {
    fn covers(&self, name: &str) -> bool {
        match self {
            Upgrade::None => false,
            Upgrade::All => true,
            Upgrade::Only(only) => only == name,
        }
    }
}

/// A registry's plugin, resolved: the bytes that run and their pin.
pub struct Fetched {
    pub component: ComponentBytes,
    pub pin: Pin,
}

/// Resolves the plugin `name` from `repository` at `version` (a version or range): its pin in
/// `locked` if that still fits and is not being upgraded, else the newest matching tag.
pub async fn resolve(
    store: &Store,
    name: &str,
    repository: &str,
    version: &str,
    locked: Option<&Pin>,
    options: &Options,
    trust: &TrustPolicy,
) -> Result<Fetched> {
    let reference = Reference::parse(repository)?;
    let range = version_range(version).map_err(|e| anyhow::anyhow!("plugin `{name}`: {e}"))?;
    let fits = |pin: &&Pin| {
        pin.source.as_deref() == Some(repository)
            && pin.manifest.is_some()
            && pin
                .version
                .as_deref()
                .and_then(|v| Version::parse(v).ok())
                .is_some_and(|v| range.matches(&v))
    };
    match locked.filter(fits) {
        Some(pin) if !options.upgrade.covers(name) => {
            let what = format!("plugin `{name}`");
            let (component, fetched) = load_pinned(store, &what, &reference, pin).await?;
            if let Some(origin) = fetched {
                // Described (in the bare sandbox) for the store's record of it.
                let description = describe_bytes(store, component.bytes()).await?;
                store.record_pinned(StoredPlugin {
                    name: name.to_owned(),
                    version: pin.version.clone().unwrap_or_default(),
                    wit: description.wit_version,
                    sha256: pin.sha256.clone(),
                    size: component.bytes().len() as u64,
                    installed_at: now(),
                    source: origin,
                    kind: StoredKind::Plugin,
                })?;
            }
            Ok(Fetched {
                component,
                pin: pin.clone(),
            })
        }
        _ => newest(store, name, &reference, &range, locked, options, trust).await,
    }
}

/// The pinned build of `what` (`plugin `x``, `policy pack oci://…`): from the store, or
/// pulled by its manifest's digest if the store lacks it, with where it was fetched from.
pub async fn load_pinned(
    store: &Store,
    what: &str,
    reference: &Reference,
    pin: &Pin,
) -> Result<(ComponentBytes, Option<String>)> {
    let blob = store.blob(&pin.sha256);
    let mut fetched = None;
    if !blob.exists() {
        // From its mirror, if a rule names one: the same digest either way.
        let by_digest = mirror::rewrite(reference.clone())?.at(None, pin.manifest.clone());
        let pulled = publish::pull(&by_digest)
            .await
            .with_context(|| format!("{what}: cannot fetch its pinned build"))?;
        check_pinned(what, &pulled.component, pin)?;
        store.put_blob(&pin.sha256, &pulled.component)?;
        if let Some(signature) = &pulled.signature {
            store.add_signature(&pin.sha256, signature)?;
        }
        fetched = Some(pulled.origin);
    }
    let component = ComponentBytes::read(&blob)
        .with_context(|| format!("{what}: cannot read {}", blob.display()))?;
    check_pinned(what, component.bytes(), pin).with_context(|| {
        format!(
            "the store's copy {} is damaged; remove it and run again to fetch the pinned build",
            blob.display()
        )
    })?;
    Ok((component, fetched))
}

/// Refuses bytes that are not the pinned build, before anything compiles them.
fn check_pinned(what: &str, bytes: &[u8], pin: &Pin) -> Result<()> {
    let actual = sha256_hex(bytes);
    if actual != pin.sha256 {
        bail!(
            "{what}: refusing bytes with sha256 {actual}: Plinth.lock pins sha256 {} ({}); \
             nothing was compiled",
            pin.sha256,
            pin.origin()
        );
    }
    Ok(())
}

/// Seconds since the Unix epoch, for the store's records.
pub fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The newest version in `range`, pulled, described, checked against the capabilities of the
/// pin it replaces, and stored.
async fn newest(
    store: &Store,
    name: &str,
    reference: &Reference,
    range: &VersionReq,
    old: Option<&Pin>,
    options: &Options,
    trust: &TrustPolicy,
) -> Result<Fetched> {
    let (version, pulled) = pull_newest(&mirror::rewrite(reference.clone())?, range)
        .await
        .with_context(|| format!("plugin `{name}`: cannot resolve `{range}` in {reference}"))?;
    let sha256 = sha256_hex(&pulled.component);
    // Its signature verified before describing it compiles it (a warning, if any, is given
    // once, when the project's plugins are checked together).
    if let Err(refused) = trust.verify(
        &format!("plugin `{name}`"),
        &format!("sha256:{sha256}"),
        &pulled.component,
        pulled.signature.as_deref(),
    ) {
        bail!("{refused}; nothing was compiled or stored");
    }
    let description = describe_bytes(store, &pulled.component).await?;
    if description.name.as_deref() != Some(name) {
        bail!(
            "plugin `{name}`: {reference}:{version} holds the plugin `{}`, not `{name}`",
            e(description.name.as_deref().unwrap_or("-"))
        );
    }
    if description.version.as_deref() != Some(&version.to_string()) {
        bail!(
            "plugin `{name}`: {reference}:{version} holds a build that calls itself version `{}`; \
             refused",
            e(description.version.as_deref().unwrap_or("-"))
        );
    }
    let capabilities = PinnedCapabilities::from(&description.capabilities);
    let wit = description.wit_version.clone();
    let pin = Pin {
        sha256: sha256.clone(),
        version: Some(version.to_string()),
        source: Some(reference.repository_url()),
        manifest: Some(pulled.manifest.clone()),
        capabilities: Some(capabilities.clone()),
        signature: pulled.signature.clone(),
        ..Pin::default()
    };
    if let Some(old) = old
        && let Some(approved) = &old.capabilities
    {
        let widening = approved.widening(&capabilities);
        if !widening.is_empty() && !options.accept_capabilities {
            bail!(
                "{}",
                approval::refusal(name, &old.origin(), &pin.origin(), &widening)
            );
        }
    }
    store.put_blob(&sha256, &pulled.component)?;
    if let Some(signature) = &pulled.signature {
        store.add_signature(&sha256, signature)?;
    }
    store.record_pinned(StoredPlugin {
        name: name.to_owned(),
        version: version.to_string(),
        wit,
        sha256: sha256.clone(),
        size: pulled.component.len() as u64,
        installed_at: now(),
        source: pulled.origin.clone(),
        kind: StoredKind::Plugin,
    })?;
    Ok(Fetched {
        component: ComponentBytes::read(&store.blob(&sha256))?,
        pin,
    })
}

/// The newest tag of `located` that is a version in `range`, and its component.
pub async fn pull_newest(located: &Located, range: &VersionReq) -> Result<(Version, Pulled)> {
    let listed = located.clone();
    let tags =
        tokio::task::spawn_blocking(move || listed.open()?.tags(&listed.reference.repository))
            .await??;
    let Some((version, tag)) = newest_matching(&tags, range) else {
        bail!(
            "no tag of {located} is a version in `{range}` (tags that are versions: {})",
            shown_versions(&tags)
        );
    };
    Ok((version, publish::pull(&located.at(Some(tag), None)).await?))
}

/// The highest tag that parses as a semantic version in `range`; other tags are ignored.
fn newest_matching(tags: &[String], range: &VersionReq) -> Option<(Version, String)> {
    tags.iter()
        .filter_map(|t| Some((Version::parse(t).ok()?, t.clone())))
        .filter(|(v, _)| range.matches(v))
        .max_by(|a, b| a.0.cmp(&b.0))
}

fn shown_versions(tags: &[String]) -> String {
    let mut versions: Vec<Version> = tags.iter().filter_map(|t| Version::parse(t).ok()).collect();
    versions.sort();
    if versions.is_empty() {
        return "none".to_owned();
    }
    // Tags passed the distribution grammar: no control character can be among them.
    let shown: Vec<String> = versions
        .iter()
        .rev()
        .take(10)
        .map(Version::to_string)
        .collect();
    shown.join(", ")
}

/// Describes pulled bytes from a staging file of the store's, removed afterwards.
pub async fn describe_bytes(store: &Store, bytes: &[u8]) -> Result<Description> {
    let mut staged = store.staging_file()?;
    staged
        .write_all(bytes)
        .and_then(|()| staged.flush())
        .with_context(|| format!("cannot write {}", staged.path().display()))?;
    let description = describe(staged.path()).await?;
    if description.sha256 != sha256_hex(bytes) {
        bail!("{} changed while it was described", staged.path().display());
    }
    Ok(description)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_version_in_range_wins_and_other_tags_are_ignored() {
        let tags: Vec<String> = [
            "latest",
            "0.1.0",
            "0.3.0",
            "0.2.5",
            "v0.2.9",
            "1.0.0",
            "0.2.6-rc.1",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let pick =
            |range: &str| newest_matching(&tags, &version_range(range).unwrap()).map(|(_, t)| t);
        assert_eq!(pick("^0.2").as_deref(), Some("0.2.5"));
        assert_eq!(pick("0.1.0").as_deref(), Some("0.1.0"));
        assert_eq!(pick(">=0.1, <2").as_deref(), Some("1.0.0"));
        assert_eq!(pick("^2"), None);
        assert_eq!(
            shown_versions(&tags),
            "1.0.0, 0.3.0, 0.2.6-rc.1, 0.2.5, 0.1.0"
        );
    }
}

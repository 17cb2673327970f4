//! `oci://HOST[:PORT]/REPOSITORY[:TAG][@sha256:DIGEST]`: parsed and checked against the
//! distribution specification's grammar before any part reaches a URL, a path or a terminal.

use std::fmt;

use anyhow::{Result, bail};
use plinth_engine::shown::escape_controls;

/// The distribution specification's cap on a repository name, host included.
const MAX_NAME: usize = 255;
/// The distribution specification's cap on a tag.
const MAX_TAG: usize = 128;

/// A checked reference to an artifact in an OCI registry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    /// `host` or `host:port`, lowercase.
    pub registry: String,
    pub repository: String,
    pub tag: Option<String>,
    /// `sha256:<64 lowercase hex>`.
    pub digest: Option<String>,
}

impl Reference {
    /// Parses `oci://…`; `what` names what is wrong and what a valid one looks like.
    pub fn parse(text: &str) -> Result<Reference> {
        let shown = escape_controls(text);
        let Some(rest) = text.strip_prefix("oci://") else {
            bail!("`{shown}` is not an OCI reference: give oci://HOST[:PORT]/REPOSITORY[:TAG]");
        };
        let Some((registry, path)) = rest.split_once('/') else {
            bail!("`{shown}` names no repository: give oci://HOST[:PORT]/REPOSITORY[:TAG]");
        };
        let registry = check_registry(registry, &shown)?;
        let (path, digest) = match path.split_once('@') {
            Some((path, digest)) => (path, Some(check_digest(digest, &shown)?)),
            None => (path, None),
        };
        // A tag follows the last `:` after the last `/`.
        let (repository, tag) = match path.rsplit_once(':') {
            Some((repository, tag)) if !tag.contains('/') => (repository, Some(tag)),
            _ => (path, None),
        };
        check_repository(repository, &registry, &shown)?;
        if let Some(tag) = tag {
            check_tag(tag).map_err(|why| anyhow::anyhow!("in `{shown}`: {why}"))?;
        }
        Ok(Reference {
            registry,
            repository: repository.to_owned(),
            tag: tag.map(str::to_owned),
            digest,
        })
    }

    /// The repository without tag or digest: `oci://host/repository`.
    pub fn repository_url(&self) -> String {
        format!("oci://{}/{}", self.registry, self.repository)
    }

    /// What to ask the registry's manifest endpoint for: the digest when there is one.
    pub fn manifest_reference(&self) -> Option<&str> {
        self.digest.as_deref().or(self.tag.as_deref())
    }
}

impl fmt::Display for Reference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.repository_url())?;
        if let Some(tag) = &self.tag {
            write!(f, ":{tag}")?;
        }
        if let Some(digest) = &self.digest {
            write!(f, "@{digest}")?;
        }
        Ok(())
    }
}

/// A tag as the distribution specification allows it: `[A-Za-z0-9_][A-Za-z0-9._-]{0,127}`.
pub fn check_tag(tag: &str) -> Result<(), String> {
    let mut chars = tag.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
    if !first_ok
        || tag.len() > MAX_TAG
        || !chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
    {
        return Err(format!(
            "`{}` is not a valid tag: at most {MAX_TAG} letters, digits, `_`, `.` and `-`, not \
             starting with `.` or `-`",
            escape_controls(tag)
        ));
    }
    Ok(())
}

/// `sha256:` and 64 lowercase hex digits (the only digest algorithm plinth accepts).
pub fn check_digest(digest: &str, shown: &str) -> Result<String> {
    match digest.strip_prefix("sha256:") {
        Some(hex)
            if hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) =>
        {
            Ok(digest.to_owned())
        }
        _ => bail!(
            "in `{shown}`: `{}` is not a digest plinth accepts: give sha256: and 64 lowercase \
             hexadecimal digits",
            escape_controls(digest)
        ),
    }
}

fn check_registry(registry: &str, shown: &str) -> Result<String> {
    let parsed = url::Url::parse(&format!("https://{registry}/")).ok();
    let ok = !registry.is_empty()
        && !registry.contains(['@', '?', '#', '\\'])
        && parsed
            .as_ref()
            .is_some_and(|url| url.host_str().is_some() && url.path() == "/");
    if !ok {
        bail!(
            "in `{shown}`: `{}` is not a registry host: give HOST or HOST:PORT",
            escape_controls(registry)
        );
    }
    Ok(registry.to_ascii_lowercase())
}

/// Path components of lowercase letters and digits, joined by `.`, `_`, `__` or dashes.
fn check_repository(repository: &str, registry: &str, shown: &str) -> Result<()> {
    let component_ok = |part: &str| {
        let bytes = part.as_bytes();
        let alnum = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
        if bytes.is_empty() || !alnum(&bytes[0]) || !alnum(&bytes[bytes.len() - 1]) {
            return false;
        }
        // Separators: one `.`, one or two `_`, or any number of `-`, between alphanumerics.
        part.split(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
            .all(|sep| {
                sep.is_empty()
                    || sep == "."
                    || sep == "_"
                    || sep == "__"
                    || sep.bytes().all(|b| b == b'-')
            })
            && bytes
                .iter()
                .all(|b| alnum(b) || matches!(b, b'.' | b'_' | b'-'))
    };
    if repository.is_empty()
        || registry.len() + 1 + repository.len() > MAX_NAME
        || !repository.split('/').all(component_ok)
    {
        bail!(
            "in `{shown}`: `{}` is not a valid repository name: lowercase letters and digits, \
             separated by `/`, `.`, `_`, `__` or `-`",
            escape_controls(repository)
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_tags_digests_and_ports() {
        let r = Reference::parse("oci://127.0.0.1:5000/plinth/random:0.1.0").unwrap();
        assert_eq!(r.registry, "127.0.0.1:5000");
        assert_eq!(r.repository, "plinth/random");
        assert_eq!(r.tag.as_deref(), Some("0.1.0"));
        assert_eq!(r.to_string(), "oci://127.0.0.1:5000/plinth/random:0.1.0");
        let digest = format!("sha256:{}", "a".repeat(64));
        let r = Reference::parse(&format!("oci://ghcr.io/a/b@{digest}")).unwrap();
        assert_eq!((r.tag, r.digest), (None, Some(digest)));
        let r = Reference::parse("oci://Registry.example.com/a").unwrap();
        assert_eq!((r.registry.as_str(), r.tag), ("registry.example.com", None));
    }

    #[test]
    fn refuses_hostile_names() {
        for bad in [
            "https://example.com/a",
            "oci://example.com",
            "oci://example.com/",
            "oci://example.com/../etc",
            "oci://example.com/A/b",
            "oci://example.com/a//b",
            "oci://example.com/a:.hidden",
            "oci://example.com/a:t\u{1b}]0;x",
            "oci://user@example.com/a",
            "oci://example.com/a@sha256:abc",
            "oci://example.com/a@md5:0123",
            "oci://exa mple.com/a",
        ] {
            let err = Reference::parse(bad).unwrap_err().to_string();
            assert!(!err.contains('\u{1b}'), "{err}");
        }
        assert!(check_tag(&"a".repeat(129)).is_err());
        assert!(check_tag("v1.2.3-rc_1").is_ok());
    }
}

//! Registry credentials as every OCI client reads them (docker's `config.json` `auths`), and the
//! `WWW-Authenticate` challenges a registry answers with (basic, or a bearer token from a realm).

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::Deserialize;

/// A config.json larger than this is refused rather than read.
const MAX_CONFIG_BYTES: u64 = 1024 * 1024;

/// A user name and password (or identity token) for one registry.
#[derive(Clone)]
pub struct Credentials {
    pub username: String,
    pub password: String,
}

impl Credentials {
    /// The `Authorization` value of basic authentication.
    pub fn basic(&self) -> String {
        format!(
            "Basic {}",
            STANDARD.encode(format!("{}:{}", self.username, self.password))
        )
    }
}

#[derive(Deserialize, Default)]
struct DockerConfig {
    #[serde(default)]
    auths: BTreeMap<String, AuthEntry>,
}

#[derive(Deserialize, Default)]
struct AuthEntry {
    auth: Option<String>,
    username: Option<String>,
    password: Option<String>,
}

/// docker's config file: `$DOCKER_CONFIG/config.json`, else `~/.docker/config.json`.
fn config_path() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("DOCKER_CONFIG") {
        return Some(PathBuf::from(dir).join("config.json"));
    }
    std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".docker/config.json"))
}

/// The credentials config.json holds for `registry` (`host[:port]`), if any. Keys may be
/// written as URLs (`https://host/v1/`), as `docker login` does for some registries.
pub fn credentials_for(registry: &str) -> Result<Option<Credentials>> {
    let Some(path) = config_path() else {
        return Ok(None);
    };
    let size = match std::fs::metadata(&path) {
        Ok(meta) => meta.len(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    if size > MAX_CONFIG_BYTES {
        bail!(
            "{} is {size} bytes, larger than the {MAX_CONFIG_BYTES} plinth reads",
            path.display()
        );
    }
    let text = std::fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
    let config: DockerConfig = serde_json::from_slice(&text)
        .with_context(|| format!("{} is not a docker config file", path.display()))?;
    let entry = config.auths.iter().find_map(|(key, entry)| {
        let host = key
            .trim_start_matches("https://")
            .trim_start_matches("http://")
            .split('/')
            .next()
            .unwrap_or_default();
        host.eq_ignore_ascii_case(registry).then_some(entry)
    });
    let Some(entry) = entry else {
        return Ok(None);
    };
    if let (Some(username), Some(password)) = (&entry.username, &entry.password) {
        return Ok(Some(Credentials {
            username: username.clone(),
            password: password.clone(),
        }));
    }
    let Some(auth) = &entry.auth else {
        return Ok(None);
    };
    let decoded = STANDARD
        .decode(auth.trim())
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok());
    match decoded.as_deref().and_then(|pair| pair.split_once(':')) {
        Some((username, password)) => Ok(Some(Credentials {
            username: username.to_owned(),
            password: password.to_owned(),
        })),
        None => bail!(
            "{}: the `auth` of `{registry}` is not base64 of USER:PASSWORD; log in again",
            path.display()
        ),
    }
}

/// What a registry's `WWW-Authenticate` asks for.
#[derive(Debug, PartialEq, Eq)]
pub enum Challenge {
    Basic,
    Bearer {
        realm: String,
        service: Option<String>,
        scope: Option<String>,
    },
}

/// Parses `Basic realm="…"` or `Bearer realm="…",service="…",scope="…"`.
pub fn parse_challenge(header: &str) -> Option<Challenge> {
    let (scheme, params) = header.trim().split_once(' ').unwrap_or((header.trim(), ""));
    if scheme.eq_ignore_ascii_case("basic") {
        return Some(Challenge::Basic);
    }
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    let mut values = BTreeMap::new();
    let mut rest = params.trim();
    while !rest.is_empty() {
        let (key, after) = rest.split_once('=')?;
        let after = after.trim_start();
        let (value, next) = if let Some(quoted) = after.strip_prefix('"') {
            let end = quoted.find('"')?;
            (&quoted[..end], &quoted[end + 1..])
        } else {
            let end = after.find(',').unwrap_or(after.len());
            (&after[..end], &after[end..])
        };
        values.insert(key.trim().to_ascii_lowercase(), value.to_owned());
        rest = next.trim_start().trim_start_matches(',').trim_start();
    }
    Some(Challenge::Bearer {
        realm: values.remove("realm")?,
        service: values.remove("service"),
        scope: values.remove("scope"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_challenges() {
        assert_eq!(parse_challenge("Basic realm=\"r\""), Some(Challenge::Basic));
        assert_eq!(
            parse_challenge(
                "Bearer realm=\"https://auth.example.com/token\",service=\"registry\",scope=\"repository:a/b:pull,push\""
            ),
            Some(Challenge::Bearer {
                realm: "https://auth.example.com/token".into(),
                service: Some("registry".into()),
                scope: Some("repository:a/b:pull,push".into()),
            })
        );
        assert_eq!(parse_challenge("Bearer service=x"), None);
        assert_eq!(parse_challenge("Negotiate"), None);
    }
}

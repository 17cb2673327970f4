//! The OIDC configuration (`plinth serve --oidc-config FILE`, YAML): the issuers whose ID tokens
//! the service exchanges for short-lived tokens of its own, and, per issuer, the rules mapping an
//! ID token's claims to what that token may do. Checked whole when the service starts: a mistake
//! here would otherwise show as tokens refused, or worse, granted, at the first CI run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use globset::{GlobBuilder, GlobMatcher};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::keys::KeyCache;
use crate::auth::{Level, Scope};
use crate::checks;

/// How long an issued token lasts unless a rule says otherwise.
pub(crate) const DEFAULT_LIFETIME: Duration = Duration::from_secs(3600);
/// The longest any issued token may last: a CI job's token, not a user's.
const LONGEST_LIFETIME: Duration = Duration::from_secs(12 * 3600);
/// How often an unknown key id may make the service fetch an issuer's keys again, by default.
const DEFAULT_REFETCH: Duration = Duration::from_secs(60);

/// A configuration the service refuses to start with.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read the OIDC configuration {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "the OIDC configuration {} is not valid: {message} (see \"Identity for CI\" in docs/team-service.md)",
        path.display()
    )]
    Invalid { path: PathBuf, message: String },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    issuers: Vec<FileIssuer>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileIssuer {
    issuer: String,
    audiences: Vec<String>,
    #[serde(default)]
    max_token_lifetime: Option<String>,
    #[serde(default)]
    keys_refetch_interval: Option<String>,
    rules: Vec<FileRule>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileRule {
    claims: BTreeMap<String, String>,
    level: String,
    #[serde(default)]
    project: Option<String>,
    #[serde(default)]
    stack: Option<String>,
    #[serde(default)]
    token_lifetime: Option<String>,
}

/// The issuers the service trusts, as the configuration file gave them, checked.
pub struct OidcConfig {
    pub(crate) issuers: Vec<Issuer>,
}

impl std::fmt::Debug for OidcConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let urls: Vec<&str> = self.issuers.iter().map(|i| i.url.as_str()).collect();
        f.debug_struct("OidcConfig")
            .field("issuers", &urls)
            .finish()
    }
}

/// One issuer: its ID tokens must name one of `audiences`; the first of `rules` their claims
/// match says what the token they are exchanged for may do.
pub(crate) struct Issuer {
    /// As its tokens' `iss` claim must say it, exactly.
    pub url: String,
    pub audiences: Vec<String>,
    pub rules: Vec<Rule>,
    pub keys: KeyCache,
}

pub(crate) struct Rule {
    /// Claim name, the pattern as written, the pattern compiled.
    claims: Vec<(String, String, GlobMatcher)>,
    pub scope: Scope,
    pub lifetime: Duration,
}

impl Rule {
    /// Whether every claim the rule names is in `claims`, a string (or number or boolean, as
    /// JSON writes it) its pattern matches.
    pub fn matches(&self, claims: &Map<String, Value>) -> bool {
        self.claims.iter().all(|(name, _, pattern)| {
            let value = match claims.get(name) {
                Some(Value::String(s)) => s.clone(),
                Some(v @ (Value::Number(_) | Value::Bool(_))) => v.to_string(),
                _ => return false,
            };
            pattern.is_match(value)
        })
    }
}

impl OidcConfig {
    /// Reads and checks the configuration file at `path`.
    pub fn load(path: &Path) -> Result<OidcConfig, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        OidcConfig::parse(&text).map_err(|message| ConfigError::Invalid {
            path: path.to_owned(),
            message,
        })
    }

    /// Parses and checks a configuration; the error says what is wrong, and where.
    pub(crate) fn parse(text: &str) -> Result<OidcConfig, String> {
        let file: FileConfig = serde_yaml_ng::from_str(text).map_err(|e| e.to_string())?;
        if file.issuers.is_empty() {
            return Err("it names no issuer".to_owned());
        }
        let mut issuers: Vec<Issuer> = Vec::new();
        for (i, issuer) in file.issuers.into_iter().enumerate() {
            let at = format!("issuer {} (`{}`)", i + 1, checks::shown(&issuer.issuer));
            let issuer = check_issuer(issuer).map_err(|e| format!("{at}: {e}"))?;
            if issuers.iter().any(|known| known.url == issuer.url) {
                return Err(format!(
                    "{at} is named twice: give it once, with all its rules"
                ));
            }
            issuers.push(issuer);
        }
        Ok(OidcConfig { issuers })
    }
}

fn check_issuer(file: FileIssuer) -> Result<Issuer, String> {
    check_issuer_url(&file.issuer)?;
    if file.audiences.is_empty() || file.audiences.iter().any(|a| a.trim().is_empty()) {
        return Err(
            "`audiences` must list at least one audience, none empty: the issuer \
                    signs tokens for other services too, which must not be exchanged here"
                .to_owned(),
        );
    }
    let max = lifetime(file.max_token_lifetime.as_deref(), "max_token_lifetime")?
        .unwrap_or(DEFAULT_LIFETIME);
    let refetch = match file.keys_refetch_interval.as_deref() {
        None => DEFAULT_REFETCH,
        Some(text) => humantime::parse_duration(text)
            .ok()
            .filter(|d| *d >= Duration::from_secs(1))
            .ok_or_else(|| {
                format!("`keys_refetch_interval: {text}` is not a duration of 1s or more")
            })?,
    };
    if file.rules.is_empty() {
        return Err("it has no `rules`: no token of it would be exchanged".to_owned());
    }
    let rules = (file.rules.into_iter().enumerate())
        .map(|(i, rule)| check_rule(rule, max).map_err(|e| format!("rule {}: {e}", i + 1)))
        .collect::<Result<Vec<Rule>, String>>()?;
    Ok(Issuer {
        keys: KeyCache::new(&file.issuer, refetch),
        url: file.issuer,
        audiences: file.audiences,
        rules,
    })
}

/// An issuer is reached over https, or plain http on a loopback address (a test's issuer): its
/// keys decide who gets a token, so they must not be fetched where anyone on the path can
/// replace them.
pub(crate) fn check_issuer_url(text: &str) -> Result<(), String> {
    let url = url::Url::parse(text).map_err(|e| format!("not a URL: {e}"))?;
    if url.query().is_some() || url.fragment().is_some() || !url.username().is_empty() {
        return Err("an issuer URL has no query, fragment or user".to_owned());
    }
    match url.scheme() {
        "https" if url.host().is_some() => Ok(()),
        "http" if is_loopback(&url) => Ok(()),
        _ => Err(
            "an issuer is reached over https (plain http only on a loopback address, \
                  for tests)"
                .to_owned(),
        ),
    }
}

fn is_loopback(url: &url::Url) -> bool {
    match url.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(name)) => name == "localhost",
        None => false,
    }
}

/// A lifetime given as `text` (`30m`, `2h`), up to the longest an issued token may last.
fn lifetime(text: Option<&str>, field: &str) -> Result<Option<Duration>, String> {
    let Some(text) = text else { return Ok(None) };
    let parsed = humantime::parse_duration(text)
        .map_err(|e| format!("`{field}: {text}` is not a duration like 30m or 2h: {e}"))?;
    if parsed < Duration::from_secs(60) || parsed > LONGEST_LIFETIME {
        return Err(format!(
            "`{field}: {text}`: a token issued for an ID token lasts from 1m to {}",
            humantime::format_duration(LONGEST_LIFETIME)
        ));
    }
    Ok(Some(parsed))
}

fn check_rule(file: FileRule, max: Duration) -> Result<Rule, String> {
    if file.claims.is_empty() {
        return Err(
            "it names no claim, so it would match every token the issuer signs, \
                    for anyone's repository: name the claims to match (`repository`, `ref`, …)"
                .to_owned(),
        );
    }
    if file.claims.values().all(|p| p.chars().all(|c| c == '*')) {
        return Err(
            "every claim it names matches anything (`*`): it would match every \
                    token the issuer signs"
                .to_owned(),
        );
    }
    let mut claims = Vec::new();
    for (name, pattern) in file.claims {
        if name.is_empty() {
            return Err("a claim has an empty name".to_owned());
        }
        let glob = GlobBuilder::new(&pattern)
            .backslash_escape(true)
            .build()
            .map_err(|e| format!("claim `{name}`: `{pattern}` is not a pattern: {e}"))?;
        claims.push((name, pattern, glob.compile_matcher()));
    }
    let level = Level::parse(&file.level).ok_or_else(|| {
        format!(
            "`level: {}` is not a level: read, write or admin",
            file.level
        )
    })?;
    for (what, name) in [("project", &file.project), ("stack", &file.stack)] {
        if let Some(name) = name {
            checks::name(what, name).map_err(|e| e.to_string())?;
        }
    }
    if file.stack.is_some() && file.project.is_none() {
        return Err("a rule for one stack names its project too (`project:` and `stack:`)".into());
    }
    let lifetime = lifetime(file.token_lifetime.as_deref(), "token_lifetime")?
        .unwrap_or(DEFAULT_LIFETIME.min(max));
    if lifetime > max {
        return Err(format!(
            "`token_lifetime` is longer than the issuer's `max_token_lifetime` ({})",
            humantime::format_duration(max)
        ));
    }
    Ok(Rule {
        claims,
        scope: Scope {
            level,
            project: file.project,
            stack: file.stack,
        },
        lifetime,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const GOOD: &str = "
issuers:
  - issuer: https://token.actions.githubusercontent.com
    audiences: [https://plinth.example.com]
    max_token_lifetime: 2h
    rules:
      - claims: { repository: octo/shop, ref: refs/heads/* }
        level: write
        project: shop
        stack: prod
        token_lifetime: 30m
      - claims: { repository: octo/shop }
        level: read
        project: shop
";

    fn claims(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn rules_match_claims_exactly_or_as_globs_in_order() {
        let config = OidcConfig::parse(GOOD).unwrap();
        let issuer = &config.issuers[0];
        let rule = |c: Value| {
            let c = claims(c);
            (issuer.rules.iter()).position(|r| r.matches(&c))
        };
        assert_eq!(
            rule(json!({"repository": "octo/shop", "ref": "refs/heads/feature/x"})),
            Some(0)
        );
        assert_eq!(
            rule(json!({"repository": "octo/shop", "ref": "refs/tags/v1"})),
            Some(1)
        );
        assert_eq!(
            rule(json!({"repository": "octo/shopping", "ref": "refs/heads/main"})),
            None
        );
        assert_eq!(rule(json!({"repository": ["octo/shop"]})), None);
        assert_eq!(rule(json!({})), None);
        assert_eq!(issuer.rules[0].lifetime, Duration::from_secs(1800));
        assert_eq!(issuer.rules[1].lifetime, DEFAULT_LIFETIME);
        assert_eq!(issuer.rules[1].scope.describe(), "read on project shop");
    }

    #[test]
    fn a_bad_configuration_is_refused_saying_what_is_wrong() {
        let refused = |text: &str, says: &str| {
            let error = OidcConfig::parse(text).map(|_| ()).unwrap_err();
            assert!(error.contains(says), "{text}: {error}");
        };
        let issuer = |url: &str, rest: &str| {
            format!("issuers:\n  - issuer: {url}\n    audiences: [a]\n{rest}")
        };
        let rule = "    rules:\n      - claims: { sub: x }\n        level: write\n";
        refused("issuers: []", "names no issuer");
        refused(&issuer("http://ci.example.com", rule), "over https");
        refused(&issuer("ftp://127.0.0.1", rule), "over https");
        assert!(OidcConfig::parse(&issuer("http://127.0.0.1:9", rule)).is_ok());
        refused(
            &issuer("https://ci.example.com", "    rules: []\n"),
            "no `rules`",
        );
        refused(
            "issuers:\n  - issuer: https://a\n    audiences: []\n    rules: []\n",
            "at least one audience",
        );
        let rules = |r: &str| issuer("https://ci.example.com", &format!("    rules:\n{r}"));
        refused(
            &rules("      - claims: {}\n        level: write\n"),
            "names no claim",
        );
        refused(
            &rules("      - claims: { sub: '*' }\n        level: write\n"),
            "matches anything",
        );
        refused(
            &rules("      - claims: { sub: x }\n        level: root\n"),
            "not a level",
        );
        refused(
            &rules("      - claims: { sub: x }\n        level: read\n        stack: dev\n"),
            "names its project",
        );
        refused(
            &rules("      - claims: { sub: x }\n        level: read\n        project: ..\n"),
            "project",
        );
        refused(
            &rules("      - claims: { sub: x }\n        level: read\n        token_lifetime: 2h\n"),
            "max_token_lifetime",
        );
        refused(
            &rules(
                "      - claims: { sub: x }\n        level: read\n        token_lifetime: 30d\n",
            ),
            "from 1m to 12h",
        );
        refused(
            &rules("      - claims: { sub: x }\n        level: read\n        colour: red\n"),
            "unknown field `colour`",
        );
        refused(
            &rules("      - claims: { sub: '[x' }\n        level: read\n"),
            "not a pattern",
        );
        let one = "  - issuer: https://a.example\n    audiences: [a]\n    rules:\n      - claims: { sub: x }\n        level: write\n";
        refused(&format!("issuers:\n{one}{one}"), "named twice");
    }
}

//! Capabilities approved like a lock: what a pinned plugin asks for, as `Plinth.lock` records
//! it, and the widening a new build asks for beyond it. A widening is taken only when the user
//! says so (`--accept-capabilities`); a narrowing is taken silently.
//!
//! "Wider" means the new build may reach something the pinned one could not:
//! - a directory whose guest path the pinned build did not ask for, or write access to one it
//!   only read;
//! - an environment variable it did not read;
//! - a `tcp`, `udp` or `http` pattern that no pinned pattern covers, by the rule a grant covers
//!   a request (`*.example.com:443` covers `api.example.com:443`, `host:*` covers `host:5432`).
//!   A pattern that follows configuration (`{host}:{port}`) is covered only by the same text.

use std::fmt::Write as _;

use plinth_engine::shown::escape_controls as e;
use plinth_runtime::{AuthorityPattern, EndpointPattern};
use serde::{Deserialize, Serialize};

use super::describe::CapabilitiesView;

/// What a pinned plugin asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PinnedCapabilities {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dirs: Vec<PinnedDir>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tcp: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub udp: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub http: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PinnedDir {
    pub guest: String,
    /// `read-only` or `read-write`.
    pub access: String,
}

const READ_WRITE: &str = "read-write";

impl From<&CapabilitiesView> for PinnedCapabilities {
    fn from(view: &CapabilitiesView) -> PinnedCapabilities {
        PinnedCapabilities {
            dirs: view
                .dirs
                .iter()
                .map(|d| PinnedDir {
                    guest: d.guest.clone(),
                    access: d.access.to_owned(),
                })
                .collect(),
            env: view.env.clone(),
            tcp: view.tcp.clone(),
            udp: view.udp.clone(),
            http: view.http.clone(),
        }
    }
}

impl PinnedCapabilities {
    /// What `new` asks for beyond `self`, one escaped line each (`+ tcp: db:5432`); empty when
    /// `new` is as narrow or narrower.
    pub fn widening(&self, new: &PinnedCapabilities) -> Vec<String> {
        let mut wider = Vec::new();
        let same_dir = |a: &str, b: &str| a.trim_end_matches('/') == b.trim_end_matches('/');
        for dir in &new.dirs {
            let old = self.dirs.iter().find(|d| same_dir(&d.guest, &dir.guest));
            let widens = match old {
                None => true,
                Some(old) => dir.access == READ_WRITE && old.access != READ_WRITE,
            };
            if widens {
                wider.push(format!("+ dir: {} ({})", e(&dir.guest), e(&dir.access)));
            }
        }
        for name in new.env.iter().filter(|n| !self.env.contains(n)) {
            wider.push(format!("+ env: {}", e(name)));
        }
        for (kind, old, new) in [("tcp", &self.tcp, &new.tcp), ("udp", &self.udp, &new.udp)] {
            for pattern in new.iter().filter(|p| !covered::<EndpointPattern>(old, p)) {
                wider.push(format!("+ {kind}: {}", e(pattern)));
            }
        }
        for pattern in new
            .http
            .iter()
            .filter(|p| !covered::<AuthorityPattern>(&self.http, p))
        {
            wider.push(format!("+ http: {}", e(pattern)));
        }
        wider
    }
}

/// A pattern and the sandbox's rule for one covering another.
trait Covers: std::str::FromStr {
    fn covers(&self, asked: &Self) -> bool;
}

impl Covers for EndpointPattern {
    fn covers(&self, asked: &Self) -> bool {
        EndpointPattern::covers(self, asked)
    }
}

impl Covers for AuthorityPattern {
    fn covers(&self, asked: &Self) -> bool {
        AuthorityPattern::covers(self, asked)
    }
}

/// Whether one of `old` covers `pattern`: the same text, or (neither following configuration)
/// a pattern that matches everything it matches. What does not parse is only its own text.
fn covered<P: Covers>(old: &[String], pattern: &str) -> bool {
    if old.iter().any(|o| o == pattern) {
        return true;
    }
    let Ok(asked) = pattern.parse::<P>() else {
        return false;
    };
    old.iter()
        .filter_map(|o| o.parse::<P>().ok())
        .any(|o| o.covers(&asked))
}

/// The refusal of a widening, with what to do about it.
pub fn refusal(plugin: &str, from: &str, to: &str, widening: &[String]) -> String {
    let mut message = format!(
        "plugin `{plugin}` {} asks for more than the pinned {} in Plinth.lock:",
        e(to),
        e(from)
    );
    for line in widening {
        let _ = write!(message, "\n  {line}");
    }
    message.push_str(
        "\nNothing was changed. If the plugin should have this access, run again with \
         --accept-capabilities.",
    );
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps(tcp: &[&str], http: &[&str], env: &[&str]) -> PinnedCapabilities {
        let owned = |v: &[&str]| v.iter().map(|s| s.to_string()).collect();
        PinnedCapabilities {
            tcp: owned(tcp),
            http: owned(http),
            env: owned(env),
            ..PinnedCapabilities::default()
        }
    }

    #[test]
    fn wider_is_what_no_pinned_pattern_covers() {
        let old = caps(
            &["*.example.com:443", "{host}:{port}"],
            &["api.x.io"],
            &["TOKEN"],
        );
        // Narrower or the same: nothing to approve.
        let narrower = caps(&["db.example.com:443", "{host}:{port}"], &[], &[]);
        assert!(old.widening(&narrower).is_empty());
        let wider = caps(
            &["example.com:443", "{host}:{other}", "db.example.com:*"],
            &["api.x.io:8443"],
            &["TOKEN", "HOME"],
        );
        assert_eq!(
            old.widening(&wider),
            [
                "+ env: HOME",
                "+ tcp: example.com:443",
                "+ tcp: {host}:{other}",
                "+ tcp: db.example.com:*",
                "+ http: api.x.io:8443",
            ]
        );
    }

    #[test]
    fn write_access_widens_a_directory_and_strings_are_escaped() {
        let dir = |access: &str| PinnedCapabilities {
            dirs: vec![PinnedDir {
                guest: "/data\u{1b}[2J".into(),
                access: access.into(),
            }],
            ..PinnedCapabilities::default()
        };
        assert!(dir("read-write").widening(&dir("read-only")).is_empty());
        let wider = dir("read-only").widening(&dir("read-write"));
        assert_eq!(wider.len(), 1);
        assert!(!wider[0].contains('\u{1b}'), "{wider:?}");
    }
}

//! Which plinth a service is, and how far a client may be from it.
//!
//! The CLI, the service and the SDKs share one version. Before 1.0 a minor version may change
//! what the other side sends (as semver allows 0.x), so client and service are "too far apart"
//! when their major versions differ, or, for 0.x, their minor versions do: the client warns,
//! naming both, and goes on (the protocol's own checks refuse what they cannot read).

use serde::{Deserialize, Serialize};

/// The header every answer of the service carries its version in.
pub const VERSION_HEADER: &str = "plinth-version";

/// `GET /api/v1/version`, asked without a token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServiceVersion {
    /// plinth's version, as `plinth --version` prints it.
    pub version: String,
    /// The commit the service was built from, or `unknown`.
    pub commit: String,
    /// The protocol's version: the `v1` of `/api/v1`.
    pub api: String,
}

/// A version as plinth writes it: `MAJOR.MINOR.PATCH`, optionally `-pre` and `+build`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Release {
    pub major: u64,
    pub minor: u64,
    pub patch: u64,
}

impl Release {
    /// `text` as a version, or `None` if it is not one.
    pub fn parse(text: &str) -> Option<Release> {
        let core = text.split(['-', '+']).next()?;
        let mut parts = core.split('.').map(|p| {
            let digits = !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
            digits.then(|| p.parse::<u64>().ok()).flatten()
        });
        let release = Release {
            major: parts.next()??,
            minor: parts.next()??,
            patch: parts.next()??,
        };
        parts.next().is_none().then_some(release)
    }

    /// The series whose versions may talk to each other: `1.x`, or `0.MINOR.x` before 1.0.
    pub fn series(self) -> String {
        if self.major == 0 {
            format!("0.{}.x", self.minor)
        } else {
            format!("{}.x", self.major)
        }
    }

    /// Whether this and `other` are too far apart to be sure they understand each other.
    pub fn too_far_from(self, other: Release) -> bool {
        self.major != other.major || (self.major == 0 && self.minor != other.minor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(text: &str) -> Release {
        Release::parse(text).unwrap()
    }

    #[test]
    fn versions_parse_and_anything_else_does_not() {
        assert_eq!(
            r("1.22.333"),
            Release {
                major: 1,
                minor: 22,
                patch: 333
            }
        );
        assert_eq!(r("0.2.0-rc.1+abc"), r("0.2.0"));
        for bad in [
            "", "1", "1.2", "1.2.3.4", "a.b.c", "1..2", "v1.2.3", "1.2.+3", " 1.2.3",
        ] {
            assert_eq!(Release::parse(bad), None, "{bad:?}");
        }
        assert_eq!(Release::parse("99999999999999999999.0.0"), None);
    }

    #[test]
    fn too_far_is_another_major_or_another_minor_before_1_0() {
        assert!(!r("0.1.0").too_far_from(r("0.1.7")));
        assert!(r("0.1.0").too_far_from(r("0.2.0")));
        assert!(r("0.9.0").too_far_from(r("1.0.0")));
        assert!(!r("1.2.0").too_far_from(r("1.9.3")));
        assert!(r("1.2.0").too_far_from(r("2.0.0")));
        assert_eq!(r("0.3.1").series(), "0.3.x");
        assert_eq!(r("2.3.1").series(), "2.x");
    }
}

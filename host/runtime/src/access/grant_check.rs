//! The check of a plugin's grants before it starts: every granted directory exists, no two
//! claim one guest path or nest with different access ([`grant_overlap`](super::grant_overlap)),
//! and granted variable names are names. Apart from the grants themselves, so that they name
//! no load error.

use crate::access::grant_overlap::{Resolved, conflict};
use crate::access::grants::{Grants, normalise_guest};
use crate::error::LoadError;

impl Grants {
    /// Checks, before the plugin `plugin` starts, that every granted directory exists, that no
    /// two grants claim the same guest path, that no two grants with different access nest
    /// (see [`grant_overlap`](crate::access::grant_overlap)), and that granted variable names are
    /// names. (Network patterns are checked when they are parsed.)
    pub(crate) fn validate(&self, plugin: &str) -> Result<(), LoadError> {
        let mut resolved: Vec<Resolved> = Vec::with_capacity(self.dirs.len());
        for dir in &self.dirs {
            let refuse = |reason: String| LoadError::Grant {
                plugin: plugin.to_owned(),
                path: dir.host.clone(),
                reason,
            };
            let guest = normalise_guest(&dir.guest).map_err(refuse)?;
            if resolved.iter().any(|r| r.guest == guest) {
                return Err(refuse(format!(
                    "another directory is already granted at `{}`",
                    dir.guest
                )));
            }
            match std::fs::metadata(&dir.host) {
                Ok(meta) if meta.is_dir() => {}
                Ok(_) => return Err(refuse("it is not a directory".to_owned())),
                Err(e) => return Err(refuse(e.to_string())),
            }
            let host = std::fs::canonicalize(&dir.host).map_err(|e| refuse(e.to_string()))?;
            let this = Resolved {
                grant: dir,
                guest,
                host,
            };
            if let Some(reason) = resolved.iter().find_map(|r| conflict(&this, r)) {
                return Err(refuse(reason));
            }
            resolved.push(this);
        }
        for name in &self.env {
            let reason = if name.is_empty() {
                "the name is empty"
            } else if name.contains(['=', '\0']) {
                "a name cannot contain `=` or a NUL character"
            } else {
                continue;
            };
            return Err(LoadError::EnvGrant {
                plugin: plugin.to_owned(),
                name: name.clone(),
                reason,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::access::grants::{Access, DirGrant};

    #[test]
    fn variable_names_must_be_names() {
        let grants = |name: &str| Grants {
            env: vec!["HOME_REGION".into(), name.into()],
            ..Grants::default()
        };
        assert!(grants("API_TOKEN").validate("p").is_ok());
        for (bad, why) in [("", "the name is empty"), ("A=B", "cannot contain `=`")] {
            let err = grants(bad).validate("p").unwrap_err().to_string();
            assert!(
                err.contains(&format!(
                    "plugin `p`: cannot grant the environment variable `{bad}`"
                )) && err.contains(why),
                "{err}"
            );
        }
    }

    fn dir(host: PathBuf, guest: &str, access: Access) -> DirGrant {
        DirGrant {
            host,
            guest: guest.into(),
            access,
        }
    }

    /// `./site` read-write at `/site` and `./site/secret` read-only, spelled every way a guest
    /// or host path can be: each pair is refused, naming both; same access, or no nesting, is
    /// fine.
    #[test]
    fn grants_nested_with_different_access_are_refused() {
        let root = tempfile::tempdir().unwrap();
        let site = root.path().join("site");
        std::fs::create_dir_all(site.join("secret")).unwrap();
        std::fs::create_dir(root.path().join("other")).unwrap();
        std::os::unix::fs::symlink(&site, root.path().join("link")).unwrap();
        let outer = dir(site.clone(), "/site", Access::ReadWrite);
        let by_guest = [
            "/site/secret",
            "/site/./secret",
            "/site//secret",
            "/site/secret/",
        ];
        for guest in by_guest {
            let inner = dir(site.join("secret"), guest, Access::ReadOnly);
            for dirs in [
                vec![outer.clone(), inner.clone()],
                vec![inner, outer.clone()],
            ] {
                let err = Grants {
                    dirs,
                    ..Grants::default()
                }
                .validate("p")
                .unwrap_err();
                let err = err.to_string();
                assert!(
                    err.contains("plugin `p`: cannot grant the directory")
                        && err.contains("granted read-only at")
                        && err.contains("granted read-write at `/site`")
                        && err.contains("do not nest"),
                    "{guest}: {err}"
                );
            }
        }
        // The host directories nest, whatever the guest paths, however the host path is spelt.
        for host in [
            site.join("secret"),
            site.join("../site/secret"),
            root.path().join("link/secret"),
        ] {
            let inner = dir(host.clone(), "/elsewhere", Access::ReadOnly);
            let grants = Grants {
                dirs: vec![outer.clone(), inner],
                ..Grants::default()
            };
            let err = grants.validate("p").unwrap_err().to_string();
            assert!(
                err.contains("its host directory lies within"),
                "{host:?}: {err}"
            );
        }
        let same = dir(root.path().join("link"), "/again", Access::ReadOnly);
        let grants = Grants {
            dirs: vec![outer.clone(), same],
            ..Grants::default()
        };
        assert!(grants.validate("p").is_err());

        let fine = [
            dir(site.join("secret"), "/site/secret", Access::ReadWrite),
            dir(root.path().join("other"), "/site-other", Access::ReadOnly),
        ];
        for other in fine {
            let grants = Grants {
                dirs: vec![outer.clone(), other],
                ..Grants::default()
            };
            assert!(grants.validate("p").is_ok(), "{grants:?}");
        }
        let twice = dir(root.path().join("other"), "/site/", Access::ReadWrite);
        let grants = Grants {
            dirs: vec![outer, twice],
            ..Grants::default()
        };
        let err = grants.validate("p").unwrap_err().to_string();
        assert!(
            err.contains("another directory is already granted at `/site/`"),
            "{err}"
        );
    }
}

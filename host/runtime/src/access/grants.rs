//! What a plugin is granted beyond the bare sandbox. Deny by default: a plugin sees nothing of
//! the host unless the project grants it: directories (preopened at a path of the plugin's
//! choosing, read-only or read-write), named environment variables, TCP and UDP endpoints to
//! reach, local addresses to listen on, and the authorities it may send HTTP requests to.

use std::path::PathBuf;

use wasmtime_wasi::{FsPerms, WasiCtxBuilder};

use crate::access::endpoint::{AuthorityPattern, EndpointPattern};
use crate::access::grant_overlap::{Resolved, conflict, normalise_guest};
use crate::error::LoadError;

/// Everything a plugin is granted. The default grants nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Grants {
    /// Host directories the plugin may use.
    pub dirs: Vec<DirGrant>,
    /// Environment variables the plugin sees, with their values in the host's environment.
    pub env: Vec<String>,
    /// Endpoints the plugin may connect to over TCP.
    pub tcp: Vec<EndpointPattern>,
    /// Local addresses the plugin may bind and listen on for TCP connections (an ephemeral
    /// port, as every connect binds, needs none).
    pub tcp_listen: Vec<EndpointPattern>,
    /// Endpoints the plugin may exchange datagrams with over UDP.
    pub udp: Vec<EndpointPattern>,
    /// Local addresses the plugin may bind a UDP socket to, to receive datagrams there (an
    /// ephemeral port, to send from, needs none).
    pub udp_listen: Vec<EndpointPattern>,
    /// Authorities the plugin may send outbound `wasi:http` requests to.
    pub http: Vec<AuthorityPattern>,
}

/// A host directory made visible to a plugin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirGrant {
    /// The directory on the host.
    pub host: PathBuf,
    /// Where the plugin sees it, e.g. `/world`.
    pub guest: String,
    pub access: Access,
}

/// What a plugin may do in a granted directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    ReadOnly,
    ReadWrite,
}

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

    /// Preopens the granted directories in `wasi`; the error says which one could not be opened.
    pub(crate) fn preopen(&self, wasi: &mut WasiCtxBuilder) -> Result<(), String> {
        for dir in &self.dirs {
            let perms = match dir.access {
                Access::ReadOnly => FsPerms::ReadOnly,
                Access::ReadWrite => FsPerms::ReadWrite,
            };
            // Under its normal spelling, so that `/site/` is matched as `/site` is.
            let guest = normalise_guest(&dir.guest)?;
            wasi.preopened_dir(&dir.host, &guest, perms).map_err(|e| {
                format!(
                    "cannot open the granted directory `{}`: {e:#}",
                    dir.host.display()
                )
            })?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

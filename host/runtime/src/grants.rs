//! What a plugin is granted beyond the bare sandbox. Deny by default: a plugin sees nothing of
//! the host unless the project grants it: directories (preopened at a path of the plugin's
//! choosing, read-only or read-write), named environment variables, TCP and UDP endpoints, and
//! the authorities it may send HTTP requests to.

use std::path::PathBuf;

use wasmtime_wasi::{FsPerms, WasiCtxBuilder};

use crate::endpoint::{AuthorityPattern, EndpointPattern};
use crate::error::LoadError;

/// Everything a plugin is granted. The default grants nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Grants {
    /// Host directories the plugin may use.
    pub dirs: Vec<DirGrant>,
    /// Environment variables the plugin sees, with their values in the host's environment.
    pub env: Vec<String>,
    /// Endpoints the plugin may connect to (or listen on) over TCP.
    pub tcp: Vec<EndpointPattern>,
    /// Endpoints the plugin may exchange datagrams with over UDP.
    pub udp: Vec<EndpointPattern>,
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
    /// two grants claim the same guest path, and that granted variable names are names.
    /// (Network patterns are checked when they are parsed.)
    pub(crate) fn validate(&self, plugin: &str) -> Result<(), LoadError> {
        for (i, dir) in self.dirs.iter().enumerate() {
            let refuse = |reason: String| LoadError::Grant {
                plugin: plugin.to_owned(),
                path: dir.host.clone(),
                reason,
            };
            if !dir.guest.starts_with('/') {
                return Err(refuse(format!(
                    "its guest path `{}` must be absolute",
                    dir.guest
                )));
            }
            if self.dirs[..i].iter().any(|d| d.guest == dir.guest) {
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
            wasi.preopened_dir(&dir.host, &dir.guest, perms)
                .map_err(|e| {
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
}

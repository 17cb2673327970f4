//! What a plugin is granted beyond the bare sandbox. Deny by default: a plugin sees nothing of
//! the host unless the project grants it: directories (preopened at a path of the plugin's
//! choosing, read-only or read-write), named environment variables, TCP and UDP endpoints to
//! reach, local addresses to listen on, the authorities it may send HTTP requests to, and the
//! endpoints it may talk TLS to without verifying the server's certificate.

use std::path::PathBuf;

use wasmtime_wasi::{FsPerms, WasiCtxBuilder};

use crate::access::endpoint::{AuthorityPattern, EndpointPattern};

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
    /// TCP endpoints whose TLS sessions (`plinth:tls`) the plugin may run without verifying
    /// the server's certificate fully (libpq's `require` and `verify-ca`). Without such a
    /// grant, only a fully verified session is allowed.
    pub tls_insecure: Vec<EndpointPattern>,
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

/// `guest` as `/a/b`: absolute, with empty and `.` components dropped and no trailing `/`.
/// A `..` component is refused: what it names depends on how the guest resolves it.
pub(crate) fn normalise_guest(guest: &str) -> Result<String, String> {
    if !guest.starts_with('/') {
        return Err(format!("its guest path `{guest}` must be absolute"));
    }
    let mut normal = String::new();
    for part in guest.split('/').filter(|p| !p.is_empty() && *p != ".") {
        if part == ".." {
            return Err(format!(
                "its guest path `{guest}` contains `..`; write it without"
            ));
        }
        normal.push('/');
        normal.push_str(part);
    }
    if normal.is_empty() {
        normal.push('/');
    }
    Ok(normal)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guest_paths_are_normalised() {
        for (spelling, normal) in [
            ("/site", "/site"),
            ("/site/", "/site"),
            ("//site//secret/", "/site/secret"),
            ("/site/./secret", "/site/secret"),
            ("/", "/"),
            ("/./", "/"),
        ] {
            assert_eq!(normalise_guest(spelling).unwrap(), normal, "{spelling}");
        }
        assert!(normalise_guest("site").unwrap_err().contains("absolute"));
        assert!(
            normalise_guest("/site/../etc")
                .unwrap_err()
                .contains("`..`")
        );
    }
}

//! What a plugin asks for and lacks, in the words a refusal shows: the capability check
//! finds it, the embedder's advice ([`GrantAdvice`](crate::GrantAdvice)) words how to grant it.

use std::fmt;

use crate::access::grants::Access;

/// A directory a plugin asks to see.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirRequest {
    /// Where the plugin expects it, e.g. `/data`.
    pub guest: String,
    /// The access the plugin needs.
    pub access: Access,
    /// Why the plugin needs it, in its own words.
    pub why: String,
}

/// One capability a plugin asks for that its grants do not cover.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Missing {
    /// No directory is granted at the path the plugin asks for.
    Dir(DirRequest),
    /// The directory is granted read-only, and the plugin writes there.
    DirWrite(DirRequest),
    Env(String),
    Tcp(String),
    Udp(String),
    /// Listening on a local address: a plugin cannot ask for this (only a refused attempt
    /// needs it).
    TcpListen(String),
    UdpListen(String),
    Http(String),
    /// A TLS session that does not fully verify the server's certificate: a plugin cannot
    /// ask for this (only a refused attempt needs it).
    TlsInsecure(String),
    /// Looking up a host name no TCP or UDP grant names. A plugin cannot ask for this as such
    /// (its TCP and UDP patterns do): only a refused attempt needs it.
    Lookup(String),
}

impl fmt::Display for Missing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Missing::Dir(dir) => {
                let access = match dir.access {
                    Access::ReadOnly => "read-only",
                    Access::ReadWrite => "read-write",
                };
                write!(f, "{access} access to the directory {}", dir.guest)?;
                why(f, &dir.why)
            }
            Missing::DirWrite(dir) => {
                write!(f, "write access to the directory {}", dir.guest)?;
                f.write_str(", granted read-only")?;
                why(f, &dir.why)
            }
            Missing::Env(name) => write!(f, "the environment variable {name}"),
            Missing::Tcp(pattern) => write!(f, "TCP connections to {pattern}"),
            Missing::Udp(pattern) => write!(f, "UDP datagrams with {pattern}"),
            Missing::TcpListen(pattern) => write!(f, "listening for TCP connections on {pattern}"),
            Missing::UdpListen(pattern) => write!(f, "receiving UDP datagrams on {pattern}"),
            Missing::Http(pattern) => write!(f, "HTTP requests to {pattern}"),
            Missing::TlsInsecure(pattern) => {
                write!(
                    f,
                    "TLS to {pattern} without verifying its certificate fully"
                )
            }
            Missing::Lookup(name) => write!(f, "name lookups of {name}"),
        }
    }
}

fn why(f: &mut fmt::Formatter<'_>, why: &str) -> fmt::Result {
    if why.is_empty() {
        Ok(())
    } else {
        write!(f, " ({why})")
    }
}

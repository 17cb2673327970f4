//! Directory grants that nest. A guest resolves a path against the preopen whose name is the
//! longest *literal* prefix of it, so with `/site` read-write and `/site/secret` read-only,
//! `/site/./secret/key.txt` or `/site//secret/key.txt` reaches the secret directory through the
//! read-write grant. The same holds on the host: two grants of which one holds the other (by
//! `..` or a symlink) reach the same files. Grants nested either way with different access are
//! therefore refused when the plugin is loaded.

use std::path::{Path, PathBuf};

use crate::access::grants::{Access, DirGrant};

/// Whether the guest path `inner` is `outer` or lies beneath it (both normalised).
fn guest_within(inner: &str, outer: &str) -> bool {
    Path::new(inner).starts_with(outer)
}

fn access_name(access: Access) -> &'static str {
    match access {
        Access::ReadOnly => "read-only",
        Access::ReadWrite => "read-write",
    }
}

/// One grant as compared: its normalised guest path and canonical host directory.
pub(crate) struct Resolved<'a> {
    pub grant: &'a DirGrant,
    pub guest: String,
    pub host: PathBuf,
}

/// Why two grants cannot both be given, if they nest with different access: the message names
/// both and says how to fix it.
pub(crate) fn conflict(a: &Resolved, b: &Resolved) -> Option<String> {
    if a.grant.access == b.grant.access {
        return None;
    }
    let (inner, outer, side) = if guest_within(&a.guest, &b.guest) {
        (a, b, "guest path")
    } else if guest_within(&b.guest, &a.guest) {
        (b, a, "guest path")
    } else if a.host.starts_with(&b.host) {
        (a, b, "host directory")
    } else if b.host.starts_with(&a.host) {
        (b, a, "host directory")
    } else {
        return None;
    };
    Some(format!(
        "it is granted {} at `{}` but its {side} lies within `{}` (`{}`), granted {} at `{}`, \
         so the plugin could reach it with either access under another spelling of the path; \
         give both the same access, or grant directories that do not nest",
        access_name(inner.grant.access),
        inner.grant.guest,
        outer.grant.host.display(),
        outer.host.display(),
        access_name(outer.grant.access),
        outer.grant.guest,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nesting_is_component_wise() {
        assert!(guest_within("/site/secret", "/site"));
        assert!(guest_within("/site", "/site"));
        assert!(guest_within("/site", "/"));
        assert!(!guest_within("/site-secret", "/site"));
    }
}

//! Explains a failed plugin call whose message is a file-system error: a plugin sees only the
//! directories granted to it, so "No such file or directory" for a path outside them means a
//! missing grant, and "Permission denied" inside a read-only one means a read-only grant.

use crate::access::advice::GrantAdvice;
use crate::access::grants::{Access, DirGrant};
use crate::access::missing::{DirRequest, Missing};

/// How wasi-libc words the errors a missing or read-only grant causes.
const FS_ERRORS: [&str; 6] = [
    "No such file or directory",
    "Permission denied",
    "Read-only file system",
    "Operation not permitted",
    "Capabilities insufficient",
    "Bad file descriptor",
];

/// The advice for plugin `plugin` granted `dirs`, if `message` is a file-system error that a
/// grant explains; `None` when the paths it names are inside a writable granted directory.
pub(crate) fn advise(
    plugin: &str,
    dirs: &[DirGrant],
    message: &str,
    advice: &dyn GrantAdvice,
) -> Option<String> {
    if !FS_ERRORS.iter().any(|e| message.contains(e)) {
        return None;
    }
    let paths = absolute_paths(message);
    let outside: Vec<&str> = paths
        .iter()
        .copied()
        .filter(|p| granted_at(dirs, p).is_none())
        .collect();
    let read_only: Vec<&DirGrant> = paths
        .iter()
        .filter_map(|p| granted_at(dirs, p))
        .filter(|d| d.access == Access::ReadOnly)
        .collect();
    if let Some(dir) = read_only.first().filter(|_| outside.is_empty()) {
        let write = Missing::DirWrite(DirRequest {
            guest: dir.guest.clone(),
            access: Access::ReadWrite,
            why: String::new(),
        });
        return Some(format!(
            "plugin `{plugin}` is granted {} read-only; to let it write there, {}",
            dir.guest,
            advice.to_allow(plugin, &write)
        ));
    }
    if !paths.is_empty() && outside.is_empty() {
        return None;
    }
    let granted = if dirs.is_empty() {
        "no directories".to_owned()
    } else {
        let list: Vec<String> = dirs
            .iter()
            .map(|d| format!("{} ({})", d.guest, access(d.access)))
            .collect();
        format!("only {}", list.join(", "))
    };
    let subject = match outside.as_slice() {
        [] => "a path outside them".to_owned(),
        some => format!("{} is outside them", some.join(", ")),
    };
    let grant = Missing::Dir(DirRequest {
        guest: "/DIR".into(),
        access: Access::ReadWrite,
        why: String::new(),
    });
    Some(format!(
        "plugin `{plugin}` is granted {granted}, and {subject}, so it does not exist for the \
         plugin; to grant a directory, {}",
        advice.to_allow(plugin, &grant)
    ))
}

fn access(access: Access) -> &'static str {
    match access {
        Access::ReadOnly => "read-only",
        Access::ReadWrite => "read-write",
    }
}

/// The granted directory `path` lies in.
fn granted_at<'a>(dirs: &'a [DirGrant], path: &str) -> Option<&'a DirGrant> {
    dirs.iter().find(|d| {
        let guest = d.guest.trim_end_matches('/');
        path == guest || path.starts_with(&format!("{guest}/")) || guest.is_empty()
    })
}

/// The absolute paths `message` names: words starting with `/`, without quotes or trailing
/// punctuation.
fn absolute_paths(message: &str) -> Vec<&str> {
    message
        .split(|c: char| c.is_whitespace() || matches!(c, '`' | '"' | '\'' | '(' | ')'))
        .map(|w| w.trim_end_matches([':', ',', ';', '.']))
        .filter(|w| w.starts_with('/') && w.len() > 1)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::advice::PlainAdvice;

    fn dir(guest: &str, access: Access) -> DirGrant {
        DirGrant {
            host: "/srv/x".into(),
            guest: guest.into(),
            access,
        }
    }

    #[test]
    fn a_path_outside_every_grant_names_the_grants_and_how_to_add_one() {
        let dirs = [dir("/data", Access::ReadWrite)];
        let message = "writing /etc/kv/a.json: No such file or directory (os error 44)";
        let advice = advise("kv", &dirs, message, &PlainAdvice).unwrap();
        assert!(
            advice.contains("granted only /data (read-write)"),
            "{advice}"
        );
        assert!(
            advice.contains("/etc/kv/a.json is outside them"),
            "{advice}"
        );
        assert!(
            advice.contains("grant plugin `kv` read-write access to the directory /DIR"),
            "{advice}"
        );
        let none = advise("kv", &[], message, &PlainAdvice).unwrap();
        assert!(none.contains("granted no directories"), "{none}");
    }

    #[test]
    fn a_read_only_grant_is_named_and_a_writable_one_explains_nothing() {
        let message = "writing /data/a.json: Permission denied (os error 2)";
        let advice = advise(
            "kv",
            &[dir("/data", Access::ReadOnly)],
            message,
            &PlainAdvice,
        )
        .unwrap();
        assert!(advice.contains("/data read-only"), "{advice}");
        assert!(
            advice.contains("grant plugin `kv` write access to the directory /data"),
            "{advice}"
        );
        let missing = "reading /data/a.json: No such file or directory (os error 44)";
        assert_eq!(
            advise(
                "kv",
                &[dir("/data", Access::ReadWrite)],
                missing,
                &PlainAdvice
            ),
            None
        );
        assert_eq!(advise("kv", &[], "the key is empty", &PlainAdvice), None);
    }
}

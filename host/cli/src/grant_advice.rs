//! How to grant a plugin what it lacks, worded as the lines of `Plinth.yaml` to add: the runtime
//! says what is missing or was refused, this module says where it is written.

use std::fmt::Write as _;

use plinth_runtime::{Access, DirRequest, GrantAdvice, Grants, Missing};

/// Advice in terms of a plugin's `grants:` in `Plinth.yaml`.
pub struct PlinthYamlAdvice;

impl GrantAdvice for PlinthYamlAdvice {
    fn to_load(&self, plugin: &str, missing: &[Missing], granted: &Grants) -> String {
        yaml_hint(plugin, missing, granted)
    }

    fn to_allow(&self, plugin: &str, needed: &Missing) -> String {
        let grant = match needed {
            Missing::Dir(dir) => format!(
                "`dirs: [{{host: {}, guest: {}, access: {}}}]`",
                suggested_host_dir(&dir.guest),
                dir.guest,
                access_name(dir.access)
            ),
            Missing::DirWrite(dir) => {
                return format!(
                    "set `access: read-write` on the directory granted at {} under \
                     `plugins.{plugin}.grants.dirs` in Plinth.yaml",
                    dir.guest
                );
            }
            Missing::Lookup(name) => {
                format!("`tcp: [\"{name}:<port>\"]` (or `udp: [\"{name}:<port>\"]`)")
            }
            Missing::Env(name) => format!("`env: [{name}]`"),
            other => {
                let (key, item) = list_entry(other).expect("a list grant");
                format!("`{key}: [\"{item}\"]`")
            }
        };
        format!("add {grant} under `plugins.{plugin}.grants` in Plinth.yaml")
    }
}

fn access_name(access: Access) -> &'static str {
    match access {
        Access::ReadOnly => "read-only",
        Access::ReadWrite => "read-write",
    }
}

/// How to grant what is `missing` to `plugin`, which has `grants`: the lines to add under its
/// `grants:` in `Plinth.yaml` (indented as they sit there), and the accesses to raise on
/// directories it is granted already.
fn yaml_hint(plugin: &str, missing: &[Missing], grants: &Grants) -> String {
    /// `grants:` sits at this indent under `plugins: <name>:`; its keys one level deeper.
    const KEY: &str = "      ";
    const ITEM: &str = "        ";
    let mut lines = String::new();
    // The lists the lines add to that the plugin's `grants:` has already.
    let mut existing = Vec::new();
    let new_dirs: Vec<&DirRequest> = missing
        .iter()
        .filter_map(|m| match m {
            Missing::Dir(dir) => Some(dir),
            _ => None,
        })
        .collect();
    if !new_dirs.is_empty() {
        if !grants.dirs.is_empty() {
            existing.push("dirs");
        }
        let _ = writeln!(lines, "{KEY}dirs:");
        for dir in new_dirs {
            let access = access_name(dir.access);
            let _ = writeln!(
                lines,
                "{ITEM}- host: {}   # the project's directory the plugin sees at {}",
                suggested_host_dir(&dir.guest),
                dir.guest
            );
            let _ = writeln!(lines, "{ITEM}  guest: {}", dir.guest);
            let _ = writeln!(lines, "{ITEM}  access: {access}");
        }
    }
    for key in [
        "env",
        "tcp",
        "tcp-listen",
        "udp",
        "udp-listen",
        "http",
        "tls-insecure",
    ] {
        let items: Vec<&String> = missing
            .iter()
            .filter_map(list_entry)
            .filter(|(k, _)| *k == key)
            .map(|(_, item)| item)
            .collect();
        if !items.is_empty() {
            let granted = match key {
                "env" => grants.env.len(),
                "tcp" => grants.tcp.len(),
                "tcp-listen" => grants.tcp_listen.len(),
                "udp" => grants.udp.len(),
                "udp-listen" => grants.udp_listen.len(),
                "tls-insecure" => grants.tls_insecure.len(),
                _ => grants.http.len(),
            };
            if granted > 0 {
                existing.push(key);
            }
            let _ = writeln!(lines, "{KEY}{key}:");
            for item in items {
                let _ = writeln!(lines, "{ITEM}- {}", yaml_scalar(item));
            }
        }
    }

    let mut hint = String::new();
    if !lines.is_empty() {
        let them = if missing.len() == 1 { "it" } else { "them" };
        let _ = write!(
            hint,
            "To grant {them}, add these lines under `plugins: {plugin}: grants:` in Plinth.yaml"
        );
        if !existing.is_empty() {
            let _ = write!(
                hint,
                " (it has `{}:` already: add the items to the list there)",
                existing.join(":`, `")
            );
        }
        let _ = write!(hint, ":\n{lines}");
    }
    for m in missing {
        if let Missing::DirWrite(dir) = m {
            let _ = writeln!(
                hint,
                "Set `access: read-write` on the directory granted to `{plugin}` at guest path {}.",
                dir.guest
            );
        }
    }
    hint.trim_end().to_owned()
}

/// The `grants:` list and item that grant a missing variable or network pattern.
fn list_entry(missing: &Missing) -> Option<(&'static str, &String)> {
    match missing {
        Missing::Env(name) => Some(("env", name)),
        Missing::Tcp(pattern) => Some(("tcp", pattern)),
        Missing::Udp(pattern) => Some(("udp", pattern)),
        Missing::TcpListen(pattern) => Some(("tcp-listen", pattern)),
        Missing::UdpListen(pattern) => Some(("udp-listen", pattern)),
        Missing::Http(pattern) => Some(("http", pattern)),
        Missing::TlsInsecure(pattern) => Some(("tls-insecure", pattern)),
        Missing::Dir(_) | Missing::DirWrite(_) | Missing::Lookup(_) => None,
    }
}

/// A project directory to offer for the guest path `guest`: `./` and its last segment.
fn suggested_host_dir(guest: &str) -> String {
    let name = guest.rsplit('/').find(|s| !s.is_empty()).unwrap_or("data");
    yaml_scalar(&format!("./{name}"))
}

/// `text` as a YAML scalar: plain when that reads back as the same string, double-quoted
/// otherwise (patterns may start with `*` or `[`, which YAML reads as an alias or a list).
fn yaml_scalar(text: &str) -> String {
    let plain = text
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "._-/:".contains(c))
        && text.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '.' || c == '/')
        && !text.ends_with(':')
        // What YAML would read as a number, a boolean or null.
        && text.parse::<f64>().is_err()
        && !["true", "false", "yes", "no", "on", "off", "null"]
            .contains(&text.to_ascii_lowercase().as_str());
    if plain {
        text.to_owned()
    } else {
        format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use plinth_runtime::DirGrant;

    use super::*;

    fn dir(guest: &str, access: Access) -> DirRequest {
        DirRequest {
            guest: guest.into(),
            access,
            why: format!("{guest} things"),
        }
    }

    #[test]
    fn the_lines_to_add_extend_the_lists_the_plugin_has() {
        let missing = [
            Missing::Dir(dir("/notes", Access::ReadWrite)),
            Missing::Dir(dir("/cache", Access::ReadOnly)),
            Missing::DirWrite(dir("/data", Access::ReadWrite)),
            Missing::Env("TOKEN".into()),
            Missing::Tcp("*.db.internal:5432".into()),
            Missing::Udp("[::1]:53".into()),
            Missing::Http("api.example.com".into()),
        ];
        let granted = Grants {
            dirs: vec![DirGrant {
                host: PathBuf::from("./data"),
                guest: "/data".into(),
                access: Access::ReadOnly,
            }],
            ..Grants::default()
        };
        assert_eq!(
            PlinthYamlAdvice.to_load("notes", &missing, &granted),
            "To grant them, add these lines under `plugins: notes: grants:` in Plinth.yaml (it has `dirs:` already: add the items to the list there):
      dirs:
        - host: ./notes   # the project's directory the plugin sees at /notes
          guest: /notes
          access: read-write
        - host: ./cache   # the project's directory the plugin sees at /cache
          guest: /cache
          access: read-only
      env:
        - TOKEN
      tcp:
        - \"*.db.internal:5432\"
      udp:
        - \"[::1]:53\"
      http:
        - api.example.com
Set `access: read-write` on the directory granted to `notes` at guest path /data."
        );
    }

    #[test]
    fn a_refused_attempt_names_the_line_to_add() {
        let allow = |needed: Missing| PlinthYamlAdvice.to_allow("reach", &needed);
        assert_eq!(
            allow(Missing::Tcp("10.1.2.3:80".into())),
            "add `tcp: [\"10.1.2.3:80\"]` under `plugins.reach.grants` in Plinth.yaml"
        );
        assert_eq!(
            allow(Missing::Env("PATH".into())),
            "add `env: [PATH]` under `plugins.reach.grants` in Plinth.yaml"
        );
        assert!(allow(Missing::Lookup("db".into())).contains("`udp: [\"db:<port>\"]`"));
        let dir = DirRequest {
            guest: "/DIR".into(),
            access: Access::ReadWrite,
            why: String::new(),
        };
        assert_eq!(
            allow(Missing::Dir(dir.clone())),
            "add `dirs: [{host: ./DIR, guest: /DIR, access: read-write}]` under \
             `plugins.reach.grants` in Plinth.yaml"
        );
        assert!(allow(Missing::DirWrite(dir)).contains("set `access: read-write`"));
    }

    #[test]
    fn yaml_scalars_read_back_as_the_same_strings() {
        assert_eq!(yaml_scalar("db.internal:5432"), "db.internal:5432");
        assert_eq!(yaml_scalar("./data"), "./data");
        for quoted in [
            "*",
            "*.example.com",
            "[::1]:53",
            "8080",
            "yes",
            "a b",
            "-x",
            "a\"b",
        ] {
            let scalar = yaml_scalar(quoted);
            assert!(scalar.starts_with('"'), "{quoted} -> {scalar}");
        }
        assert_eq!(yaml_scalar("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(suggested_host_dir("/var/lib/app/"), "./app");
        assert_eq!(suggested_host_dir("/"), "./data");
    }
}

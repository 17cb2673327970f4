//! What a plugin asks for, and the check that the project grants all of it before the plugin
//! loads. A refusal names every capability missing, followed by the embedder's advice on how to
//! grant it. Grants the plugin did not ask for are allowed: the project may know better.

use std::fmt::Write as _;

use plinth_engine::schema::PropertySchema;
use plinth_engine::value::PropertyMap;

use crate::access::advice::GrantAdvice;
use crate::access::configured;
use crate::access::endpoint::{
    AuthorityPattern, EndpointPattern, HostPattern, PatternError, PortPattern,
};
use crate::access::grants::{Access, Grants};
use crate::access::missing::{DirRequest, Missing};

/// What a plugin asks to be granted beyond the bare sandbox, as its `info` declares it. A plugin
/// built against `plinth:plugin@0.1.0` asks for nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Capabilities {
    /// Directories, by the path the plugin sees them at.
    pub dirs: Vec<DirRequest>,
    /// Names of environment variables the plugin reads.
    pub env: Vec<String>,
    /// `host:port` patterns of the TCP connections the plugin opens.
    pub tcp: Vec<String>,
    /// `host:port` patterns of the UDP peers the plugin talks to.
    pub udp: Vec<String>,
    /// Authorities (`host` or `host:port`) of the outbound HTTP requests the plugin sends.
    pub http: Vec<String>,
}

impl Capabilities {
    /// Whether the plugin asks for nothing.
    pub fn is_empty(&self) -> bool {
        self.dirs.is_empty()
            && self.env.is_empty()
            && self.tcp.is_empty()
            && self.udp.is_empty()
            && self.http.is_empty()
    }
}

/// Why a plugin's capabilities stop it from loading.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CapabilityError {
    /// The plugin declares a capability that means nothing: a relative directory, a malformed
    /// network pattern, an empty variable name.
    #[error(
        "plugin `{plugin}` declares a malformed capability: {reason}; the plugin is broken, \
         report it to its authors"
    )]
    Malformed { plugin: String, reason: String },
    /// A network pattern that follows configuration (`{host}:{port}`) cannot be resolved from
    /// the configuration the provider is given.
    #[error(
        "plugin `{plugin}` needs the endpoint `{pattern}` its configuration names, and {reason}"
    )]
    Unresolved {
        plugin: String,
        pattern: String,
        reason: String,
    },
    /// The project does not grant everything the plugin asks for.
    #[error("{}", describe_refusal(plugin, missing, hint))]
    NotGranted {
        plugin: String,
        /// What is missing, in the order the plugin asked for it.
        missing: Vec<Missing>,
        /// How to grant it, in the embedder's words.
        hint: String,
    },
}

/// Checks that `grants` cover every capability the plugin `plugin` asks for, but for the network
/// patterns that follow its configuration (`config` is its configuration schema): those must
/// refer to settings, and are checked by [`check_configured`] once they are known.
pub(crate) fn check(
    plugin: &str,
    asked: &Capabilities,
    config: &[PropertySchema],
    grants: &Grants,
    advice: &dyn GrantAdvice,
) -> Result<(), CapabilityError> {
    let malformed = |reason: String| CapabilityError::Malformed {
        plugin: plugin.to_owned(),
        reason,
    };
    let pattern_error = |e: PatternError| malformed(e.to_string());
    let mut missing = Vec::new();

    for dir in &asked.dirs {
        if !dir.guest.starts_with('/') {
            return Err(malformed(format!(
                "the directory `{}` is not an absolute path",
                dir.guest
            )));
        }
        match grants.dirs.iter().find(|g| same_dir(&g.guest, &dir.guest)) {
            None => missing.push(Missing::Dir(dir.clone())),
            Some(g) if g.access == Access::ReadOnly && dir.access == Access::ReadWrite => {
                missing.push(Missing::DirWrite(dir.clone()));
            }
            Some(_) => {}
        }
    }
    for name in &asked.env {
        if name.is_empty() || name.contains('=') || name.contains('\0') {
            return Err(malformed(format!(
                "`{name}` is not an environment variable name"
            )));
        }
        if !grants.env.contains(name) {
            missing.push(Missing::Env(name.clone()));
        }
    }
    for (asked, granted, missing_kind) in [
        (
            &asked.tcp,
            &grants.tcp,
            Missing::Tcp as fn(String) -> Missing,
        ),
        (&asked.udp, &grants.udp, Missing::Udp),
    ] {
        for pattern in asked {
            if configured::is_configured(pattern) {
                configured::validate(pattern, config).map_err(malformed)?;
                continue;
            }
            let wanted: EndpointPattern = pattern.parse().map_err(pattern_error)?;
            if !granted.iter().any(|g| endpoint_covers(g, &wanted)) {
                missing.push(missing_kind(pattern.clone()));
            }
        }
    }
    for pattern in &asked.http {
        if configured::is_configured(pattern) {
            configured::validate(pattern, config).map_err(malformed)?;
            continue;
        }
        let wanted: AuthorityPattern = pattern.parse().map_err(pattern_error)?;
        if !grants.http.iter().any(|g| authority_covers(g, &wanted)) {
            missing.push(Missing::Http(pattern.clone()));
        }
    }

    log_unasked(plugin, asked, grants);
    if missing.is_empty() {
        Ok(())
    } else {
        Err(CapabilityError::NotGranted {
            plugin: plugin.to_owned(),
            hint: advice.to_load(plugin, &missing, grants),
            missing,
        })
    }
}

/// Checks, when the plugin `plugin` is configured with `config`, that `grants` cover the network
/// patterns that follow its configuration (`schema` gives the settings' defaults), resolved to
/// the endpoints the configuration names. Values not known yet (a preview) are checked later.
pub(crate) fn check_configured(
    plugin: &str,
    asked: &Capabilities,
    config: &PropertyMap,
    schema: &[PropertySchema],
    grants: &Grants,
    advice: &dyn GrantAdvice,
) -> Result<(), CapabilityError> {
    let mut missing = Vec::new();
    let resolve = |pattern: &String| -> Result<Option<String>, CapabilityError> {
        let unresolved = |reason: String| CapabilityError::Unresolved {
            plugin: plugin.to_owned(),
            pattern: pattern.clone(),
            reason,
        };
        configured::resolve(pattern, config, schema).map_err(unresolved)
    };
    let not_an_endpoint =
        |pattern: &String, resolved: &str, e: PatternError| CapabilityError::Unresolved {
            plugin: plugin.to_owned(),
            pattern: pattern.clone(),
            reason: format!("the configuration makes it `{resolved}`, which is not one: {e}"),
        };
    for (asked, granted, missing_kind) in [
        (
            &asked.tcp,
            &grants.tcp,
            Missing::Tcp as fn(String) -> Missing,
        ),
        (&asked.udp, &grants.udp, Missing::Udp),
    ] {
        for pattern in asked.iter().filter(|p| configured::is_configured(p)) {
            let Some(resolved) = resolve(pattern)? else {
                continue;
            };
            let wanted: EndpointPattern =
                (resolved.parse()).map_err(|e| not_an_endpoint(pattern, &resolved, e))?;
            if !granted.iter().any(|g| endpoint_covers(g, &wanted)) {
                missing.push(missing_kind(wanted.to_string()));
            }
        }
    }
    for pattern in asked.http.iter().filter(|p| configured::is_configured(p)) {
        let Some(resolved) = resolve(pattern)? else {
            continue;
        };
        let wanted: AuthorityPattern =
            (resolved.parse()).map_err(|e| not_an_endpoint(pattern, &resolved, e))?;
        if !grants.http.iter().any(|g| authority_covers(g, &wanted)) {
            missing.push(Missing::Http(wanted.to_string()));
        }
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(CapabilityError::NotGranted {
            plugin: plugin.to_owned(),
            hint: advice.to_load(plugin, &missing, grants),
            missing,
        })
    }
}

/// Guest paths name the same directory, a trailing `/` aside.
fn same_dir(a: &str, b: &str) -> bool {
    let trim = |p: &str| p.trim_end_matches('/').to_owned();
    trim(a) == trim(b)
}

/// Whether every host `asked` may match is one `granted` matches.
fn host_covers(granted: &HostPattern, asked: &HostPattern) -> bool {
    match (granted, asked) {
        (HostPattern::Any, _) => true,
        (HostPattern::Ip(g), HostPattern::Ip(a)) => g.to_canonical() == a.to_canonical(),
        (HostPattern::Name(g), HostPattern::Name(a)) => g == a,
        // `*.example.com` covers `a.example.com` and `*.a.example.com`, not `example.com`.
        (HostPattern::Subdomains(_), HostPattern::Name(a) | HostPattern::Subdomains(a)) => {
            granted == asked || granted.matches_name(a)
        }
        _ => false,
    }
}

fn port_covers(granted: PortPattern, asked: PortPattern) -> bool {
    granted == PortPattern::Any || granted == asked
}

impl EndpointPattern {
    /// Whether every endpoint `asked` may match is one this pattern matches: the rule a grant
    /// is checked by, and the one that tells a narrower capability from a wider one.
    pub fn covers(&self, asked: &EndpointPattern) -> bool {
        endpoint_covers(self, asked)
    }
}

impl AuthorityPattern {
    /// Whether every authority `asked` may match is one this pattern matches.
    pub fn covers(&self, asked: &AuthorityPattern) -> bool {
        authority_covers(self, asked)
    }
}

fn endpoint_covers(granted: &EndpointPattern, asked: &EndpointPattern) -> bool {
    host_covers(&granted.host, &asked.host) && port_covers(granted.port, asked.port)
}

fn authority_covers(granted: &AuthorityPattern, asked: &AuthorityPattern) -> bool {
    let ports = match (granted.port, asked.port) {
        (Some(PortPattern::Any), _) | (None, None) => true,
        (Some(g), Some(a)) => port_covers(g, a),
        // Without a port, the request's scheme decides it: only a grant of the same covers it.
        _ => false,
    };
    ports && host_covers(&granted.host, &asked.host)
}

/// Logs the grants the plugin did not ask for: allowed, but worth knowing when debugging.
fn log_unasked(plugin: &str, asked: &Capabilities, grants: &Grants) {
    for dir in &grants.dirs {
        if !asked.dirs.iter().any(|d| same_dir(&d.guest, &dir.guest)) {
            tracing::debug!(
                target: "plinth::runtime",
                plugin,
                "the directory granted at {} is one the plugin did not ask for",
                dir.guest
            );
        }
    }
    for name in grants.env.iter().filter(|n| !asked.env.contains(n)) {
        tracing::debug!(
            target: "plinth::runtime",
            plugin,
            "the environment variable {name} is granted, but the plugin did not ask for it"
        );
    }
    let unasked = |kind: &str, granted: Vec<String>, asked: &[String]| {
        for pattern in granted.iter().filter(|g| !asked.contains(g)) {
            tracing::debug!(
                target: "plinth::runtime",
                plugin,
                "the {kind} grant {pattern} is not one the plugin asked for as such"
            );
        }
    };
    let strings = |patterns: &[EndpointPattern]| patterns.iter().map(|p| p.to_string()).collect();
    unasked("tcp", strings(&grants.tcp), &asked.tcp);
    unasked("udp", strings(&grants.udp), &asked.udp);
    let http = grants.http.iter().map(|p| p.to_string()).collect();
    unasked("http", http, &asked.http);
}

/// The message of [`CapabilityError::NotGranted`]: what is missing, then how to grant it.
fn describe_refusal(plugin: &str, missing: &[Missing], hint: &str) -> String {
    let mut text = format!("plugin `{plugin}` asks for capabilities it is not granted:");
    for m in missing {
        let _ = write!(text, "\n  - {m}");
    }
    text.push('\n');
    text.push_str(hint);
    text
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::access::advice::PlainAdvice;
    use crate::access::grants::DirGrant;

    fn dir(guest: &str, access: Access) -> DirRequest {
        DirRequest {
            guest: guest.into(),
            access,
            why: format!("{guest} things"),
        }
    }

    fn granted_dir(guest: &str, access: Access) -> DirGrant {
        DirGrant {
            host: PathBuf::from(format!(".{guest}")),
            guest: guest.into(),
            access,
        }
    }

    fn grants(dirs: Vec<DirGrant>, env: &[&str], tcp: &[&str], http: &[&str]) -> Grants {
        Grants {
            dirs,
            env: env.iter().map(|s| s.to_string()).collect(),
            tcp: tcp.iter().map(|p| p.parse().unwrap()).collect(),
            http: http.iter().map(|p| p.parse().unwrap()).collect(),
            ..Grants::default()
        }
    }

    fn missing(asked: &Capabilities, grants: &Grants) -> Vec<Missing> {
        match check("demo", asked, &[], grants, &PlainAdvice) {
            Ok(()) => Vec::new(),
            Err(CapabilityError::NotGranted {
                plugin, missing, ..
            }) => {
                assert_eq!(plugin, "demo");
                missing
            }
            Err(other) => panic!("unexpected {other}"),
        }
    }

    #[test]
    fn asking_for_nothing_needs_nothing_and_extra_grants_are_allowed() {
        let none = Capabilities::default();
        assert!(none.is_empty());
        assert!(missing(&none, &Grants::default()).is_empty());
        let generous = grants(
            vec![granted_dir("/data", Access::ReadWrite)],
            &["HOME"],
            &["*:*"],
            &["*"],
        );
        assert!(missing(&none, &generous).is_empty());
    }

    #[test]
    fn a_directory_needs_the_same_guest_path_and_at_least_the_access() {
        let reads = Capabilities {
            dirs: vec![dir("/data", Access::ReadOnly)],
            ..Capabilities::default()
        };
        let writes = Capabilities {
            dirs: vec![dir("/data", Access::ReadWrite)],
            ..Capabilities::default()
        };
        let read_only = grants(vec![granted_dir("/data", Access::ReadOnly)], &[], &[], &[]);
        let read_write = grants(
            vec![granted_dir("/data/", Access::ReadWrite)],
            &[],
            &[],
            &[],
        );
        let elsewhere = grants(
            vec![granted_dir("/other", Access::ReadWrite)],
            &[],
            &[],
            &[],
        );

        assert!(missing(&reads, &read_only).is_empty());
        assert!(missing(&reads, &read_write).is_empty());
        assert!(missing(&writes, &read_write).is_empty());
        assert_eq!(
            missing(&writes, &read_only),
            [Missing::DirWrite(dir("/data", Access::ReadWrite))]
        );
        assert_eq!(
            missing(&reads, &elsewhere),
            [Missing::Dir(dir("/data", Access::ReadOnly))]
        );
    }

    #[test]
    fn variables_must_be_granted_by_name() {
        let asked = Capabilities {
            env: vec!["TOKEN".into(), "REGION".into()],
            ..Capabilities::default()
        };
        let some = grants(vec![], &["REGION", "OTHER"], &[], &[]);
        assert_eq!(missing(&asked, &some), [Missing::Env("TOKEN".into())]);
    }

    #[test]
    fn patterns_that_follow_configuration_are_checked_once_configured() {
        use plinth_engine::schema::PropertyType;
        use plinth_engine::value::Value;

        let mut port = PropertySchema::new("port", PropertyType::Integer);
        port.default = Some(Value::Integer(5432));
        let schema = vec![PropertySchema::new("host", PropertyType::String), port];
        let asked = Capabilities {
            tcp: vec!["{host}:{port}".into()],
            ..Capabilities::default()
        };
        // At load, nothing is known: only the form is checked.
        assert!(check("pg", &asked, &schema, &Grants::default(), &PlainAdvice).is_ok());
        let typo = Capabilities {
            tcp: vec!["{hots}:{port}".into()],
            ..Capabilities::default()
        };
        let err = check("pg", &typo, &schema, &Grants::default(), &PlainAdvice).unwrap_err();
        assert!(matches!(err, CapabilityError::Malformed { .. }), "{err}");

        let config: PropertyMap = [("host".to_owned(), Value::from("db.internal"))].into();
        let exact = grants(vec![], &[], &["db.internal:5432"], &[]);
        assert!(check_configured("pg", &asked, &config, &schema, &exact, &PlainAdvice).is_ok());
        let other_port = grants(vec![], &[], &["db.internal:5433"], &[]);
        let err = check_configured("pg", &asked, &config, &schema, &other_port, &PlainAdvice)
            .unwrap_err();
        let CapabilityError::NotGranted { missing, .. } = err else {
            panic!("expected a refusal, got {err}");
        };
        assert_eq!(missing, [Missing::Tcp("db.internal:5432".into())]);
        let unset = PropertyMap::new();
        let err = check_configured("pg", &asked, &unset, &schema, &exact, &PlainAdvice)
            .unwrap_err()
            .to_string();
        assert!(err.contains("`host` is not set"), "{err}");
    }

    #[test]
    fn network_patterns_must_be_covered_by_a_granted_pattern() {
        let asked = |tcp: &[&str], http: &[&str]| Capabilities {
            tcp: tcp.iter().map(|s| s.to_string()).collect(),
            http: http.iter().map(|s| s.to_string()).collect(),
            ..Capabilities::default()
        };
        let granted = grants(
            vec![],
            &[],
            &["db.internal:5432", "*.example.com:443", "10.0.0.5:*"],
            &["api.example.com", "*.cdn.net:*"],
        );
        let covered = asked(
            &[
                "db.internal:5432",
                "DB.internal.:5432",
                "a.example.com:443",
                "*.b.example.com:443",
                "10.0.0.5:22",
            ],
            &[
                "api.example.com",
                "x.cdn.net",
                "x.cdn.net:8443",
                "*.y.cdn.net:1",
            ],
        );
        assert_eq!(missing(&covered, &granted), []);

        let uncovered = asked(
            &[
                "db.internal:5433",
                "example.com:443",
                "*.example.com:*",
                "10.0.0.6:22",
                "*:443",
            ],
            &["api.example.com:8443", "cdn.net"],
        );
        assert_eq!(
            missing(&uncovered, &granted),
            [
                Missing::Tcp("db.internal:5433".into()),
                Missing::Tcp("example.com:443".into()),
                Missing::Tcp("*.example.com:*".into()),
                Missing::Tcp("10.0.0.6:22".into()),
                Missing::Tcp("*:443".into()),
                Missing::Http("api.example.com:8443".into()),
                Missing::Http("cdn.net".into()),
            ]
        );
    }

    #[test]
    fn malformed_requests_are_the_plugin_s_fault() {
        let cases = [
            Capabilities {
                dirs: vec![dir("data", Access::ReadOnly)],
                ..Capabilities::default()
            },
            Capabilities {
                env: vec!["A=B".into()],
                ..Capabilities::default()
            },
            Capabilities {
                udp: vec!["no-port".into()],
                ..Capabilities::default()
            },
            Capabilities {
                http: vec!["https://example.com".into()],
                ..Capabilities::default()
            },
        ];
        for asked in cases {
            let error = check("demo", &asked, &[], &Grants::default(), &PlainAdvice).unwrap_err();
            assert!(
                matches!(&error, CapabilityError::Malformed { plugin, .. } if plugin == "demo"),
                "{error}"
            );
            assert!(error.to_string().contains("plugin `demo`"), "{error}");
        }
    }

    #[test]
    fn the_refusal_lists_what_is_missing_and_the_lines_to_add() {
        let asked = Capabilities {
            dirs: vec![
                dir("/notes", Access::ReadWrite),
                dir("/cache", Access::ReadOnly),
                dir("/data", Access::ReadWrite),
            ],
            env: vec!["TOKEN".into()],
            tcp: vec!["*.db.internal:5432".into()],
            udp: vec!["[::1]:53".into()],
            http: vec!["api.example.com".into()],
        };
        let granted = grants(vec![granted_dir("/data", Access::ReadOnly)], &[], &[], &[]);
        let error = check("notes", &asked, &[], &granted, &PlainAdvice).unwrap_err();
        assert_eq!(
            error.to_string(),
            "plugin `notes` asks for capabilities it is not granted:
  - read-write access to the directory /notes (/notes things)
  - read-only access to the directory /cache (/cache things)
  - write access to the directory /data, granted read-only (/data things)
  - the environment variable TOKEN
  - TCP connections to *.db.internal:5432
  - UDP datagrams with [::1]:53
  - HTTP requests to api.example.com
Grant them to plugin `notes` to load it."
        );
    }
}

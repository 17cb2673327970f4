//! The patterns network grants are written in: `host:port` endpoints for TCP and UDP, and
//! `host[:port]` authorities for outbound HTTP. A host is an IP address, a name, `*.` and a
//! domain (any name below it), or `*` (any host); a port is a number or `*` (any port).

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

/// Why a grant pattern could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{pattern}` is not a valid {kind}: {reason}")]
pub struct PatternError {
    pub pattern: String,
    pub kind: &'static str,
    pub reason: String,
}

/// Which hosts a grant covers.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum HostPattern {
    /// Every host.
    Any,
    /// One address; it matches that address only, never a name.
    Ip(IpAddr),
    /// One name, lower-case, without a trailing dot.
    Name(String),
    /// Every name below this domain (`*.example.com` → `example.com`), not the domain itself.
    Subdomains(String),
}

/// Which ports a grant covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PortPattern {
    Any,
    Port(u16),
}

/// A TCP or UDP grant: `127.0.0.1:8080`, `db.internal:5432`, `*.example.com:443`, `10.0.0.5:*`,
/// `[::1]:53`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct EndpointPattern {
    pub host: HostPattern,
    pub port: PortPattern,
}

/// An outbound HTTP grant: `api.example.com`, `*.example.com`, `127.0.0.1:8080`. Without a
/// port it covers the scheme's default port only (80 for http, 443 for https).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AuthorityPattern {
    pub host: HostPattern,
    pub port: Option<PortPattern>,
}

impl HostPattern {
    /// Parses the host part of `pattern` (for error messages) of kind `kind`.
    fn parse(host: &str, pattern: &str, kind: &'static str) -> Result<HostPattern, PatternError> {
        let error = |reason: String| PatternError {
            pattern: pattern.to_owned(),
            kind,
            reason,
        };
        if host == "*" {
            return Ok(HostPattern::Any);
        }
        if let Some(inner) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
            return inner
                .parse::<std::net::Ipv6Addr>()
                .map(|ip| HostPattern::Ip(IpAddr::V6(ip)))
                .map_err(|_| error(format!("`{inner}` is not an IPv6 address")));
        }
        if let Ok(ip) = host.parse::<IpAddr>() {
            return Ok(HostPattern::Ip(ip));
        }
        if let Some(domain) = host.strip_prefix("*.") {
            return check_name(domain)
                .map(HostPattern::Subdomains)
                .map_err(error);
        }
        if host.contains('*') {
            return Err(error(
                "a wildcard host is `*` or `*.` followed by a domain, as in `*.example.com`"
                    .to_owned(),
            ));
        }
        check_name(host).map(HostPattern::Name).map_err(error)
    }

    /// Whether the host name `name` (as a guest wrote it) is covered. An IP pattern covers no
    /// name: addresses are checked as addresses.
    pub fn matches_name(&self, name: &str) -> bool {
        let name = normalize_name(name);
        match self {
            HostPattern::Any => true,
            HostPattern::Ip(_) => false,
            HostPattern::Name(granted) => *granted == name,
            HostPattern::Subdomains(domain) => name
                .strip_suffix(domain.as_str())
                .is_some_and(|prefix| prefix.len() > 1 && prefix.ends_with('.')),
        }
    }

    /// Whether the address `ip` is covered by an address pattern (or `*`).
    pub fn matches_ip(&self, ip: IpAddr) -> bool {
        match self {
            HostPattern::Any => true,
            HostPattern::Ip(granted) => granted.to_canonical() == ip.to_canonical(),
            HostPattern::Name(_) | HostPattern::Subdomains(_) => false,
        }
    }

    /// Whether the pattern names hosts (rather than addresses): such grants need name lookups.
    pub fn is_name(&self) -> bool {
        matches!(self, HostPattern::Name(_) | HostPattern::Subdomains(_))
    }
}

impl PortPattern {
    fn parse(port: &str, pattern: &str, kind: &'static str) -> Result<PortPattern, PatternError> {
        if port == "*" {
            return Ok(PortPattern::Any);
        }
        match port.parse::<u16>() {
            Ok(0) | Err(_) => Err(PatternError {
                pattern: pattern.to_owned(),
                kind,
                reason: format!("the port `{port}` is not a number from 1 to 65535 or `*`"),
            }),
            Ok(port) => Ok(PortPattern::Port(port)),
        }
    }

    pub fn matches(self, port: u16) -> bool {
        match self {
            PortPattern::Any => true,
            PortPattern::Port(granted) => granted == port,
        }
    }
}

impl EndpointPattern {
    const KIND: &'static str = "network endpoint (`host:port`)";

    /// Whether the address `ip` and `port` are covered by an address pattern.
    pub fn matches_addr(&self, ip: IpAddr, port: u16) -> bool {
        self.host.matches_ip(ip) && self.port.matches(port)
    }
}

impl AuthorityPattern {
    const KIND: &'static str = "HTTP authority (`host` or `host:port`)";

    /// Whether a request to `host` on `port` covers it; `default_port` is the port of the
    /// request's scheme. Both names and addresses are compared as the request wrote them.
    pub fn matches(&self, host: &str, port: u16, default_port: u16) -> bool {
        let host_matches = match host_literal(host) {
            Some(ip) => self.host.matches_ip(ip),
            None => self.host.matches_name(host),
        };
        let port_matches = match self.port {
            None => port == default_port,
            Some(granted) => granted.matches(port),
        };
        host_matches && port_matches
    }
}

/// Splits `host:port` (with `[v6]:port`) into its parts; `None` when there is no port.
fn split_port(pattern: &str) -> Option<(&str, &str)> {
    if pattern.starts_with('[') {
        let end = pattern.find(']')?;
        return pattern[end + 1..]
            .strip_prefix(':')
            .map(|port| (&pattern[..=end], port));
    }
    // A bare IPv6 address has colons but no port.
    if pattern.parse::<std::net::Ipv6Addr>().is_ok() {
        return None;
    }
    pattern.rsplit_once(':')
}

impl FromStr for EndpointPattern {
    type Err = PatternError;

    fn from_str(pattern: &str) -> Result<Self, PatternError> {
        let Some((host, port)) = split_port(pattern) else {
            return Err(PatternError {
                pattern: pattern.to_owned(),
                kind: Self::KIND,
                reason: format!(
                    "it has no port: write `{pattern}:<port>`, or `{pattern}:*` for every port"
                ),
            });
        };
        Ok(EndpointPattern {
            host: HostPattern::parse(host, pattern, Self::KIND)?,
            port: PortPattern::parse(port, pattern, Self::KIND)?,
        })
    }
}

impl FromStr for AuthorityPattern {
    type Err = PatternError;

    fn from_str(pattern: &str) -> Result<Self, PatternError> {
        if pattern.contains("://") || pattern.contains('/') {
            return Err(PatternError {
                pattern: pattern.to_owned(),
                kind: Self::KIND,
                reason: "write the host (and port) only, without a scheme or a path".to_owned(),
            });
        }
        let (host, port) = match split_port(pattern) {
            Some((host, port)) => (host, Some(PortPattern::parse(port, pattern, Self::KIND)?)),
            None => (pattern, None),
        };
        Ok(AuthorityPattern {
            host: HostPattern::parse(host, pattern, Self::KIND)?,
            port,
        })
    }
}

impl fmt::Display for HostPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HostPattern::Any => f.write_str("*"),
            HostPattern::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]"),
            HostPattern::Ip(ip) => write!(f, "{ip}"),
            HostPattern::Name(name) => f.write_str(name),
            HostPattern::Subdomains(domain) => write!(f, "*.{domain}"),
        }
    }
}

impl fmt::Display for PortPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PortPattern::Any => f.write_str("*"),
            PortPattern::Port(port) => write!(f, "{port}"),
        }
    }
}

impl fmt::Display for EndpointPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.host, self.port)
    }
}

impl fmt::Display for AuthorityPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.port {
            Some(port) => write!(f, "{}:{port}", self.host),
            None => write!(f, "{}", self.host),
        }
    }
}

/// The address a host written as a literal (`10.0.0.1`, `[::1]`, `::1`) stands for.
pub(crate) fn host_literal(host: &str) -> Option<IpAddr> {
    let bare = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    bare.parse().ok()
}

/// A host name as names are compared: lower-case, without the trailing dot of a fully
/// qualified name.
pub(crate) fn normalize_name(name: &str) -> String {
    name.strip_suffix('.').unwrap_or(name).to_ascii_lowercase()
}

/// Checks that `name` is a DNS name (labels of letters, digits and `-`, or `_` as some service
/// names use) and returns its normal form.
fn check_name(name: &str) -> Result<String, String> {
    let normal = normalize_name(name);
    if normal.is_empty() {
        return Err("the host is empty".to_owned());
    }
    if normal.len() > 253 {
        return Err("the host name is longer than 253 characters".to_owned());
    }
    for label in normal.split('.') {
        if label.is_empty() || label.len() > 63 {
            return Err(format!(
                "`{name}` is not a host name: each dot-separated part must have 1 to 63 characters"
            ));
        }
        if let Some(c) = label
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_')))
        {
            return Err(format!(
                "`{name}` is not a host name or an IP address: `{c}` is not allowed in a name"
            ));
        }
    }
    Ok(normal)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoint(s: &str) -> EndpointPattern {
        s.parse().unwrap()
    }

    fn authority(s: &str) -> AuthorityPattern {
        s.parse().unwrap()
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn parses_the_endpoint_forms() {
        assert_eq!(
            endpoint("127.0.0.1:8080"),
            EndpointPattern {
                host: HostPattern::Ip(ip("127.0.0.1")),
                port: PortPattern::Port(8080)
            }
        );
        assert_eq!(
            endpoint("DB.Internal.:5432").host,
            HostPattern::Name("db.internal".into())
        );
        assert_eq!(
            endpoint("*.example.com:443").host,
            HostPattern::Subdomains("example.com".into())
        );
        assert_eq!(endpoint("10.0.0.5:*").port, PortPattern::Any);
        assert_eq!(endpoint("[::1]:53").host, HostPattern::Ip(ip("::1")));
        assert_eq!(endpoint("*:443").host, HostPattern::Any);
    }

    #[test]
    fn bad_endpoints_say_what_is_wrong() {
        let err = |s: &str| s.parse::<EndpointPattern>().unwrap_err().to_string();
        assert!(err("db.internal").contains("has no port"), "{}", err("db"));
        assert!(err("::1").contains("has no port"));
        assert!(err("h:99999").contains("the port `99999` is not a number from 1 to 65535"));
        assert!(err("h:0").contains("the port `0`"));
        assert!(err("h:http").contains("the port `http`"));
        assert!(err(":80").contains("the host is empty"));
        assert!(err("a..b:80").contains("1 to 63 characters"));
        assert!(err("ex ample.com:80").contains("` ` is not allowed"));
        assert!(err("api.*.com:80").contains("a wildcard host is `*`"));
        assert!(err("[zz]:80").contains("`zz` is not an IPv6 address"));
    }

    #[test]
    fn parses_authorities_with_and_without_ports() {
        assert_eq!(authority("api.example.com").port, None);
        assert_eq!(
            authority("127.0.0.1:8080"),
            AuthorityPattern {
                host: HostPattern::Ip(ip("127.0.0.1")),
                port: Some(PortPattern::Port(8080))
            }
        );
        assert_eq!(authority("::1").host, HostPattern::Ip(ip("::1")));
        let err = "https://api.example.com"
            .parse::<AuthorityPattern>()
            .unwrap_err();
        assert!(err.to_string().contains("without a scheme"), "{err}");
    }

    #[test]
    fn names_match_exactly_or_below_a_wildcard_domain() {
        let exact = HostPattern::Name("db.internal".into());
        assert!(exact.matches_name("db.internal"));
        assert!(exact.matches_name("DB.internal."));
        assert!(!exact.matches_name("x.db.internal"));
        assert!(!exact.matches_name("db.internal.evil"));
        let wild = HostPattern::Subdomains("example.com".into());
        assert!(wild.matches_name("api.example.com"));
        assert!(wild.matches_name("a.b.example.com"));
        assert!(!wild.matches_name("example.com"));
        assert!(!wild.matches_name("evilexample.com"));
        assert!(!HostPattern::Ip(ip("127.0.0.1")).matches_name("localhost"));
    }

    #[test]
    fn addresses_match_address_patterns_only() {
        let grant = endpoint("10.0.0.5:*");
        assert!(grant.matches_addr(ip("10.0.0.5"), 1));
        assert!(!grant.matches_addr(ip("10.0.0.6"), 1));
        let grant = endpoint("127.0.0.1:8080");
        assert!(grant.matches_addr(ip("127.0.0.1"), 8080));
        assert!(!grant.matches_addr(ip("127.0.0.1"), 8081));
        // An IPv4-mapped IPv6 address is the same address.
        assert!(grant.matches_addr(ip("::ffff:127.0.0.1"), 8080));
        assert!(!endpoint("db.internal:5432").matches_addr(ip("127.0.0.1"), 5432));
    }

    #[test]
    fn authorities_without_a_port_cover_the_default_port_only() {
        let grant = authority("api.example.com");
        assert!(grant.matches("api.example.com", 443, 443));
        assert!(!grant.matches("api.example.com", 8443, 443));
        assert!(!grant.matches("evil.example", 443, 443));
        let grant = authority("127.0.0.1:8080");
        assert!(grant.matches("127.0.0.1", 8080, 80));
        assert!(!grant.matches("127.0.0.1", 8081, 80));
        assert!(!grant.matches("localhost", 8080, 80));
        assert!(authority("*.example.com:*").matches("a.example.com", 1, 80));
        assert!(authority("[::1]:80").matches("[::1]", 80, 80));
    }

    #[test]
    fn patterns_display_as_written() {
        for s in [
            "127.0.0.1:8080",
            "*.example.com:443",
            "10.0.0.5:*",
            "[::1]:53",
        ] {
            assert_eq!(endpoint(s).to_string(), s);
        }
        for s in ["api.example.com", "*.example.com:*", "[::1]:80"] {
            assert_eq!(authority(s).to_string(), s);
        }
    }
}

//! `wasi:sockets` under the TCP and UDP grants: a socket address check for every bind, listen,
//! connect, send and receive, and name lookups limited to the names the grants mention.
//!
//! A grant written with an address matches that address. A grant written with a host name
//! matches the addresses that the guest's own lookups of that name returned: a guest may look
//! up only names that some grant names, so it can reach only what the project meant.

use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use wasmtime::component::{HasData, Resource};
use wasmtime_wasi::WasiCtxBuilder;
use wasmtime_wasi::p2::DynPollable;
use wasmtime_wasi::p2::SocketError;
use wasmtime_wasi::p2::bindings::sockets::ip_name_lookup::{
    Host, HostResolveAddressStream, ResolveAddressStream,
};
use wasmtime_wasi::p2::bindings::sockets::network::{
    self, ErrorCode, HostNetwork, IpAddress, Network,
};
use wasmtime_wasi::sockets::{SocketAddrUse, WasiSocketsCtxView};

use crate::access::endpoint::{EndpointPattern, normalize_name};
use crate::access::grants::Grants;
use crate::sandbox::denial::{Denial, Denials, Protocol, SocketAction};

/// The network a guest may use, and what its lookups resolved.
pub(crate) struct NetPolicy {
    tcp: Vec<EndpointPattern>,
    tcp_listen: Vec<EndpointPattern>,
    udp: Vec<EndpointPattern>,
    udp_listen: Vec<EndpointPattern>,
    tls_insecure: Vec<EndpointPattern>,
    denials: Arc<Denials>,
    state: Mutex<Resolved>,
}

#[derive(Default)]
struct Resolved {
    /// The granted names each address was returned for.
    names: HashMap<IpAddr, HashSet<String>>,
    /// The name each open lookup stream resolves, by its resource handle.
    streams: HashMap<u32, String>,
    /// The peers of the TCP connects allowed: what a TLS session's server name must be one of.
    connected: HashSet<SocketAddr>,
}

impl NetPolicy {
    pub(crate) fn new(grants: &Grants, denials: Arc<Denials>) -> Arc<NetPolicy> {
        Arc::new(NetPolicy {
            tcp: grants.tcp.clone(),
            tcp_listen: grants.tcp_listen.clone(),
            udp: grants.udp.clone(),
            udp_listen: grants.udp_listen.clone(),
            tls_insecure: grants.tls_insecure.clone(),
            denials,
            state: Mutex::default(),
        })
    }

    fn state(&self) -> MutexGuard<'_, Resolved> {
        // Every critical section is an insert or a removal: consistent after a panic.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Lets the guest use sockets, every use checked by this policy. TCP, UDP and lookups are
    /// switched on even without grants, so that a refusal is seen (and reported) with the
    /// address the guest tried rather than as a blanket "TCP is not allowed".
    pub(crate) fn install(self: &Arc<Self>, wasi: &mut WasiCtxBuilder) {
        let policy = self.clone();
        wasi.allow_tcp(true)
            .allow_udp(true)
            // Gated by `GuardedLookup`, which replaces the unrestricted lookup of wasmtime-wasi.
            .allow_ip_name_lookup(true)
            .socket_addr_check(move |addr, usage| {
                let allowed = policy.check(addr, usage);
                Box::pin(async move { allowed })
            });
    }

    /// Whether the guest may use `addr` for `usage`; a refusal that the guest notices is recorded.
    fn check(&self, addr: SocketAddr, usage: SocketAddrUse) -> bool {
        let (protocol, action) = match usage {
            // Binding an ephemeral port only prepares a socket, as every connect does.
            SocketAddrUse::TcpBind | SocketAddrUse::UdpBind if addr.port() == 0 => return true,
            // Listening was checked; whoever connects to a granted listener may.
            SocketAddrUse::TcpAccept => return true,
            // A fixed local port is a listener: `tcp-listen` and `udp-listen` grant those,
            // `tcp` and `udp` only the peers to reach.
            SocketAddrUse::TcpBind => (Protocol::Tcp, SocketAction::Bind),
            SocketAddrUse::TcpListen => (Protocol::Tcp, SocketAction::Listen),
            SocketAddrUse::TcpConnect => (Protocol::Tcp, SocketAction::Connect),
            SocketAddrUse::UdpBind => (Protocol::Udp, SocketAction::Bind),
            SocketAddrUse::UdpSend => (Protocol::Udp, SocketAction::Send),
            // A datagram from elsewhere is dropped unseen: nothing for the guest to report.
            SocketAddrUse::UdpReceive => return self.allows(&self.udp, addr),
        };
        let grants = match (protocol, action) {
            (Protocol::Tcp, SocketAction::Bind | SocketAction::Listen) => &self.tcp_listen,
            (Protocol::Udp, SocketAction::Bind | SocketAction::Listen) => &self.udp_listen,
            (Protocol::Tcp, _) => &self.tcp,
            (Protocol::Udp, _) => &self.udp,
        };
        let allowed = self.allows(grants, addr);
        if allowed && matches!(usage, SocketAddrUse::TcpConnect) {
            let peer = SocketAddr::new(addr.ip().to_canonical(), addr.port());
            self.state().connected.insert(peer);
        }
        if !allowed {
            let ip = addr.ip().to_canonical();
            let name = self.state().names.get(&ip).and_then(|names| {
                let mut names: Vec<&String> = names.iter().collect();
                names.sort();
                names.first().map(|name| name.to_string())
            });
            self.denials.refuse(Denial::Socket {
                protocol,
                action,
                addr: SocketAddr::new(ip, addr.port()),
                name,
            });
        }
        allowed
    }

    /// Whether one of `grants` covers `addr`, by the address itself or by a granted name that
    /// a lookup resolved to it.
    fn allows(&self, grants: &[EndpointPattern], addr: SocketAddr) -> bool {
        let (ip, port) = (addr.ip().to_canonical(), addr.port());
        if grants.iter().any(|g| g.matches_addr(ip, port)) {
            return true;
        }
        let state = self.state();
        let Some(names) = state.names.get(&ip) else {
            return false;
        };
        grants.iter().any(|g| {
            g.port.matches(port) && g.host.is_name() && names.iter().any(|n| g.host.matches_name(n))
        })
    }

    /// Whether a TLS session with the server `server_name` may skip verifying `what` of its
    /// certificate: a `tls-insecure` grant must cover a peer this guest connected to under that
    /// name (the address itself, or one a lookup of the name returned). A refusal is recorded,
    /// with the endpoint the grant would name, and returned as the message the guest gets.
    ///
    /// The session's connection is not known to the host (it gets only its streams), so a
    /// guest connected to a granted peer under the name could name it while upgrading another
    /// of its connections; every connection is still to a `tcp`-granted endpoint.
    pub(crate) fn allows_unverified(
        &self,
        server_name: &str,
        what: &'static str,
    ) -> Result<(), String> {
        let name = normalize_name(server_name);
        let literal = crate::access::endpoint::host_literal(server_name);
        let peers: Vec<SocketAddr> = {
            let state = self.state();
            let mut peers: Vec<SocketAddr> = (state.connected.iter())
                .filter(|peer| match literal {
                    Some(ip) => peer.ip() == ip.to_canonical(),
                    None => state
                        .names
                        .get(&peer.ip())
                        .is_some_and(|n| n.contains(&name)),
                })
                .copied()
                .collect();
            peers.sort();
            peers
        };
        let granted = |peer: &SocketAddr| {
            (self.tls_insecure.iter()).any(|g| {
                g.matches_addr(peer.ip(), peer.port())
                    || (g.port.matches(peer.port())
                        && literal.is_none()
                        && g.host.matches_name(&name))
            })
        };
        if peers.iter().any(granted) {
            return Ok(());
        }
        let endpoint = match (peers.first(), literal) {
            (Some(peer), Some(_)) => peer.to_string(),
            (Some(peer), None) => format!("{name}:{}", peer.port()),
            (None, _) => format!("{name}:<port>"),
        };
        // The name is the guest's (a valid DNS name by now): escaped all the same.
        let endpoint = plinth_engine::shown::escape_controls(&endpoint).into_owned();
        self.denials.refuse(Denial::TlsInsecure {
            endpoint: endpoint.clone(),
            what,
        });
        Err(format!(
            "the project does not allow TLS to {endpoint} without verifying the server's \
             certificate fully (asked to verify {what}): give the plugin a root certificate to \
             verify it with, or grant `tls-insecure: [\"{endpoint}\"]`"
        ))
    }

    /// Whether some network grant names `name`, so that the guest may look it up.
    fn may_resolve(&self, name: &str) -> bool {
        self.tcp
            .iter()
            .chain(&self.udp)
            .chain(&self.tcp_listen)
            .chain(&self.udp_listen)
            .any(|g| g.host.matches_name(name))
    }
}

/// What `wasi:sockets/ip-name-lookup` is linked with: the sandbox's [`GuardedLookup`].
pub(crate) struct GuardedLookupData;

impl HasData for GuardedLookupData {
    type Data<'a> = GuardedLookup<'a>;
}

/// wasmtime-wasi's lookup, behind the name check of a [`NetPolicy`].
pub(crate) struct GuardedLookup<'a> {
    pub(crate) sockets: WasiSocketsCtxView<'a>,
    pub(crate) policy: &'a NetPolicy,
}

impl Host for GuardedLookup<'_> {
    fn resolve_addresses(
        &mut self,
        network: Resource<Network>,
        name: String,
    ) -> Result<Resource<ResolveAddressStream>, SocketError> {
        // An address written as a name resolves to itself: the socket check judges it.
        let literal = crate::access::endpoint::host_literal(&name).is_some();
        if !literal && !self.policy.may_resolve(&name) {
            self.policy.denials.refuse(Denial::Lookup {
                name: normalize_name(&name),
            });
            return Err(ErrorCode::AccessDenied.into());
        }
        let stream = self.sockets.resolve_addresses(network, name.clone())?;
        if !literal {
            self.policy
                .state()
                .streams
                .insert(stream.rep(), normalize_name(&name));
        }
        Ok(stream)
    }
}

/// The lookup's errors are `wasi:sockets/network` errors: converted as wasmtime-wasi does.
impl network::Host for GuardedLookup<'_> {
    fn convert_error_code(&mut self, error: SocketError) -> wasmtime::Result<ErrorCode> {
        self.sockets.convert_error_code(error)
    }

    fn network_error_code(
        &mut self,
        error: Resource<wasmtime::Error>,
    ) -> wasmtime::Result<Option<ErrorCode>> {
        self.sockets.network_error_code(error)
    }
}

impl HostNetwork for GuardedLookup<'_> {
    fn drop(&mut self, network: Resource<Network>) -> wasmtime::Result<()> {
        HostNetwork::drop(&mut self.sockets, network)
    }
}

impl HostResolveAddressStream for GuardedLookup<'_> {
    fn resolve_next_address(
        &mut self,
        stream: Resource<ResolveAddressStream>,
    ) -> Result<Option<IpAddress>, SocketError> {
        let rep = stream.rep();
        let next = self.sockets.resolve_next_address(stream)?;
        if let Some(address) = next {
            let mut state = self.policy.state();
            if let Some(name) = state.streams.get(&rep).cloned() {
                let ip = ip_addr(address).to_canonical();
                state.names.entry(ip).or_default().insert(name);
            }
        }
        Ok(next)
    }

    fn subscribe(
        &mut self,
        stream: Resource<ResolveAddressStream>,
    ) -> wasmtime::Result<Resource<DynPollable>> {
        self.sockets.subscribe(stream)
    }

    fn drop(&mut self, stream: Resource<ResolveAddressStream>) -> wasmtime::Result<()> {
        self.policy.state().streams.remove(&stream.rep());
        HostResolveAddressStream::drop(&mut self.sockets, stream)
    }
}

/// The standard form of a WASI address.
fn ip_addr(address: IpAddress) -> IpAddr {
    match address {
        IpAddress::Ipv4((a, b, c, d)) => IpAddr::from([a, b, c, d]),
        IpAddress::Ipv6((a, b, c, d, e, f, g, h)) => IpAddr::from([a, b, c, d, e, f, g, h]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::denial::Owner;

    fn policy(tcp: &[&str], udp: &[&str]) -> Arc<NetPolicy> {
        listening_policy(tcp, udp, &[], &[])
    }

    fn listening_policy(
        tcp: &[&str],
        udp: &[&str],
        tcp_listen: &[&str],
        udp_listen: &[&str],
    ) -> Arc<NetPolicy> {
        let parse = |patterns: &[&str]| patterns.iter().map(|s| s.parse().unwrap()).collect();
        let grants = Grants {
            tcp: parse(tcp),
            udp: parse(udp),
            tcp_listen: parse(tcp_listen),
            udp_listen: parse(udp_listen),
            ..Grants::default()
        };
        NetPolicy::new(
            &grants,
            Arc::new(Denials::new(
                Owner::Plugin("p".into()),
                Arc::new(crate::access::advice::PlainAdvice),
            )),
        )
    }

    fn addr(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    /// What a lookup of `name` returning `ip` records.
    fn resolved(policy: &NetPolicy, name: &str, ip: &str) {
        let mut state = policy.state();
        state
            .names
            .entry(ip.parse().unwrap())
            .or_default()
            .insert(name.into());
    }

    #[test]
    fn address_grants_cover_their_address_and_port_only() {
        let p = policy(&["127.0.0.1:8080", "10.0.0.5:*"], &["127.0.0.1:5353"]);
        assert!(p.check(addr("127.0.0.1:8080"), SocketAddrUse::TcpConnect));
        assert!(!p.check(addr("127.0.0.1:8081"), SocketAddrUse::TcpConnect));
        assert!(!p.check(addr("127.0.0.2:8080"), SocketAddrUse::TcpConnect));
        assert!(p.check(addr("10.0.0.5:1"), SocketAddrUse::TcpConnect));
        // TCP grants are not UDP grants, and the other way round.
        assert!(!p.check(addr("127.0.0.1:8080"), SocketAddrUse::UdpSend));
        assert!(p.check(addr("127.0.0.1:5353"), SocketAddrUse::UdpSend));
        assert!(!p.check(addr("127.0.0.1:5353"), SocketAddrUse::TcpConnect));
        assert!(p.check(addr("[::ffff:127.0.0.1]:8080"), SocketAddrUse::TcpConnect));
    }

    #[test]
    fn ephemeral_binds_are_free_and_listening_needs_a_listen_grant() {
        // `tcp: ["*:47020"]` once let a plugin listen on 0.0.0.0:47020 too.
        let p = policy(&["*:47020", "127.0.0.1:8080"], &["*:5353"]);
        assert!(p.check(addr("0.0.0.0:0"), SocketAddrUse::TcpBind));
        assert!(p.check(addr("0.0.0.0:0"), SocketAddrUse::UdpBind));
        for (local, usage) in [
            ("0.0.0.0:47020", SocketAddrUse::TcpBind),
            ("0.0.0.0:47020", SocketAddrUse::TcpListen),
            ("127.0.0.1:8080", SocketAddrUse::TcpListen),
            ("0.0.0.0:5353", SocketAddrUse::UdpBind),
        ] {
            assert!(!p.check(addr(local), usage), "{local} {usage:?}");
        }
        assert!(p.check(addr("127.0.0.1:47020"), SocketAddrUse::TcpConnect));
        assert!(p.check(addr("127.0.0.1:5353"), SocketAddrUse::UdpSend));
        assert!(!p.check(addr("127.0.0.1:9000"), SocketAddrUse::UdpReceive));

        let p = listening_policy(&[], &[], &["127.0.0.1:47020"], &["0.0.0.0:5353"]);
        assert!(p.check(addr("127.0.0.1:47020"), SocketAddrUse::TcpBind));
        assert!(p.check(addr("127.0.0.1:47020"), SocketAddrUse::TcpListen));
        assert!(!p.check(addr("0.0.0.0:47020"), SocketAddrUse::TcpListen));
        assert!(!p.check(addr("127.0.0.1:47020"), SocketAddrUse::TcpConnect));
        assert!(p.check(addr("0.0.0.0:5353"), SocketAddrUse::UdpBind));
        assert!(!p.check(addr("127.0.0.1:5353"), SocketAddrUse::UdpSend));
        let note = p.denials.explain("", &[]).unwrap();
        assert!(note.contains("TCP listen on 0.0.0.0:47020"), "{note}");
        assert!(
            note.contains("listening for TCP connections on 0.0.0.0:47020"),
            "{note}"
        );
    }

    #[test]
    fn name_grants_cover_the_addresses_their_lookups_returned() {
        let p = policy(&["db.internal:5432", "*.example.com:443"], &[]);
        assert!(p.may_resolve("db.internal"));
        assert!(p.may_resolve("API.example.com."));
        assert!(!p.may_resolve("example.com"));
        assert!(!p.may_resolve("evil.example"));
        assert!(!p.check(addr("10.9.9.9:5432"), SocketAddrUse::TcpConnect));
        resolved(&p, "db.internal", "10.9.9.9");
        resolved(&p, "api.example.com", "10.7.7.7");
        assert!(p.check(addr("10.9.9.9:5432"), SocketAddrUse::TcpConnect));
        assert!(!p.check(addr("10.9.9.9:443"), SocketAddrUse::TcpConnect));
        assert!(p.check(addr("10.7.7.7:443"), SocketAddrUse::TcpConnect));
        assert!(!p.check(addr("10.7.7.7:5432"), SocketAddrUse::TcpConnect));
    }

    #[test]
    fn refusals_are_recorded_with_the_name_an_address_came_from() {
        let p = policy(&["localhost:8080"], &[]);
        resolved(&p, "localhost", "127.0.0.1");
        assert!(!p.check(addr("127.0.0.1:9"), SocketAddrUse::TcpConnect));
        let note = p.denials.explain("", &[]).unwrap();
        assert!(
            note.contains("TCP connect to 127.0.0.1:9 (an address of `localhost`)"),
            "{note}"
        );
        assert!(note.contains("TCP connections to localhost:9"), "{note}");
    }

    fn insecure_policy(tcp: &[&str], tls_insecure: &[&str]) -> Arc<NetPolicy> {
        let parse = |patterns: &[&str]| patterns.iter().map(|s| s.parse().unwrap()).collect();
        let grants = Grants {
            tcp: parse(tcp),
            tls_insecure: parse(tls_insecure),
            ..Grants::default()
        };
        let advice = Arc::new(crate::access::advice::PlainAdvice);
        NetPolicy::new(
            &grants,
            Arc::new(Denials::new(Owner::Plugin("p".into()), advice)),
        )
    }

    #[test]
    fn skipping_verification_needs_a_grant_of_an_endpoint_the_guest_connected_to() {
        let p = insecure_policy(
            &["db.internal:5432", "10.1.1.1:5432"],
            &["db.internal:5432"],
        );
        // Not connected yet: nothing to skip verification for.
        let refused = p.allows_unverified("db.internal", "nothing").unwrap_err();
        assert!(
            refused.contains("tls-insecure: [\"db.internal:<port>\"]"),
            "{refused}"
        );
        resolved(&p, "db.internal", "10.9.9.9");
        assert!(p.check(addr("10.9.9.9:5432"), SocketAddrUse::TcpConnect));
        assert_eq!(p.allows_unverified("DB.internal.", "nothing"), Ok(()));
        // Another granted endpoint, connected to by address: no `tls-insecure` grant covers it.
        assert!(p.check(addr("10.1.1.1:5432"), SocketAddrUse::TcpConnect));
        let refused = p
            .allows_unverified("10.1.1.1", "the chain but not the name")
            .unwrap_err();
        assert!(
            refused.contains("tls-insecure: [\"10.1.1.1:5432\"]"),
            "{refused}"
        );
        let note = p.denials.explain("", &[]).unwrap();
        assert!(
            note.contains(
                "a TLS session to 10.1.1.1:5432 that verifies the chain but not the name"
            ),
            "{note}"
        );
    }

    #[test]
    fn an_address_grant_covers_the_address_named_as_such() {
        let p = insecure_policy(&["127.0.0.1:5432"], &["127.0.0.1:5432"]);
        assert!(p.check(addr("127.0.0.1:5432"), SocketAddrUse::TcpConnect));
        assert_eq!(p.allows_unverified("127.0.0.1", "nothing"), Ok(()));
        // A name the guest never looked up is not that address.
        assert!(p.allows_unverified("localhost", "nothing").is_err());
    }
}

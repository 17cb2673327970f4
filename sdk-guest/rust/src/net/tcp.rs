//! A TCP client connection over `wasi:sockets`, whose streams [`TcpStream::into_tls`] can hand
//! to the host for TLS. (Rust's `std::net::TcpStream` works in a guest too, but keeps its
//! streams to itself.)

use std::io;
use std::time::Duration;

use wasip2::io::poll::{Pollable, poll};
use wasip2::sockets::instance_network::instance_network;
use wasip2::sockets::ip_name_lookup::resolve_addresses;
use wasip2::sockets::network::{
    ErrorCode, IpAddress, IpAddressFamily, IpSocketAddress, Ipv4SocketAddress, Ipv6SocketAddress,
    Network,
};
use wasip2::sockets::tcp::TcpSocket;
use wasip2::sockets::tcp_create_socket::create_tcp_socket;

use super::streams::Streams;

/// A connected TCP stream: `Read` and `Write`, every wait bounded by the call's deadline.
///
/// The project must grant the endpoint (`tcp: ["HOST:PORT"]`); the sandbox refuses any other,
/// and the lookup of a name no grant mentions.
pub struct TcpStream {
    pub(crate) streams: Streams,
    /// Kept open for as long as its streams are used.
    pub(crate) socket: TcpSocket,
}

impl TcpStream {
    /// Connects to the first address of `host` (a name or an address) that answers on `port`,
    /// waiting at most `timeout` for each (`None`: as long as the system does).
    pub fn connect(host: &str, port: u16, timeout: Option<Duration>) -> io::Result<TcpStream> {
        let network = instance_network();
        let addresses = lookup(&network, host)?;
        let mut last = None;
        for address in addresses {
            match connect_one(&network, address, port, timeout) {
                Ok(stream) => return Ok(stream),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| {
            io::Error::new(io::ErrorKind::NotFound, format!("`{host}` has no address"))
        }))
    }
}

/// The addresses of `host`.
fn lookup(network: &Network, host: &str) -> io::Result<Vec<IpAddress>> {
    let found = resolve_addresses(network, host).map_err(socket_error)?;
    let mut addresses = Vec::new();
    loop {
        match found.resolve_next_address() {
            Ok(Some(address)) => addresses.push(address),
            Ok(None) => return Ok(addresses),
            Err(ErrorCode::WouldBlock) => found.subscribe().block(),
            Err(e) => return Err(socket_error(e)),
        }
    }
}

fn connect_one(
    network: &Network,
    address: IpAddress,
    port: u16,
    timeout: Option<Duration>,
) -> io::Result<TcpStream> {
    let (family, remote) = match address {
        IpAddress::Ipv4(address) => (
            IpAddressFamily::Ipv4,
            IpSocketAddress::Ipv4(Ipv4SocketAddress { port, address }),
        ),
        IpAddress::Ipv6(address) => (
            IpAddressFamily::Ipv6,
            IpSocketAddress::Ipv6(Ipv6SocketAddress {
                port,
                flow_info: 0,
                address,
                scope_id: 0,
            }),
        ),
    };
    let socket = create_tcp_socket(family).map_err(socket_error)?;
    socket
        .start_connect(network, remote)
        .map_err(socket_error)?;
    let timer: Option<Pollable> = timeout.map(|t| {
        wasip2::clocks::monotonic_clock::subscribe_duration(
            u64::try_from(t.as_nanos()).unwrap_or(u64::MAX),
        )
    });
    let connected = socket.subscribe();
    loop {
        match socket.finish_connect() {
            Ok((input, output)) => {
                drop(connected);
                return Ok(TcpStream {
                    streams: Streams { input, output },
                    socket,
                });
            }
            Err(ErrorCode::WouldBlock) => match &timer {
                None => connected.block(),
                Some(timer) => {
                    let ready = poll(&[&connected, timer]);
                    if !ready.contains(&0) {
                        return Err(io::Error::new(
                            io::ErrorKind::TimedOut,
                            "the connection did not open in time",
                        ));
                    }
                }
            },
            Err(e) => return Err(socket_error(e)),
        }
    }
}

fn socket_error(code: ErrorCode) -> io::Error {
    let kind = match code {
        ErrorCode::AccessDenied | ErrorCode::NotSupported => io::ErrorKind::PermissionDenied,
        ErrorCode::ConnectionRefused => io::ErrorKind::ConnectionRefused,
        ErrorCode::ConnectionReset => io::ErrorKind::ConnectionReset,
        ErrorCode::ConnectionAborted => io::ErrorKind::ConnectionAborted,
        ErrorCode::Timeout => io::ErrorKind::TimedOut,
        ErrorCode::NameUnresolvable => io::ErrorKind::NotFound,
        ErrorCode::RemoteUnreachable => io::ErrorKind::HostUnreachable,
        _ => io::ErrorKind::Other,
    };
    io::Error::new(kind, code.message())
}

impl io::Read for TcpStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.streams.read(buf)
    }
}

impl io::Write for TcpStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.streams.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.streams.flush()
    }
}

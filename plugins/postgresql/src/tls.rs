//! TLS for the connection, as libpq's `sslmode` says: the SSLRequest that asks the server for
//! it, then the handshake, which the host runs and checks (`plinth:tls`); this module only
//! decides what to ask and explains what failed.

use std::fmt;
use std::io::{self, Read, Write};

use bytes::BytesMut;
use plinth_sdk::net::{TcpStream, TlsError, TlsErrorKind, TlsOptions, TlsStream, Verification};
use postgres_protocol::message::frontend;

/// libpq's `sslmode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SslMode {
    Disable,
    Allow,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl SslMode {
    pub(crate) fn parse(text: &str) -> Option<SslMode> {
        Some(match text {
            "disable" => SslMode::Disable,
            "allow" => SslMode::Allow,
            "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            _ => return None,
        })
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Allow => "allow",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }

    /// Whether a connection without TLS is refused.
    pub(crate) fn requires_tls(self) -> bool {
        matches!(
            self,
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull
        )
    }
}

/// The TLS settings of a connection.
#[derive(Clone)]
pub(crate) struct Tls {
    pub(crate) mode: SslMode,
    /// Trusted roots, PEM.
    pub(crate) root: Option<String>,
    /// The client's certificate chain and private key, PEM.
    pub(crate) identity: Option<(String, String)>,
}

impl fmt::Debug for Tls {
    // Never shows the key.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sslmode={}", self.mode.as_str())
    }
}

impl Tls {
    /// What the host is asked to check of the server `host`, as libpq checks it: `require`
    /// (and `prefer`, `allow`) check the chain only when a root is given.
    fn options(&self, host: &str) -> TlsOptions {
        let verification = match (self.mode, &self.root) {
            (SslMode::VerifyFull, _) => Verification::Full,
            (SslMode::VerifyCa, _) | (_, Some(_)) => Verification::ChainOnly,
            (_, None) => Verification::None,
        };
        let mut options = TlsOptions::new(host).verification(verification);
        if let Some(root) = &self.root {
            options = options.roots(root.clone());
        }
        if let Some((chain, key)) = &self.identity {
            options = options.identity(chain.clone(), key.clone());
        }
        options
    }
}

/// The connection to the server, encrypted or not.
pub(crate) enum Stream {
    Plain(TcpStream),
    Tls(Box<TlsStream>),
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.read(buf),
            Stream::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.write(buf),
            Stream::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Plain(s) => s.flush(),
            Stream::Tls(s) => s.flush(),
        }
    }
}

/// Why TLS could not be set up.
#[derive(Debug)]
pub(crate) enum TlsFailure {
    /// The server answered the SSLRequest with `N`.
    NotSupported { mode: SslMode },
    /// The handshake failed, or the host refused the settings.
    Handshake { mode: SslMode, error: TlsError },
    /// The connection failed while asking.
    Io(io::Error),
}

impl TlsFailure {
    /// Whether `prefer` may go on without TLS after this, as libpq does.
    pub(crate) fn handshake_failed(&self) -> bool {
        matches!(self, TlsFailure::Handshake { error, .. }
            if error.kind() != TlsErrorKind::InvalidOptions)
    }
}

impl fmt::Display for TlsFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TlsFailure::NotSupported { mode } => write!(
                f,
                "the server does not support SSL (it declined the SSLRequest), and sslmode \
                 `{}` requires it: enable `ssl` on the server, or use sslmode `prefer` on a \
                 trusted network",
                mode.as_str()
            ),
            TlsFailure::Handshake { mode, error } => {
                write!(f, "TLS failed (sslmode `{}`): {error}", mode.as_str())?;
                let hint = match error.kind() {
                    TlsErrorKind::UnknownIssuer => {
                        "; set `postgresql:sslrootcert` to the PEM of the CA that signed the \
                         server's certificate (for a managed database: the provider's CA \
                         bundle)"
                    }
                    TlsErrorKind::NameMismatch => {
                        "; set `postgresql:host` to a name the certificate carries, or use \
                         sslmode `verify-ca` to check the chain only"
                    }
                    TlsErrorKind::RefusedByServer => {
                        "; if the server asks for a client certificate, check \
                         `postgresql:sslcert` and `postgresql:sslkey`"
                    }
                    _ => "",
                };
                f.write_str(hint)
            }
            TlsFailure::Io(e) => write!(f, "asking the server for SSL: {e}"),
        }
    }
}

/// Asks the server on `tcp` for TLS (an SSLRequest) and sets it up with `host`'s certificate
/// checked as `tls` says. A server that declines leaves the connection plain, unless the mode
/// requires TLS.
pub(crate) fn negotiate(mut tcp: TcpStream, host: &str, tls: &Tls) -> Result<Stream, TlsFailure> {
    let mut request = BytesMut::with_capacity(8);
    frontend::ssl_request(&mut request);
    tcp.write_all(&request).map_err(TlsFailure::Io)?;
    tcp.flush().map_err(TlsFailure::Io)?;
    let mut answer = [0u8; 1];
    tcp.read_exact(&mut answer).map_err(TlsFailure::Io)?;
    match answer[0] {
        b'S' => {
            let stream =
                (tcp.into_tls(&tls.options(host))).map_err(|error| TlsFailure::Handshake {
                    mode: tls.mode,
                    error,
                })?;
            Ok(Stream::Tls(Box::new(stream)))
        }
        b'N' if tls.mode.requires_tls() => Err(TlsFailure::NotSupported { mode: tls.mode }),
        b'N' => Ok(Stream::Plain(tcp)),
        other => Err(TlsFailure::Io(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("the server answered the SSLRequest with {other:#04x}, neither S nor N"),
        ))),
    }
}

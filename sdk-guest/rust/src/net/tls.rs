//! TLS done by the host over a [`TcpStream`]: the guest asks, the host runs the handshake with
//! rustls and checks the server's certificate; no cryptography is compiled into the guest.

use std::fmt;
use std::io;

use wasip2::sockets::tcp::TcpSocket;

use super::bindings::plinth::tls::client as wit;
use super::streams::Streams;
use super::tcp::TcpStream;

/// What the host checks about the server's certificate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verification {
    /// The chain leads to a trusted root and the certificate names the server. The default.
    Full,
    /// The chain leads to a trusted root; the name in the certificate is not checked
    /// (libpq's `verify-ca`).
    ChainOnly,
    /// Nothing: encrypted, but the server is not authenticated (libpq's `require` without a
    /// root). Only for what a user explicitly asked for.
    None,
}

/// How to set up a TLS session: the server's name, what to trust, and the client's identity.
#[derive(Clone)]
pub struct TlsOptions {
    server_name: String,
    verification: Verification,
    roots: String,
    system_roots: bool,
    identity: Option<(String, String)>,
    alpn: Vec<String>,
}

impl fmt::Debug for TlsOptions {
    // Never shows the private key.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsOptions")
            .field("server_name", &self.server_name)
            .field("verification", &self.verification)
            .field("roots", &!self.roots.is_empty())
            .field("system_roots", &self.system_roots)
            .field("identity", &self.identity.is_some())
            .field("alpn", &self.alpn)
            .finish()
    }
}

impl TlsOptions {
    /// A full check of the server `server_name` (a DNS name or an IP address) against the
    /// system's trusted roots.
    pub fn new(server_name: impl Into<String>) -> TlsOptions {
        TlsOptions {
            server_name: server_name.into(),
            verification: Verification::Full,
            roots: String::new(),
            system_roots: true,
            identity: None,
            alpn: Vec::new(),
        }
    }

    /// How much of the server's certificate is checked.
    pub fn verification(mut self, verification: Verification) -> TlsOptions {
        self.verification = verification;
        self
    }

    /// Trusts the root certificates in `pem` (one or more), instead of the system's: call
    /// [`system_roots(true)`](Self::system_roots) after it to trust both.
    pub fn roots(mut self, pem: impl Into<String>) -> TlsOptions {
        self.roots = pem.into();
        self.system_roots = false;
        self
    }

    /// Whether the system's trusted roots are trusted too.
    pub fn system_roots(mut self, trusted: bool) -> TlsOptions {
        self.system_roots = trusted;
        self
    }

    /// Presents a client certificate: its chain and private key, PEM.
    pub fn identity(
        mut self,
        certificate_chain: impl Into<String>,
        private_key: impl Into<String>,
    ) -> TlsOptions {
        self.identity = Some((certificate_chain.into(), private_key.into()));
        self
    }

    /// Offers application protocols (ALPN), most preferred first.
    pub fn alpn<S: Into<String>>(mut self, protocols: impl IntoIterator<Item = S>) -> TlsOptions {
        self.alpn = protocols.into_iter().map(Into::into).collect();
        self
    }

    fn to_wit(&self) -> wit::Options {
        wit::Options {
            server_name: self.server_name.clone(),
            verification: match self.verification {
                Verification::Full => wit::Verification::Full,
                Verification::ChainOnly => wit::Verification::ChainOnly,
                Verification::None => wit::Verification::None,
            },
            roots: self.roots.clone(),
            system_roots: self.system_roots,
            identity: (self.identity.as_ref()).map(|(chain, key)| wit::Identity {
                certificate_chain: chain.clone(),
                private_key: key.clone(),
            }),
            alpn: self.alpn.clone(),
        }
    }
}

/// Why a TLS session could not be set up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsErrorKind {
    /// The server's certificate chain leads to no trusted root.
    UnknownIssuer,
    /// The server's certificate does not name the server.
    NameMismatch,
    /// The server's certificate has expired or is not valid yet.
    Expired,
    /// The server's certificate is unusable for another reason.
    BadCertificate,
    /// The server ended the handshake: it refused the client's certificate, or shares no
    /// protocol version or cipher with the host.
    RefusedByServer,
    /// The options are unusable: a malformed root or identity, an invalid server name.
    InvalidOptions,
    /// The connection failed during the handshake, or the server does not speak TLS.
    Connection,
}

/// A TLS session that could not be set up: why, and the host's message for a person.
#[derive(Debug, Clone)]
pub struct TlsError {
    kind: TlsErrorKind,
    message: String,
}

impl TlsError {
    /// Why.
    pub fn kind(&self) -> TlsErrorKind {
        self.kind
    }
}

impl fmt::Display for TlsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for TlsError {}

impl From<wit::Error> for TlsError {
    fn from(error: wit::Error) -> TlsError {
        let kind = match error.code {
            wit::ErrorCode::UnknownIssuer => TlsErrorKind::UnknownIssuer,
            wit::ErrorCode::NameMismatch => TlsErrorKind::NameMismatch,
            wit::ErrorCode::Expired => TlsErrorKind::Expired,
            wit::ErrorCode::BadCertificate => TlsErrorKind::BadCertificate,
            wit::ErrorCode::RefusedByServer => TlsErrorKind::RefusedByServer,
            wit::ErrorCode::InvalidOptions => TlsErrorKind::InvalidOptions,
            wit::ErrorCode::Connection => TlsErrorKind::Connection,
        };
        TlsError {
            kind,
            message: error.message,
        }
    }
}

/// An established TLS session over a TCP connection: `Read` and `Write` of the plaintext.
pub struct TlsStream {
    streams: Streams,
    /// Kept open for as long as the session is.
    _socket: TcpSocket,
    protocol_version: String,
    cipher_suite: String,
    alpn: Option<String>,
}

impl TlsStream {
    /// The protocol version: `TLSv1.3` or `TLSv1.2`.
    pub fn protocol_version(&self) -> &str {
        &self.protocol_version
    }

    /// The negotiated cipher suite, e.g. `TLS13_AES_256_GCM_SHA384`.
    pub fn cipher_suite(&self) -> &str {
        &self.cipher_suite
    }

    /// The application protocol the server chose, if ALPN was offered and accepted.
    pub fn alpn(&self) -> Option<&str> {
        self.alpn.as_deref()
    }
}

impl TcpStream {
    /// Sets up TLS over this connection, which may have carried plaintext before (a
    /// PostgreSQL SSLRequest, a STARTTLS): the host runs the handshake and checks the server's
    /// certificate as `options` say. Write and flush everything the plaintext phase needs
    /// before: the connection's streams pass to the host.
    pub fn into_tls(self, options: &TlsOptions) -> Result<TlsStream, TlsError> {
        let TcpStream { streams, socket } = self;
        let session = wit::upgrade(streams.input, streams.output, &options.to_wit())?;
        Ok(TlsStream {
            streams: Streams {
                input: session.input,
                output: session.output,
            },
            _socket: socket,
            protocol_version: session.protocol_version,
            cipher_suite: session.cipher_suite,
            alpn: session.alpn,
        })
    }
}

impl io::Read for TlsStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.streams.read(buf)
    }
}

impl io::Write for TlsStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.streams.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.streams.flush()
    }
}

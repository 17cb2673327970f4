//! A PostgreSQL connection over the SDK's TCP stream (`wasi:sockets`, subject to the sandbox's
//! grants), with TLS as `sslmode` says (see [`crate::tls`]), speaking the wire protocol through
//! `postgres-protocol`: the startup handshake with cleartext, md5 or SCRAM-SHA-256
//! authentication (or a client certificate), then simple queries whose rows come back as text.
//!
//! The password is used only to answer the server's challenge; it never appears in an error.

use std::fmt;
use std::io::{self, Read, Write};
use std::time::Duration;

use bytes::BytesMut;
use fallible_iterator::FallibleIterator;
use postgres_protocol::authentication::{self, sasl};
use postgres_protocol::message::{backend, frontend};

use plinth_sdk::net::TcpStream;

use crate::tls::{SslMode, Stream, Tls, TlsFailure, negotiate};

/// Where and as whom to connect.
#[derive(Clone)]
pub(crate) struct Target {
    pub(crate) host: String,
    pub(crate) port: u16,
    pub(crate) username: String,
    pub(crate) password: Option<String>,
    pub(crate) connect_timeout: Option<Duration>,
    pub(crate) tls: Tls,
}

impl fmt::Debug for Target {
    // Never shows the password nor the key.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}@{}:{} ({:?})",
            self.username, self.host, self.port, self.tls
        )
    }
}

/// Why a connection or a statement failed.
#[derive(Debug)]
pub(crate) enum DbError {
    /// The socket failed, or the server broke the protocol.
    Io { what: String, source: io::Error },
    /// The server refused: its SQLSTATE and message.
    Server { code: String, message: String },
    /// The server asks for an authentication method this client does not speak.
    Unsupported(String),
    /// TLS could not be set up as `sslmode` asks.
    Tls(TlsFailure),
    /// The server refused a connection without TLS (its message), which `sslmode` forbade.
    RequiresTls { mode: SslMode, message: String },
}

impl DbError {
    /// The SQLSTATE of a server error.
    pub(crate) fn code(&self) -> Option<&str> {
        match self {
            DbError::Server { code, .. } => Some(code),
            _ => None,
        }
    }
}

impl fmt::Display for DbError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DbError::Io { what, source } => write!(f, "{what}: {source}"),
            DbError::Server { code, message } => write!(f, "{message} (SQLSTATE {code})"),
            DbError::Unsupported(what) => f.write_str(what),
            DbError::Tls(failure) => failure.fmt(f),
            DbError::RequiresTls { mode, message } => write!(
                f,
                "{message}: the server requires SSL for this connection, and sslmode is \
                 `{}`; set `postgresql:sslmode` to `verify-full` (or `require`)",
                mode.as_str()
            ),
        }
    }
}

/// SQLSTATEs the resources react to.
pub(crate) mod sqlstate {
    /// The database named in the startup message does not exist.
    pub(crate) const INVALID_CATALOG_NAME: &str = "3D000";
}

/// A row of a result, every column as text (`None`: SQL NULL).
pub(crate) type Row = Vec<Option<String>>;

/// An open, authenticated session.
pub(crate) struct Connection {
    stream: Stream,
    inbox: BytesMut,
    outbox: BytesMut,
}

impl Connection {
    /// Connects to `database` on the server `target` names and authenticates, with TLS as its
    /// `sslmode` says: `allow` tries without TLS first, `prefer` with TLS first, each falling
    /// back to the other as libpq does.
    pub(crate) fn open(target: &Target, database: &str) -> Result<Connection, DbError> {
        match target.tls.mode {
            SslMode::Disable => Connection::open_with(target, database, false),
            SslMode::Allow => match Connection::open_with(target, database, false) {
                Err(DbError::RequiresTls { .. }) => Connection::open_with(target, database, true),
                other => other,
            },
            SslMode::Prefer => match Connection::open_with(target, database, true) {
                Err(DbError::Tls(failure)) if failure.handshake_failed() => {
                    Connection::open_with(target, database, false)
                }
                other => other,
            },
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => {
                Connection::open_with(target, database, true)
            }
        }
    }

    /// Connects with TLS if `tls` (if the server declines, plain unless the mode requires TLS).
    fn open_with(target: &Target, database: &str, tls: bool) -> Result<Connection, DbError> {
        let tcp = connect(target)?;
        let stream = if tls {
            negotiate(tcp, &target.host, &target.tls).map_err(DbError::Tls)?
        } else {
            Stream::Plain(tcp)
        };
        let encrypted = matches!(stream, Stream::Tls(_));
        Connection::start(stream, target, database).map_err(|error| match error {
            DbError::Server { code, message }
                if !encrypted && refused_plaintext(&code, &message) =>
            {
                DbError::RequiresTls {
                    mode: target.tls.mode,
                    message,
                }
            }
            other => other,
        })
    }

    /// The startup message and authentication, on a connection just opened.
    fn start(stream: Stream, target: &Target, database: &str) -> Result<Connection, DbError> {
        let mut conn = Connection {
            stream,
            inbox: BytesMut::with_capacity(8192),
            outbox: BytesMut::with_capacity(1024),
        };
        let params = [
            ("user", target.username.as_str()),
            ("database", database),
            ("client_encoding", "UTF8"),
            ("application_name", "plinth-postgresql"),
        ];
        frontend::startup_message(params, &mut conn.outbox).map_err(io_error("startup"))?;
        conn.flush()?;
        conn.authenticate(target)?;
        // Parameter statuses and the backend key, then ready.
        loop {
            match conn.receive()? {
                backend::Message::ReadyForQuery(_) => return Ok(conn),
                backend::Message::ErrorResponse(body) => return Err(server_error(&body)),
                _ => {}
            }
        }
    }

    fn authenticate(&mut self, target: &Target) -> Result<(), DbError> {
        let password = || {
            target.password.as_deref().ok_or_else(|| {
                DbError::Unsupported(format!(
                    "the server asks role `{}` for a password and the provider has none: set \
                     `postgresql:password` (as a secret)",
                    target.username
                ))
            })
        };
        match self.receive()? {
            backend::Message::AuthenticationOk => return Ok(()),
            backend::Message::AuthenticationCleartextPassword => {
                frontend::password_message(password()?.as_bytes(), &mut self.outbox)
                    .map_err(io_error("password"))?;
            }
            backend::Message::AuthenticationMd5Password(body) => {
                let hash = authentication::md5_hash(
                    target.username.as_bytes(),
                    password()?.as_bytes(),
                    body.salt(),
                );
                frontend::password_message(hash.as_bytes(), &mut self.outbox)
                    .map_err(io_error("password"))?;
            }
            backend::Message::AuthenticationSasl(body) => {
                let offered: Vec<String> = body
                    .mechanisms()
                    .map(|m| Ok(m.to_owned()))
                    .collect()
                    .map_err(io_error("SASL mechanisms"))?;
                if !offered.iter().any(|m| m == sasl::SCRAM_SHA_256) {
                    return Err(DbError::Unsupported(format!(
                        "the server offers SASL mechanisms {offered:?}; this provider speaks \
                         SCRAM-SHA-256 without channel binding"
                    )));
                }
                self.scram(password()?)?;
            }
            backend::Message::ErrorResponse(body) => return Err(server_error(&body)),
            _ => {
                return Err(DbError::Unsupported(
                    "the server asks for an authentication method this provider does not \
                     speak (it speaks password, md5 and SCRAM-SHA-256)"
                        .to_owned(),
                ));
            }
        }
        self.flush()?;
        match self.receive()? {
            backend::Message::AuthenticationOk => Ok(()),
            backend::Message::ErrorResponse(body) => Err(server_error(&body)),
            _ => Err(protocol("an unexpected message after authentication")),
        }
    }

    /// The SCRAM-SHA-256 exchange, up to the server's final message.
    fn scram(&mut self, password: &str) -> Result<(), DbError> {
        let mut scram =
            sasl::ScramSha256::new(password.as_bytes(), sasl::ChannelBinding::unsupported());
        frontend::sasl_initial_response(sasl::SCRAM_SHA_256, scram.message(), &mut self.outbox)
            .map_err(io_error("SASL"))?;
        self.flush()?;
        match self.receive()? {
            backend::Message::AuthenticationSaslContinue(body) => {
                scram.update(body.data()).map_err(io_error("SCRAM"))?;
            }
            backend::Message::ErrorResponse(body) => return Err(server_error(&body)),
            _ => return Err(protocol("an unexpected message during SCRAM")),
        }
        frontend::sasl_response(scram.message(), &mut self.outbox).map_err(io_error("SASL"))?;
        self.flush()?;
        match self.receive()? {
            backend::Message::AuthenticationSaslFinal(body) => {
                // Verifies the server's signature: the server knew the password too.
                scram.finish(body.data()).map_err(io_error("SCRAM"))
            }
            backend::Message::ErrorResponse(body) => Err(server_error(&body)),
            _ => Err(protocol("an unexpected message during SCRAM")),
        }
    }

    /// Runs `sql` (one or more statements, as one implicit transaction) and returns the rows of
    /// the last statement that returned any.
    pub(crate) fn query(&mut self, sql: &str) -> Result<Vec<Row>, DbError> {
        frontend::query(sql, &mut self.outbox).map_err(io_error("query"))?;
        self.flush()?;
        let mut rows = Vec::new();
        let mut failure = None;
        loop {
            match self.receive()? {
                backend::Message::RowDescription(_) => rows.clear(),
                backend::Message::DataRow(body) => rows.push(row(&body)?),
                backend::Message::ErrorResponse(body) => failure = Some(server_error(&body)),
                backend::Message::ReadyForQuery(_) => break,
                _ => {}
            }
        }
        match failure {
            Some(error) => Err(error),
            None => Ok(rows),
        }
    }

    /// Runs statements whose rows do not matter.
    pub(crate) fn execute(&mut self, sql: &str) -> Result<(), DbError> {
        self.query(sql).map(drop)
    }

    fn flush(&mut self) -> Result<(), DbError> {
        self.stream
            .write_all(&self.outbox)
            .and_then(|()| self.stream.flush())
            .map_err(io_error("sending to the server"))?;
        self.outbox.clear();
        Ok(())
    }

    /// The next message from the server; notices are skipped.
    fn receive(&mut self) -> Result<backend::Message, DbError> {
        loop {
            if let Some(message) =
                backend::Message::parse(&mut self.inbox).map_err(io_error("a server message"))?
            {
                if matches!(message, backend::Message::NoticeResponse(_)) {
                    continue;
                }
                return Ok(message);
            }
            let mut chunk = [0u8; 8192];
            let read = self
                .stream
                .read(&mut chunk)
                .map_err(io_error("reading from the server"))?;
            if read == 0 {
                return Err(protocol("the server closed the connection"));
            }
            self.inbox.extend_from_slice(&chunk[..read]);
        }
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        frontend::terminate(&mut self.outbox);
        // The session ends either way; a failed goodbye changes nothing.
        let _ = (self.stream.write_all(&self.outbox)).and_then(|()| self.stream.flush());
    }
}

/// A TCP connection to the first address of `target` that answers.
fn connect(target: &Target) -> Result<TcpStream, DbError> {
    TcpStream::connect(&target.host, target.port, target.connect_timeout).map_err(|source| {
        DbError::Io {
            what: format!("connecting to {}:{}", target.host, target.port),
            source,
        }
    })
}

/// Whether the server's refusal says it takes no connection without TLS from here:
/// `pg_hba.conf` has only `hostssl` lines for it ("no encryption" since PostgreSQL 12, "SSL off"
/// before).
fn refused_plaintext(code: &str, message: &str) -> bool {
    code == "28000" && (message.ends_with("no encryption") || message.ends_with("SSL off"))
}

fn row(body: &backend::DataRowBody) -> Result<Row, DbError> {
    let buffer = body.buffer();
    body.ranges()
        .map(|range| Ok(range.map(|r| String::from_utf8_lossy(&buffer[r]).into_owned())))
        .collect()
        .map_err(io_error("a row"))
}

fn server_error(body: &backend::ErrorResponseBody) -> DbError {
    let mut code = String::new();
    let mut message = String::new();
    let mut fields = body.fields();
    while let Ok(Some(field)) = fields.next() {
        match field.type_() {
            b'C' => code = String::from_utf8_lossy(field.value_bytes()).into_owned(),
            b'M' => message = String::from_utf8_lossy(field.value_bytes()).into_owned(),
            _ => {}
        }
    }
    DbError::Server { code, message }
}

fn io_error(what: &'static str) -> impl Fn(io::Error) -> DbError {
    move |source| DbError::Io {
        what: what.to_owned(),
        source,
    }
}

fn protocol(what: &str) -> DbError {
    DbError::Io {
        what: "talking to the server".to_owned(),
        source: io::Error::new(io::ErrorKind::InvalidData, what.to_owned()),
    }
}

//! `plinth:tls/client`: TLS done by the host over a connection the guest opened. The guest
//! hands over the streams of a `wasi:sockets` connection, which the sandbox let it open only
//! to a granted endpoint; the host runs the handshake with rustls, checks the server's
//! certificate as asked, and hands back the streams of the session. No guest carries
//! cryptography, and none can get the certificate check wrong.
//!
//! Not `wasmtime-wasi-tls` (the draft `wasi:tls`): it takes neither a root nor a client
//! certificate from the guest, and always checks the name, while a database client needs all
//! three choices (libpq's `verify-full`, `verify-ca`, `require`).

mod transport;
mod verify;

use std::time::Instant;

use rustls::pki_types::ServerName;
use wasmtime::component::{HasData, Resource, ResourceTable};
use wasmtime_wasi::p2::pipe::{AsyncReadStream, AsyncWriteStream};
use wasmtime_wasi::p2::{DynInputStream, DynOutputStream};

pub(crate) use bindings::plinth::tls::client;
use client::{ErrorCode, Options, Session};
use transport::Transport;
use verify::{Request, Verification};

use crate::sandbox::net::NetPolicy;

mod bindings {
    wasmtime::component::bindgen!({
        path: "../../wit/tls",
        world: "plinth:tls/imports",
        imports: { default: async | trappable },
        with: { "wasi:io": wasmtime_wasi::p2::bindings::io },
    });
}

/// How much the session's output stream accepts before the guest must wait for it to drain.
const WRITE_BUDGET: usize = 64 * 1024;

/// What `plinth:tls/client` is linked with: the sandbox's [`TlsClient`].
pub(crate) struct TlsClientData;

impl HasData for TlsClientData {
    type Data<'a> = TlsClient<'a>;
}

/// The host's side of `plinth:tls/client` for one sandbox: the guest's resources, and the
/// deadline the handshake must end by.
pub(crate) struct TlsClient<'a> {
    pub(crate) table: &'a mut ResourceTable,
    /// The network policy: which endpoints may skip verification (`tls-insecure`).
    pub(crate) net: &'a NetPolicy,
    pub(crate) deadline: Instant,
    /// Set when a handshake ran into the deadline.
    pub(crate) timed_out: &'a mut bool,
}

fn failure(code: ErrorCode, message: impl Into<String>) -> client::Error {
    client::Error {
        code,
        message: message.into(),
    }
}

impl client::Host for TlsClient<'_> {
    async fn upgrade(
        &mut self,
        input: Resource<DynInputStream>,
        output: Resource<DynOutputStream>,
        options: Options,
    ) -> wasmtime::Result<Result<Session, client::Error>> {
        // Consumed whatever happens next, as the interface says.
        let input = self.table.delete(input);
        let output = self.table.delete(output);
        let (input, output) = match (input, output) {
            (Ok(input), Ok(output)) => (input, output),
            (Err(e), _) | (_, Err(e)) => {
                return Ok(Err(failure(
                    ErrorCode::InvalidOptions,
                    format!(
                        "the connection's streams cannot be handed over ({e}): drop their \
                         pollables first"
                    ),
                )));
            }
        };
        let shown_name = plinth_engine::shown::escape_controls(&options.server_name);
        let Ok(name) = ServerName::try_from(options.server_name.clone()) else {
            return Ok(Err(failure(
                ErrorCode::InvalidOptions,
                format!("`{shown_name}` is neither a DNS name nor an IP address"),
            )));
        };
        let request = Request {
            verification: match options.verification {
                client::Verification::Full => Verification::Full,
                client::Verification::ChainOnly => Verification::ChainOnly,
                client::Verification::None => Verification::None,
            },
            roots: &options.roots,
            system_roots: options.system_roots,
            identity: (options.identity.as_ref())
                .map(|id| (id.certificate_chain.as_str(), id.private_key.as_str())),
            alpn: options.alpn.iter().map(|p| p.as_bytes().to_vec()).collect(),
        };
        // Less than a full check only where the project allows it for that endpoint.
        let skipped = match request.verification {
            Verification::Full => None,
            Verification::ChainOnly => Some("the chain but not the name"),
            Verification::None => Some("nothing"),
        };
        if let Some(what) = skipped
            && let Err(message) = self.net.allows_unverified(&options.server_name, what)
        {
            return Ok(Err(failure(ErrorCode::InvalidOptions, message)));
        }
        let config = match verify::client_config(&request) {
            Ok(config) => config,
            Err(message) => return Ok(Err(failure(ErrorCode::InvalidOptions, message))),
        };
        if request.verification == Verification::None {
            tracing::debug!(
                target: "plinth::guest",
                "a TLS session to `{shown_name}` without certificate verification, as asked"
            );
        }
        let handshake =
            tokio_rustls::TlsConnector::from(config).connect(name, Transport::new(input, output));
        let stream = match tokio::time::timeout_at(self.deadline.into(), handshake).await {
            Err(_) => {
                *self.timed_out = true;
                return Err(wasmtime::Error::msg("the call ran out of time"));
            }
            Ok(Err(error)) => return Ok(Err(explain(&error, &shown_name))),
            Ok(Ok(stream)) => stream,
        };
        let (_, session) = stream.get_ref();
        let protocol_version = match session.protocol_version() {
            Some(rustls::ProtocolVersion::TLSv1_3) => "TLSv1.3",
            Some(rustls::ProtocolVersion::TLSv1_2) => "TLSv1.2",
            _ => "unknown",
        };
        let cipher_suite = (session.negotiated_cipher_suite())
            .map(|s| format!("{:?}", s.suite()))
            .unwrap_or_default();
        let alpn = (session.alpn_protocol()).map(|p| String::from_utf8_lossy(p).into_owned());
        let (reader, writer) = tokio::io::split(stream);
        let input: DynInputStream = Box::new(AsyncReadStream::new(reader));
        let output: DynOutputStream = Box::new(AsyncWriteStream::new(WRITE_BUDGET, writer));
        Ok(Ok(Session {
            input: self.table.push(input)?,
            output: self.table.push(output)?,
            protocol_version: protocol_version.to_owned(),
            cipher_suite,
            alpn,
        }))
    }
}

/// Why the handshake with `server` failed, named as a person fixing it needs it.
fn explain(error: &std::io::Error, server: &str) -> client::Error {
    use rustls::{CertificateError as C, Error as E};
    let Some(tls) = error.get_ref().and_then(|e| e.downcast_ref::<E>()) else {
        return failure(
            ErrorCode::Connection,
            format!("the connection failed during the TLS handshake: {error}"),
        );
    };
    match tls {
        E::InvalidCertificate(C::UnknownIssuer) => failure(
            ErrorCode::UnknownIssuer,
            format!(
                "the certificate of `{server}` is not issued by a trusted root (unknown \
                 issuer): trust the root that signed it"
            ),
        ),
        E::InvalidCertificate(C::NotValidForNameContext { presented, .. }) => failure(
            ErrorCode::NameMismatch,
            format!(
                "the certificate of `{server}` is not valid for that name (host name \
                 mismatch): it names {}",
                presented_names(presented)
            ),
        ),
        E::InvalidCertificate(C::NotValidForName) => failure(
            ErrorCode::NameMismatch,
            format!(
                "the certificate of `{server}` is not valid for that name (host name mismatch)"
            ),
        ),
        E::InvalidCertificate(
            C::Expired | C::ExpiredContext { .. } | C::NotValidYet | C::NotValidYetContext { .. },
        ) => failure(
            ErrorCode::Expired,
            format!("the certificate of `{server}` is out of its validity period: {tls}"),
        ),
        E::InvalidCertificate(_) => failure(
            ErrorCode::BadCertificate,
            format!("the certificate of `{server}` is unusable: {tls}"),
        ),
        E::AlertReceived(alert) => failure(
            ErrorCode::RefusedByServer,
            format!("`{server}` refused the TLS handshake (alert: {alert:?})"),
        ),
        other => failure(
            ErrorCode::Connection,
            format!("the TLS handshake with `{server}` failed: {other}"),
        ),
    }
}

/// A name as rustls presents it (`DnsName("db.example")`), without the wrapping.
fn bare(name: &str) -> &str {
    (name.split_once("(\""))
        .and_then(|(_, inner)| inner.strip_suffix("\")"))
        .unwrap_or(name)
}

/// The names a certificate presents, escaped and shortened for a message.
fn presented_names(names: &[String]) -> String {
    const SHOWN: usize = 5;
    if names.is_empty() {
        return "no name".to_owned();
    }
    let mut shown: Vec<String> = (names.iter().take(SHOWN))
        .map(|n| format!("`{}`", plinth_engine::shown::escape_controls(bare(n))))
        .collect();
    if names.len() > SHOWN {
        shown.push(format!("and {} more", names.len() - SHOWN));
    }
    shown.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_names_a_certificate_carries_are_shown_escaped_and_few() {
        let names: Vec<String> = (0..8)
            .map(|i| format!("DnsName(\"n{i}.example\")"))
            .collect();
        let shown = presented_names(&names);
        assert!(shown.starts_with("`n0.example`, `n1.example`"), "{shown}");
        assert!(shown.ends_with("and 3 more"), "{shown}");
        let hostile = presented_names(&["a\n[fake] created\u{1b}[2K".to_owned()]);
        assert!(
            !hostile.contains('\n') && !hostile.contains('\u{1b}'),
            "{hostile}"
        );
        assert_eq!(presented_names(&[]), "no name");
    }

    #[test]
    fn handshake_failures_are_named_by_their_reason() {
        let tls = |e: rustls::Error| std::io::Error::new(std::io::ErrorKind::InvalidData, e);
        let cert = |c| tls(rustls::Error::InvalidCertificate(c));
        let unknown = explain(&cert(rustls::CertificateError::UnknownIssuer), "db");
        assert_eq!(unknown.code, ErrorCode::UnknownIssuer);
        assert!(
            unknown.message.contains("unknown issuer"),
            "{}",
            unknown.message
        );
        let name = explain(
            &cert(rustls::CertificateError::NotValidForNameContext {
                expected: ServerName::try_from("db").unwrap().to_owned(),
                presented: vec!["localhost".to_owned()],
            }),
            "db",
        );
        assert_eq!(name.code, ErrorCode::NameMismatch);
        assert!(
            name.message.contains("host name mismatch"),
            "{}",
            name.message
        );
        assert!(name.message.contains("`localhost`"), "{}", name.message);
        let alert = explain(
            &tls(rustls::Error::AlertReceived(
                rustls::AlertDescription::CertificateRequired,
            )),
            "db",
        );
        assert_eq!(alert.code, ErrorCode::RefusedByServer);
        let closed = explain(&std::io::ErrorKind::UnexpectedEof.into(), "db");
        assert_eq!(closed.code, ErrorCode::Connection);
    }
}

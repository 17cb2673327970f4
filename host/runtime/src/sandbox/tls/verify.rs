//! The host's TLS client settings for one handshake, from what the guest asked: the roots it
//! trusts, how much of the server's certificate is checked, and its own certificate.

use std::sync::{Arc, OnceLock};

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};

/// What the guest asked for, in the host's terms.
pub(crate) struct Request<'a> {
    pub(crate) verification: Verification,
    pub(crate) roots: &'a str,
    pub(crate) system_roots: bool,
    /// The certificate chain and the private key, PEM.
    pub(crate) identity: Option<(&'a str, &'a str)>,
    pub(crate) alpn: Vec<Vec<u8>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verification {
    Full,
    ChainOnly,
    None,
}

/// The client settings for `request`, or what is wrong with it (never quoting a key).
pub(crate) fn client_config(request: &Request<'_>) -> Result<Arc<ClientConfig>, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = verifier(request, &provider)?;
    let builder = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("no usable TLS version: {e}"))?
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    let mut config = match request.identity {
        None => builder.with_no_client_auth(),
        Some((chain, key)) => {
            let chain = certificates(chain, "the client certificate")?;
            let key = PrivateKeyDer::from_pem_slice(key.as_bytes()).map_err(|_| {
                "the client's private key is not a PEM private key (PKCS#8, PKCS#1 or SEC1)"
                    .to_owned()
            })?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| format!("the client certificate and key are unusable: {e}"))?
        }
    };
    config.alpn_protocols = request.alpn.clone();
    Ok(Arc::new(config))
}

/// The certificates in `pem`, at least one.
fn certificates(pem: &str, what: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = CertificateDer::pem_slice_iter(pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{what} is not PEM: {e}"))?;
    if certs.is_empty() {
        return Err(format!(
            "{what} holds no certificate (a PEM block `-----BEGIN CERTIFICATE-----`)"
        ));
    }
    Ok(certs)
}

/// The roots of the system's trust store, read once.
fn system_roots() -> &'static [CertificateDer<'static>] {
    static ROOTS: OnceLock<Vec<CertificateDer<'static>>> = OnceLock::new();
    ROOTS.get_or_init(|| {
        let found = rustls_native_certs::load_native_certs();
        for error in &found.errors {
            tracing::debug!("reading the system's trusted roots: {error}");
        }
        found.certs
    })
}

fn verifier(
    request: &Request<'_>,
    provider: &Arc<CryptoProvider>,
) -> Result<Arc<dyn ServerCertVerifier>, String> {
    let algorithms = provider.signature_verification_algorithms;
    if request.verification == Verification::None {
        return Ok(Arc::new(Unverified(algorithms)));
    }
    let mut roots = RootCertStore::empty();
    if !request.roots.trim().is_empty() {
        for cert in certificates(request.roots, "the trusted root")? {
            roots
                .add(cert)
                .map_err(|e| format!("a trusted root is not a usable CA certificate: {e}"))?;
        }
    }
    if request.system_roots {
        roots.add_parsable_certificates(system_roots().iter().cloned());
    }
    if roots.is_empty() {
        return Err(
            "no root to verify the server's certificate with: give a root \
                    certificate, or trust the system's roots"
                .to_owned(),
        );
    }
    let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .build()
        .map_err(|e| format!("the trusted roots are unusable: {e}"))?;
    Ok(match request.verification {
        Verification::ChainOnly => Arc::new(ChainOnly(webpki)),
        Verification::Full | Verification::None => webpki,
    })
}

/// Checks the chain to a trusted root and not the name in the certificate (libpq's
/// `verify-ca`).
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let checked =
            self.0
                .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now);
        match checked {
            // The name is checked last: a name mismatch means everything else held.
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// Accepts any certificate; the handshake's signatures are still checked against it, so the
/// peer holds the key of what it presented (libpq's `require` without a root).
#[derive(Debug)]
struct Unverified(WebPkiSupportedAlgorithms);

impl ServerCertVerifier for Unverified {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request<'a>(verification: Verification, roots: &'a str) -> Request<'a> {
        Request {
            verification,
            roots,
            system_roots: false,
            identity: None,
            alpn: Vec::new(),
        }
    }

    #[test]
    fn roots_that_are_not_pem_certificates_are_refused_saying_so() {
        let err = client_config(&request(Verification::Full, "not a certificate")).unwrap_err();
        assert!(err.contains("holds no certificate"), "{err}");
        let damaged = "-----BEGIN CERTIFICATE-----\nAAAA!!!!\n-----END CERTIFICATE-----\n";
        let err = client_config(&request(Verification::Full, damaged)).unwrap_err();
        assert!(err.contains("trusted root"), "{err}");
    }

    #[test]
    fn a_check_needs_a_root_and_none_needs_nothing() {
        let err = client_config(&request(Verification::ChainOnly, "")).unwrap_err();
        assert!(err.contains("no root to verify"), "{err}");
        assert!(client_config(&request(Verification::None, "")).is_ok());
    }

    #[test]
    fn a_malformed_client_key_is_refused_without_quoting_it() {
        let key =
            "-----BEGIN PRIVATE KEY-----\nc2VjcmV0LWtleS1ieXRlcw==\n-----END PRIVATE KEY-----\n";
        let cert = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
        let mut asked = request(Verification::None, "");
        asked.identity = Some((cert, key));
        let err = client_config(&asked).unwrap_err();
        assert!(!err.contains("c2VjcmV0"), "the key is quoted: {err}");
        asked.identity = Some((cert, "garbage"));
        let err = client_config(&asked).unwrap_err();
        assert!(err.contains("not a PEM private key"), "{err}");
        assert!(!err.contains("garbage"), "{err}");
    }
}

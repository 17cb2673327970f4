//! Certificates for a cluster that speaks TLS, made by the `openssl` binary for each cluster:
//! a CA, the server's certificate (for `localhost` only) and a client certificate for
//! [`CERT_USER`](crate::CERT_USER); and another CA that signed none of them.

use std::path::Path;
use std::process::Command;

use crate::{Error, Result, checked};

/// The PEM texts a test needs to connect to a TLS cluster.
#[derive(Debug, Clone)]
pub struct Tls {
    /// The CA that signed the server's and the client's certificates.
    pub ca: String,
    /// A CA that signed nothing of this cluster's: a wrong root.
    pub other_ca: String,
    /// The certificate of [`CERT_USER`](crate::CERT_USER), signed by `ca`.
    pub client_cert: String,
    /// Its private key (PKCS#8).
    pub client_key: String,
}

/// The one name the server's certificate carries.
pub const SERVER_NAME: &str = "localhost";

/// Makes the CAs and certificates in `dir`: `ca.crt`, `server.crt` and `server.key` for the
/// server, and returns what a client needs.
pub(crate) fn make(dir: &Path, client_user: &str) -> Result<Tls> {
    let key = |name: &str| dir.join(format!("{name}.key"));
    let crt = |name: &str| dir.join(format!("{name}.crt"));
    for ca in ["ca", "other-ca"] {
        openssl(
            dir,
            &[
                "req",
                "-x509",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:prime256v1",
                "-nodes",
                "-days",
                "3650",
                "-subj",
                &format!("/CN=plinth test {ca}"),
                "-addext",
                "basicConstraints=critical,CA:TRUE",
                "-addext",
                "keyUsage=critical,keyCertSign,cRLSign",
                "-keyout",
                &key(ca).display().to_string(),
                "-out",
                &crt(ca).display().to_string(),
            ],
        )?;
    }
    for (name, subject, extensions) in [
        (
            "server",
            SERVER_NAME,
            format!("subjectAltName=DNS:{SERVER_NAME}\nextendedKeyUsage=serverAuth\n"),
        ),
        (
            "client",
            client_user,
            "extendedKeyUsage=clientAuth\n".to_owned(),
        ),
    ] {
        let extfile = dir.join(format!("{name}.ext"));
        std::fs::write(
            &extfile,
            format!("basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\n{extensions}"),
        )
        .map_err(|e| Error(format!("cannot write {}: {e}", extfile.display())))?;
        let csr = dir.join(format!("{name}.csr"));
        openssl(
            dir,
            &[
                "req",
                "-new",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:prime256v1",
                "-nodes",
                "-subj",
                &format!("/CN={subject}"),
                "-keyout",
                &key(name).display().to_string(),
                "-out",
                &csr.display().to_string(),
            ],
        )?;
        openssl(
            dir,
            &[
                "x509",
                "-req",
                "-days",
                "3650",
                "-in",
                &csr.display().to_string(),
                "-CA",
                &crt("ca").display().to_string(),
                "-CAkey",
                &key("ca").display().to_string(),
                "-set_serial",
                &serial(name),
                "-extfile",
                &extfile.display().to_string(),
                "-out",
                &crt(name).display().to_string(),
            ],
        )?;
    }
    let read = |path: std::path::PathBuf| {
        std::fs::read_to_string(&path)
            .map_err(|e| Error(format!("cannot read {}: {e}", path.display())))
    };
    Ok(Tls {
        ca: read(crt("ca"))?,
        other_ca: read(crt("other-ca"))?,
        client_cert: read(crt("client"))?,
        client_key: read(key("client"))?,
    })
}

/// A serial number of its own for each certificate.
fn serial(name: &str) -> String {
    use std::hash::{BuildHasher, RandomState};
    let n = RandomState::new().hash_one(name) >> 1;
    format!("{n}")
}

fn openssl(dir: &Path, args: &[&str]) -> Result<()> {
    let output = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .map_err(|e| {
            Error(format!(
                "cannot run openssl ({e}): install it (Debian: openssl) to test TLS"
            ))
        })?;
    checked("openssl", &output)
}

//! Test support: an OIDC issuer of the tests' own on loopback, as GitHub Actions or GitLab is one: a discovery
//! document and a key set (JWKS) served over HTTP, and ID tokens signed with its keys, an RSA
//! key (RS256) and a P-256 key (ES256) that `openssl` makes for it. It counts the fetches of its
//! key set; it stops when dropped.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::JoinHandle;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

pub struct Issuer {
    /// `http://127.0.0.1:PORT`, the `iss` of its tokens.
    pub url: String,
    rsa: EncodingKey,
    ec: EncodingKey,
    /// An RSA key it does not publish, to sign tokens no key of it verifies.
    stranger: EncodingKey,
    fetches: Arc<AtomicUsize>,
    server: Arc<tiny_http::Server>,
    thread: Option<JoinHandle<()>>,
    _keys: tempfile::TempDir,
}

/// The id of its RSA key, and of its P-256 key.
pub const RSA_KID: &str = "rsa-1";
pub const EC_KID: &str = "ec-1";

fn openssl(args: &[&str]) -> Vec<u8> {
    let out = Command::new("openssl")
        .args(args)
        .output()
        .expect("running openssl");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// A new private key of `openssl genpkey` options `options`, in PEM, at `path`.
fn generate(path: &Path, options: &[&str]) -> Vec<u8> {
    let path = path.to_str().unwrap();
    openssl(&[&["genpkey", "-out", path][..], options].concat());
    std::fs::read(path).unwrap()
}

impl Issuer {
    pub fn start() -> Issuer {
        let keys = tempfile::tempdir().unwrap();
        let rsa_options = ["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"];
        let rsa_path = keys.path().join("rsa.pem");
        let rsa = generate(&rsa_path, &rsa_options);
        let stranger = generate(&keys.path().join("stranger.pem"), &rsa_options);
        let ec_path = keys.path().join("ec.pem");
        let ec = generate(
            &ec_path,
            &["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"],
        );
        // The public halves as JWK: the RSA modulus (the exponent is 65537), the P-256 point.
        let modulus = openssl(&[
            "rsa",
            "-in",
            rsa_path.to_str().unwrap(),
            "-noout",
            "-modulus",
        ]);
        let modulus = String::from_utf8(modulus).unwrap();
        let modulus = hex::decode(modulus.trim().trim_start_matches("Modulus=")).unwrap();
        let point = openssl(&[
            "pkey",
            "-in",
            ec_path.to_str().unwrap(),
            "-pubout",
            "-outform",
            "DER",
        ]);
        let point = &point[point.len() - 64..];
        let jwks = json!({ "keys": [
            { "kty": "RSA", "kid": RSA_KID, "use": "sig", "alg": "RS256",
              "n": B64.encode(&modulus), "e": "AQAB" },
            { "kty": "EC", "kid": EC_KID, "use": "sig", "crv": "P-256",
              "x": B64.encode(&point[..32]), "y": B64.encode(&point[32..]) },
            // A symmetric key in a key set must never verify anything.
            { "kty": "oct", "kid": "hmac-1", "k": B64.encode(b"a shared secret") },
        ]});

        let server = Arc::new(tiny_http::Server::http("127.0.0.1:0").unwrap());
        let url = format!("http://{}", server.server_addr().to_ip().unwrap());
        let fetches = Arc::new(AtomicUsize::new(0));
        let thread = {
            let (server, fetches, url) = (server.clone(), fetches.clone(), url.clone());
            std::thread::spawn(move || {
                for request in server.incoming_requests() {
                    let body = match request.url() {
                        "/.well-known/openid-configuration" => {
                            json!({ "issuer": url, "jwks_uri": format!("{url}/jwks") })
                        }
                        "/jwks" => {
                            fetches.fetch_add(1, Ordering::SeqCst);
                            jwks.clone()
                        }
                        _ => {
                            let _ = request.respond(tiny_http::Response::empty(404));
                            continue;
                        }
                    };
                    let _ = request.respond(tiny_http::Response::from_string(body.to_string()));
                }
            })
        };
        Issuer {
            url,
            rsa: EncodingKey::from_rsa_pem(&rsa).unwrap(),
            ec: EncodingKey::from_ec_pem(&ec).unwrap(),
            stranger: EncodingKey::from_rsa_pem(&stranger).unwrap(),
            fetches,
            server,
            thread: Some(thread),
            _keys: keys,
        }
    }

    /// How many times its key set was fetched.
    pub fn fetches(&self) -> usize {
        self.fetches.load(Ordering::SeqCst)
    }

    /// Claims as a CI job's ID token has them, valid from a minute ago for ten minutes, for
    /// `audience`; `extra` adds or replaces claims.
    pub fn claims(&self, audience: &str, extra: Value) -> Value {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let mut claims = json!({
            "iss": self.url, "aud": audience, "iat": now - 60, "nbf": now - 60,
            "exp": now + 600, "sub": "repo:octo/shop:ref:refs/heads/main",
            "repository": "octo/shop", "ref": "refs/heads/main",
        });
        for (name, value) in extra.as_object().unwrap() {
            claims[name] = value.clone();
        }
        claims
    }

    /// `claims` signed RS256 with its RSA key.
    pub fn rs256(&self, claims: &Value) -> String {
        self.signed(Algorithm::RS256, RSA_KID, &self.rsa, claims)
    }

    /// `claims` signed ES256 with its P-256 key.
    pub fn es256(&self, claims: &Value) -> String {
        self.signed(Algorithm::ES256, EC_KID, &self.ec, claims)
    }

    /// `claims` signed RS256 by a key it does not publish, under the id `kid`.
    pub fn by_a_stranger(&self, kid: &str, claims: &Value) -> String {
        self.signed(Algorithm::RS256, kid, &self.stranger, claims)
    }

    fn signed(&self, alg: Algorithm, kid: &str, key: &EncodingKey, claims: &Value) -> String {
        let mut header = Header::new(alg);
        header.kid = Some(kid.to_owned());
        jsonwebtoken::encode(&header, claims, key).unwrap()
    }

    /// A token whose header is `header`, as written, with an empty signature.
    pub fn unsigned(header: &Value, claims: &Value) -> String {
        let part = |v: &Value| B64.encode(v.to_string());
        format!("{}.{}.", part(header), part(claims))
    }
}

impl Drop for Issuer {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

//! An issuer's signing keys: found through its discovery document
//! (`/.well-known/openid-configuration` → `jwks_uri`), fetched with timeouts and a size cap, and
//! kept. A token naming a key the service does not have makes it fetch them again (the issuer
//! rotated its keys), at most once per `keys_refetch_interval`: a stream of tokens naming keys
//! nobody has cannot make the service hammer the issuer.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use base64::Engine as _;
use jsonwebtoken::{Algorithm, DecodingKey};
use serde::Deserialize;
use serde::de::DeserializeOwned;

use super::config::check_issuer_url;
use crate::checks;

/// The longest a fetch of a document may take, and the longest to connect.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// The largest discovery document or key set read: real ones are a few kilobytes.
const MAX_DOCUMENT: u64 = 256 << 10;
/// Keys are fetched again after this even when every token names a known one, so that a key
/// the issuer withdrew stops being trusted.
const MAX_AGE: Duration = Duration::from_secs(3600);
/// The most keys kept of one issuer.
const MAX_KEYS: usize = 100;

/// A key a token may be signed with, and the one algorithm it verifies.
#[derive(Clone)]
pub(crate) struct Key {
    pub decoding: DecodingKey,
    pub algorithm: Algorithm,
}

/// Why no key could be had.
#[derive(Debug, thiserror::Error)]
pub(crate) enum KeyError {
    #[error("{issuer} publishes no key `{kid}` (the token names it): its keys were fetched {ago}")]
    Unknown {
        issuer: String,
        kid: String,
        ago: String,
    },
    #[error("cannot fetch the signing keys of {issuer}: {reason}")]
    Unreachable { issuer: String, reason: String },
}

/// The keys of one issuer, fetched on demand.
pub(crate) struct KeyCache {
    issuer: String,
    refetch_interval: Duration,
    cached: tokio::sync::Mutex<Cached>,
}

#[derive(Default)]
struct Cached {
    keys: HashMap<String, Key>,
    /// When the keys were last fetched (or a fetch last failed).
    fetched: Option<Instant>,
    /// Why the last fetch failed, if it did.
    failed: Option<String>,
}

impl KeyCache {
    pub fn new(issuer: &str, refetch_interval: Duration) -> KeyCache {
        KeyCache {
            issuer: issuer.to_owned(),
            refetch_interval,
            cached: Default::default(),
        }
    }

    /// The key named `kid`, the issuer's keys fetched first if none are known yet, if they are
    /// old, or if `kid` is not among them and they were fetched over `refetch_interval` ago.
    /// One fetch at a time: requests arriving meanwhile wait for its keys.
    pub async fn key(&self, kid: &str) -> Result<Key, KeyError> {
        let mut cached = self.cached.lock().await;
        let age = cached.fetched.map(|at| at.elapsed());
        let stale = age.is_none_or(|age| age > MAX_AGE);
        let missing = !cached.keys.contains_key(kid);
        if stale || (missing && age.is_none_or(|age| age >= self.refetch_interval)) {
            let issuer = self.issuer.clone();
            let fetched = tokio::task::spawn_blocking(move || fetch(&issuer))
                .await
                .unwrap_or_else(|e| Err(format!("the fetch failed: {e}")));
            // A failure counts as a fetch too: an issuer that is down is not asked again for
            // every token.
            cached.fetched = Some(Instant::now());
            match fetched {
                Ok(keys) => (cached.keys, cached.failed) = (keys, None),
                Err(reason) => cached.failed = Some(reason),
            }
        }
        if let Some(key) = cached.keys.get(kid) {
            return Ok(key.clone());
        }
        // Keys not had because the issuer could not be reached are not "unknown".
        if let Some(reason) = &cached.failed {
            return Err(KeyError::Unreachable {
                issuer: self.issuer.clone(),
                reason: reason.clone(),
            });
        }
        Err(KeyError::Unknown {
            issuer: self.issuer.clone(),
            kid: checks::shown(kid),
            ago: match cached.fetched.map(|at| at.elapsed().as_secs()) {
                Some(secs) => format!(
                    "{secs} s ago, and are fetched again at most every {}",
                    humantime::format_duration(self.refetch_interval)
                ),
                None => "never".to_owned(),
            },
        })
    }
}

#[derive(Deserialize)]
struct Discovery {
    issuer: String,
    jwks_uri: String,
}

#[derive(Deserialize)]
struct KeySet {
    keys: Vec<serde_json::Value>,
}

/// The signing keys `issuer` publishes, by key id.
fn fetch(issuer: &str) -> Result<HashMap<String, Key>, String> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(FETCH_TIMEOUT))
        .timeout_connect(Some(CONNECT_TIMEOUT))
        // A redirect could lead from https to anywhere.
        .max_redirects(0)
        .build()
        .into();
    let discovery_url = format!(
        "{}/.well-known/openid-configuration",
        issuer.trim_end_matches('/')
    );
    let discovery: Discovery = get(&agent, &discovery_url)?;
    if discovery.issuer != issuer {
        return Err(format!(
            "its discovery document names the issuer `{}`, not itself",
            checks::shown(&discovery.issuer)
        ));
    }
    check_issuer_url(&discovery.jwks_uri).map_err(|e| format!("its `jwks_uri` is refused: {e}"))?;
    let set: KeySet = get(&agent, &discovery.jwks_uri)?;
    let keys: HashMap<String, Key> = set.keys.iter().filter_map(key).take(MAX_KEYS).collect();
    if keys.is_empty() {
        return Err("it publishes no RS256 or ES256 signing key with a key id".to_owned());
    }
    Ok(keys)
}

/// The JSON document at `url`, read up to [`MAX_DOCUMENT`] bytes.
fn get<T: DeserializeOwned>(agent: &ureq::Agent, url: &str) -> Result<T, String> {
    let mut answer = agent
        .get(url)
        .call()
        .map_err(|e| format!("GET {url}: {e}"))?;
    let body = (answer.body_mut().with_config().limit(MAX_DOCUMENT))
        .read_to_vec()
        .map_err(|e| format!("GET {url}: {e}"))?;
    serde_json::from_slice(&body).map_err(|e| format!("GET {url}: not the JSON expected: {e}"))
}

/// A key of a key set as the service uses it: RSA keys verify RS256, P-256 keys ES256, and
/// nothing else (no symmetric key, whatever a key set holds: a public key must never become an
/// HMAC secret). Keys for encryption, or without an id, are left out.
fn key(jwk: &serde_json::Value) -> Option<(String, Key)> {
    let field = |name: &str| jwk.get(name).and_then(|v| v.as_str());
    let kid = field("kid")?;
    if field("use").is_some_and(|u| u != "sig") {
        return None;
    }
    let (algorithm, decoding) = match field("kty")? {
        "RSA" => {
            let (n, e) = (field("n")?, field("e")?);
            (
                Algorithm::RS256,
                DecodingKey::from_rsa_components(n, e).ok()?,
            )
        }
        "EC" if field("crv") == Some("P-256") => {
            let (x, y) = (field("x")?, field("y")?);
            // Both coordinates of a P-256 point are 32 bytes.
            let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
            let sized = |c: &str| b64.decode(c).is_ok_and(|b| b.len() == 32);
            if !sized(x) || !sized(y) {
                return None;
            }
            (
                Algorithm::ES256,
                DecodingKey::from_ec_components(x, y).ok()?,
            )
        }
        _ => return None,
    };
    if field("alg").is_some_and(|alg| alg != format!("{algorithm:?}")) {
        return None;
    }
    Some((
        kid.to_owned(),
        Key {
            decoding,
            algorithm,
        },
    ))
}

//! Verifying an ID token: its header first (RS256 or ES256, a key id), then its issuer (one the
//! configuration names), then the signature with that issuer's key, then `exp`, `nbf`, `iat`
//! and `aud` with a small leeway. Each refusal says what failed, never quoting the token.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use jsonwebtoken::Validation;
use jsonwebtoken::errors::ErrorKind;
use serde_json::{Map, Value};

use super::config::{Issuer, OidcConfig};
use super::keys::KeyError;
use crate::checks;
use crate::error::ApiError;

/// The clock skew tolerated between the issuer and the service, in seconds.
const LEEWAY: u64 = 30;
/// The longest ID token read: real ones are one or two kilobytes.
const MAX_TOKEN: usize = 16 << 10;

/// The issuer of `token` and its claims, once the token is proven to be that issuer's, for
/// this service, and valid now.
pub(crate) async fn verify<'c>(
    config: &'c OidcConfig,
    token: &str,
) -> Result<(&'c Issuer, Map<String, Value>), ApiError> {
    let token = token.trim();
    if token.len() > MAX_TOKEN {
        return Err(refused(format!(
            "is {} bytes long, more than the {MAX_TOKEN} an ID token may be",
            token.len()
        )));
    }
    let parts: Vec<&str> = token.split('.').collect();
    let [header, payload, _] = parts[..] else {
        return Err(refused(
            "is not a JWT (three base64url parts joined by dots)".into(),
        ));
    };
    let header = part(header, "header")?;
    let alg = header.get("alg").and_then(Value::as_str).unwrap_or("");
    if !matches!(alg, "RS256" | "ES256") {
        return Err(refused(format!(
            "is signed with `{}`: the service accepts RS256 and ES256 only",
            checks::shown(alg)
        )));
    }
    let kid = (header.get("kid").and_then(Value::as_str))
        .ok_or_else(|| refused("names no signing key (`kid` in its header)".into()))?;
    // Read before the signature is checked only to know whose key checks it.
    let unverified = part(payload, "payload")?;
    let iss = unverified.get("iss").and_then(Value::as_str).unwrap_or("");
    let issuer = (config.issuers.iter().find(|i| i.url == iss)).ok_or_else(|| {
        let trusted: Vec<&str> = config.issuers.iter().map(|i| i.url.as_str()).collect();
        refused(format!(
            "is issued by `{}`, which this service does not trust (it trusts {})",
            checks::shown(iss),
            trusted.join(", ")
        ))
    })?;
    let key = issuer.keys.key(kid).await.map_err(|e| match e {
        KeyError::Unknown { .. } => refused(e.to_string()),
        // The issuer, not the caller, failed: another try may succeed.
        KeyError::Unreachable { .. } => ApiError::Unavailable(e.to_string()),
    })?;
    if format!("{:?}", key.algorithm) != alg {
        return Err(refused(format!(
            "says `{alg}`, but the key `{}` of {iss} is a {:?} key",
            checks::shown(kid),
            key.algorithm
        )));
    }
    let mut validation = Validation::new(key.algorithm);
    validation.leeway = LEEWAY;
    validation.validate_nbf = true;
    validation.set_issuer(&[&issuer.url]);
    validation.set_audience(&issuer.audiences);
    validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
    let claims = jsonwebtoken::decode::<Map<String, Value>>(token, &key.decoding, &validation)
        .map_err(|e| refused(why(e.kind(), &unverified, issuer, kid)))?
        .claims;
    match claims.get("iat").and_then(Value::as_u64) {
        Some(iat) if iat <= now() + LEEWAY => {}
        Some(iat) => {
            return Err(refused(format!(
                "says it was issued at {} (`iat`), in the future",
                when(iat)
            )));
        }
        None => return Err(refused("has no issue time (`iat`, a number)".into())),
    }
    if !claims.get("sub").is_some_and(Value::is_string) {
        return Err(refused("has no subject (`sub`, a string)".into()));
    }
    Ok((issuer, claims))
}

/// What the verification's failure `kind` means for the caller.
fn why(kind: &ErrorKind, claims: &Map<String, Value>, issuer: &Issuer, kid: &str) -> String {
    let time = |name: &str| claims.get(name).and_then(Value::as_u64).map(when);
    match kind {
        ErrorKind::ExpiredSignature => format!(
            "expired at {} (`exp`; the service's clock says {}): ask the CI system for a \
             fresh one, just before logging in",
            time("exp").unwrap_or_default(),
            when(now())
        ),
        ErrorKind::ImmatureSignature => format!(
            "is not valid before {} (`nbf`; the service's clock says {})",
            time("nbf").unwrap_or_default(),
            when(now())
        ),
        ErrorKind::InvalidAudience => format!(
            "is for an audience (`aud`) the service does not accept from {}: request it for \
             `{}`",
            issuer.url, issuer.audiences[0]
        ),
        ErrorKind::InvalidSignature => format!(
            "has a signature the key `{}` of {} does not verify",
            checks::shown(kid),
            issuer.url
        ),
        ErrorKind::MissingRequiredClaim(claim) => format!("has no `{claim}` claim"),
        ErrorKind::InvalidClaimFormat(claim) => format!("has a `{claim}` claim of the wrong type"),
        other => format!("is not a valid ID token ({other:?})"),
    }
}

/// A refusal of the token: what is wrong with it, and what to do.
fn refused(why: String) -> ApiError {
    ApiError::Unauthorized(format!("the ID token {why}"))
}

/// A part of the token decoded: a JSON object.
fn part(text: &str, what: &str) -> Result<Map<String, Value>, ApiError> {
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(text)
        .map_err(|_| refused(format!("has a {what} that is not base64url")))?;
    serde_json::from_slice(&bytes)
        .map_err(|_| refused(format!("has a {what} that is not a JSON object")))
}

fn now() -> u64 {
    (SystemTime::now().duration_since(UNIX_EPOCH)).map_or(0, |d| d.as_secs())
}

/// A Unix time as people read it, in UTC.
fn when(secs: u64) -> String {
    let time = UNIX_EPOCH + Duration::from_secs(secs.min(253_402_300_799));
    format!("{} UTC", humantime::format_rfc3339_seconds(time))
}

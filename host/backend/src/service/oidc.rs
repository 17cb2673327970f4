//! Exchanging the ID token a CI system issued a job (GitHub Actions, GitLab) for a short-lived
//! access token of the service (`POST /api/v1/oidc/exchange`), which needs no token to call.

use serde::Deserialize;
use serde_json::json;

use super::transport::{ServiceError, Transport};

/// What the service gave for an ID token.
#[derive(Debug, Clone, Deserialize)]
pub struct Exchanged {
    /// The access token, to carry as any other.
    pub token: String,
    /// Who the service knows its holder as (the ID token's subject and issuer).
    pub user: String,
    /// What it may do, as `plinth serve token list` says it.
    pub grants: String,
    /// How long it lasts, in seconds.
    pub expires_in: u64,
}

/// Exchanges `id_token` at the service at `url`; refusals say what was wrong with the token.
pub fn exchange_id_token(url: &str, id_token: &str) -> Result<Exchanged, ServiceError> {
    let transport = Transport::new(url, "");
    let body = json!({ "token": id_token });
    let answer = transport.call("POST", "oidc/exchange", None, Some(&body))?;
    serde_json::from_value(answer).map_err(|e| ServiceError::Unreadable {
        request: "POST oidc/exchange".to_owned(),
        reason: e.to_string(),
    })
}

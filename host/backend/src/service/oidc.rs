//! Exchanging the ID token a CI system issued a job (GitHub Actions, GitLab) for a short-lived
//! access token of the service (`POST /api/v1/oidc/exchange`), which needs no token to call.

use plinth_state::protocol::{ExchangeRequest, Exchanged};

use super::transport::{ServiceError, Transport};

/// Exchanges `id_token` at the service at `url`; refusals say what was wrong with the token.
pub fn exchange_id_token(url: &str, id_token: &str) -> Result<Exchanged, ServiceError> {
    let transport = Transport::new(url, "");
    let body = ExchangeRequest {
        token: id_token.to_owned(),
    };
    let body = serde_json::to_value(body).expect("a token serializes");
    let answer = transport.call("POST", "oidc/exchange", None, Some(&body))?;
    serde_json::from_value(answer).map_err(|e| ServiceError::Unreadable {
        request: "POST oidc/exchange".to_owned(),
        reason: e.to_string(),
    })
}

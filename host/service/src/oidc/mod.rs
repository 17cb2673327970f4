//! OIDC token exchange (`POST /api/v1/oidc/exchange`, no access token needed): a CI job presents
//! the ID token its CI system issued it; the service verifies it against the issuers its
//! configuration trusts, finds the first rule of that issuer the token's claims match, and
//! answers a token of its own granting what the rule says, for the rule's (short) lifetime.
//! That token is stored as every other (`plinth serve token list` shows it, `revoke` ends it).

mod config;
mod keys;
mod verify;

use axum::Json;
use axum::extract::State;
use serde_json::{Map, Value};

pub use config::{ConfigError, OidcConfig};

use plinth_state::protocol::{ExchangeRequest, Exchanged};

use crate::api::App;
use crate::body::Body;
use crate::checks::shown_up_to;
use crate::error::ApiError;
use crate::tokens::create_token;

/// The largest exchange request read (an ID token is a kilobyte or two).
pub(crate) const BODY_LIMIT: usize = 64 << 10;

pub(crate) async fn exchange(
    State(app): State<App>,
    Body(request): Body<ExchangeRequest>,
) -> Result<Json<Exchanged>, ApiError> {
    let config = app.options.oidc.as_deref().ok_or_else(|| {
        ApiError::NotConfigured(
            "this service exchanges no ID tokens: its administrator starts it with \
             `--oidc-config FILE` naming the issuers it trusts"
                .to_owned(),
        )
    })?;
    let (issuer, claims) = verify::verify(config, &request.token).await?;
    let sub = claims
        .get("sub")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let (number, rule) = (issuer.rules.iter().enumerate())
        .find(|(_, rule)| rule.matches(&claims))
        .ok_or_else(|| {
            ApiError::Forbidden(format!(
                "no rule of the service's OIDC configuration for {} matches this ID token \
                 ({}): ask the service's administrator for a rule matching its claims",
                issuer.url,
                described(&claims)
            ))
        })?;
    // Named after the subject and its issuer, escaped and cut to what a token's names hold.
    let user = fitted(&format!("{sub}@{}", host(&issuer.url)), 100);
    let description = fitted(
        &format!("OIDC: {} {sub}, rule {}", issuer.url, number + 1),
        200,
    );
    let (token, id) = create_token(
        &app.pool,
        &user,
        &description,
        &rule.scope,
        Some(rule.lifetime),
    )
    .await
    .map_err(|e| match e.downcast::<sqlx::Error>() {
        Ok(e) => ApiError::Database(e),
        Err(e) => ApiError::Internal(format!("{e:#}")),
    })?;
    Ok(Json(Exchanged {
        expires_in: rule.lifetime.as_secs(),
        grants: rule.scope.describe(),
        id,
        token,
        user,
    }))
}

/// `text` with its control characters escaped, cut to at most `bytes` bytes (`…` marking a cut).
fn fitted(text: &str, bytes: usize) -> String {
    let mut shown = shown_up_to(text, bytes);
    if shown.len() > bytes {
        let mut end = bytes - '…'.len_utf8();
        while !shown.is_char_boundary(end) {
            end -= 1;
        }
        shown.truncate(end);
        shown.push('…');
    }
    shown
}

/// The host of an issuer's URL, naming it in a user name.
fn host(url: &str) -> String {
    url::Url::parse(url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_owned))
        .unwrap_or_else(|| url.to_owned())
}

/// The claims a rule usually matches, as a refusal shows them (escaped, cut).
fn described(claims: &Map<String, Value>) -> String {
    let shown: Vec<String> = ["sub", "repository", "ref", "environment", "project_path"]
        .into_iter()
        .filter_map(|name| {
            let value = claims.get(name)?.as_str()?;
            Some(format!("{name} `{}`", shown_up_to(value, 100)))
        })
        .collect();
    shown.join(", ")
}

#[cfg(test)]
mod tests {
    use super::fitted;

    #[test]
    fn names_are_escaped_and_cut_to_what_they_hold() {
        assert_eq!(fitted("repo:a\u{1b}[2J@ci", 100), "repo:a\\u{1b}[2J@ci");
        let long = fitted(&"é".repeat(200), 100);
        assert!(long.len() <= 100 && long.ends_with('…'), "{long}");
        assert_eq!(fitted(&"x".repeat(100), 100), "x".repeat(100));
    }
}

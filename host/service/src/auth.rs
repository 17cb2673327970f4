//! Access tokens: random, shown once when created, stored as SHA-256 digests. Every request but
//! the health check carries one (`Authorization: token …`); a request acting on an update also
//! carries that update's lease token (`X-Plinth-Lease`), which acts on no other update.

use crate::api::App;
use crate::error::ApiError;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use sha2::{Digest, Sha256};

/// A new random token, as hex.
pub(crate) fn new_token() -> String {
    let mut bytes = [0u8; 32];
    getrandom::getrandom(&mut bytes).expect("the OS random source works");
    hex::encode(bytes)
}

pub(crate) fn digest(token: &str) -> Vec<u8> {
    Sha256::digest(token.as_bytes()).to_vec()
}

/// The user a request's access token names.
#[derive(Debug, Clone)]
pub(crate) struct User {
    pub id: i64,
    pub name: String,
}

impl FromRequestParts<App> for User {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, app: &App) -> Result<User, ApiError> {
        let header = parts
            .headers
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .ok_or_else(|| {
                ApiError::Unauthorized(
                    "no access token: log in with `plinth login URL` (a token comes from \
                     `plinth serve token create`)"
                        .to_owned(),
                )
            })?;
        let token = header.strip_prefix("token ").ok_or_else(|| {
            ApiError::Unauthorized("the Authorization header must be `token <TOKEN>`".to_owned())
        })?;
        let user: Option<(i64, String)> = sqlx::query_as(
            "SELECT u.id, u.name FROM tokens t JOIN users u ON u.id = t.user_id WHERE t.digest = $1",
        )
        .bind(digest(token))
        .fetch_optional(&app.pool)
        .await?;
        let (id, name) = user.ok_or_else(|| {
            ApiError::Unauthorized(
                "the access token is not valid (revoked, or from another service): log in again"
                    .to_owned(),
            )
        })?;
        Ok(User { id, name })
    }
}

/// The lease token a request on an update carries.
pub(crate) struct Lease(pub String);

impl FromRequestParts<App> for Lease {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &App) -> Result<Lease, ApiError> {
        parts
            .headers
            .get("x-plinth-lease")
            .and_then(|v| v.to_str().ok())
            .map(|v| Lease(v.to_owned()))
            .ok_or_else(|| {
                ApiError::Unauthorized(
                    "no lease token: a request on an update carries the X-Plinth-Lease it began with"
                        .to_owned(),
                )
            })
    }
}

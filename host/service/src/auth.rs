//! Access tokens: random, shown once when created, stored as SHA-256 digests. Every request but
//! the health check carries one (`Authorization: token …`); a request acting on an update also
//! carries that update's lease token (`X-Plinth-Lease`), which acts on no other update.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use sha2::{Digest, Sha256};
use sqlx::PgPool;

use crate::api::App;
use crate::error::ApiError;

/// A new random token, as hex.
pub(crate) fn new_token() -> String {
    let mut bytes = [0u8; 32];
    getrandom::getrandom(&mut bytes).expect("the OS random source works");
    hex::encode(bytes)
}

pub(crate) fn digest(token: &str) -> Vec<u8> {
    Sha256::digest(token.as_bytes()).to_vec()
}

/// Creates `user` if new and a token for them; returns the token, which is stored only hashed.
pub async fn create_token(pool: &PgPool, user: &str) -> anyhow::Result<String> {
    anyhow::ensure!(
        !user.is_empty() && user.len() <= 100 && !user.chars().any(char::is_control),
        "invalid user name `{user}`: use 1 to 100 printable characters"
    );
    let token = new_token();
    let mut tx = pool.begin().await?;
    let (user_id,): (i64,) = sqlx::query_as(
        "INSERT INTO users (name) VALUES ($1)
         ON CONFLICT (name) DO UPDATE SET name = EXCLUDED.name RETURNING id",
    )
    .bind(user)
    .fetch_one(&mut *tx)
    .await?;
    sqlx::query("INSERT INTO tokens (digest, user_id) VALUES ($1, $2)")
        .bind(digest(&token))
        .bind(user_id)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(token)
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

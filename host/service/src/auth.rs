//! Access tokens: random, shown once when created, stored as SHA-256 digests. Every request but
//! the health check carries one (`Authorization: token …`); a request acting on an update also
//! carries that update's lease token (`X-Plinth-Lease`), which acts on no other update.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

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
        let digest = token_digest(parts)?;
        let user: Option<(i64, String)> = sqlx::query_as(
            "SELECT u.id, u.name FROM tokens t JOIN users u ON u.id = t.user_id WHERE t.digest = $1",
        )
        .bind(&digest)
        .fetch_optional(&app.pool)
        .await?;
        let (id, name) = user.ok_or_else(invalid_token)?;
        app.screened.found_valid(digest);
        Ok(User { id, name })
    }
}

/// The digest of the access token a request carries, to be checked by the statement that does
/// the request's work: the requests an update sends many of (journal and event batches) make
/// one round trip to the database instead of two. Before its body is read, the token must be
/// one this replica found valid within [`SCREENED_FOR`], or it is looked up first: a caller
/// without a valid token never makes the service read (decompress, parse) a body.
pub(crate) struct AccessToken(pub Vec<u8>);

/// How long a token found valid lets its requests' bodies be read before the statement checks
/// it again. Only that: a token revoked meanwhile is refused by the statement all the same.
const SCREENED_FOR: Duration = Duration::from_secs(60);
/// The most tokens remembered; past that the list starts over.
const SCREENED_TOKENS: usize = 1024;

/// The access tokens this replica found valid lately, by digest, with when.
#[derive(Default)]
pub(crate) struct Screened(Mutex<HashMap<Vec<u8>, Instant>>);

impl Screened {
    fn lately(&self, digest: &[u8]) -> bool {
        let found = self.0.lock().expect("never poisoned").get(digest).copied();
        found.is_some_and(|when| when.elapsed() < SCREENED_FOR)
    }

    fn found_valid(&self, digest: Vec<u8>) {
        let mut screened = self.0.lock().expect("never poisoned");
        if screened.len() >= SCREENED_TOKENS {
            screened.clear();
        }
        screened.insert(digest, Instant::now());
    }
}

impl FromRequestParts<App> for AccessToken {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, app: &App) -> Result<AccessToken, ApiError> {
        let digest = token_digest(parts)?;
        if !app.screened.lately(&digest) {
            let (valid,): (bool,) =
                sqlx::query_as("SELECT EXISTS (SELECT 1 FROM tokens WHERE digest = $1)")
                    .bind(&digest)
                    .fetch_one(&app.pool)
                    .await?;
            if !valid {
                return Err(invalid_token());
            }
            app.screened.found_valid(digest.clone());
        }
        Ok(AccessToken(digest))
    }
}

/// The digest of the access token in the request's `Authorization` header.
fn token_digest(parts: &Parts) -> Result<Vec<u8>, ApiError> {
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
    Ok(digest(token))
}

/// The answer to an access token no user has.
pub(crate) fn invalid_token() -> ApiError {
    ApiError::Unauthorized(
        "the access token is not valid (revoked, or from another service): log in again".to_owned(),
    )
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

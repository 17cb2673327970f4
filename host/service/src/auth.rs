//! Access tokens: random, shown once when created, stored as SHA-256 digests. Every request but
//! the health check carries one (`Authorization: token …`); a request acting on an update also
//! carries that update's lease token (`X-Plinth-Lease`), which acts on no other update.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::api::App;
use crate::audit::{Actor, source};
use crate::error::ApiError;
use crate::request_log::Caller;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use sha2::{Digest, Sha256};

/// A new random token, as hex.
pub(crate) fn new_token() -> String {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).expect("the OS random source works");
    hex::encode(bytes)
}

pub(crate) fn digest(token: &str) -> Vec<u8> {
    Sha256::digest(token.as_bytes()).to_vec()
}

/// What a token lets its holder do, from least to most. Each level includes the ones below.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// See stacks: their states (secrets left sealed), history and logs; open no secret. For
    /// dashboards and audits.
    ReadNoSecrets,
    /// Also open their secrets (a preview needs them).
    Read,
    /// Change them: create stacks, run updates, cancel one, seal secrets.
    Write,
    /// Remove stacks.
    Admin,
}

impl Level {
    pub fn name(self) -> &'static str {
        match self {
            Level::ReadNoSecrets => "read-no-secrets",
            Level::Read => "read",
            Level::Write => "write",
            Level::Admin => "admin",
        }
    }

    pub fn parse(name: &str) -> Option<Level> {
        [
            Level::ReadNoSecrets,
            Level::Read,
            Level::Write,
            Level::Admin,
        ]
        .into_iter()
        .find(|level| level.name() == name)
    }
}

/// The stacks a token acts on, and at which level: every stack, a project's, or one stack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope {
    pub level: Level,
    pub project: Option<String>,
    /// Only with `project`.
    pub stack: Option<String>,
}

impl Scope {
    /// Whether this scope grants at least everything `other` does: a token may only make
    /// tokens within its own.
    pub fn includes(&self, other: &Scope) -> bool {
        let project_ok = self.project.is_none() || self.project == other.project;
        let stack_ok = self.stack.is_none() || self.stack == other.stack;
        self.level >= other.level && project_ok && stack_ok
    }

    /// Whether it grants `level` on every stack: what administering the service (the audit log,
    /// other users' tokens) needs.
    pub fn everywhere(&self, level: Level) -> bool {
        self.level >= level && self.project.is_none()
    }

    fn covers(&self, project: &str, stack: Option<&str>) -> bool {
        let project_ok = self.project.as_deref().is_none_or(|p| p == project);
        let stack_ok = match (self.stack.as_deref(), stack) {
            (None, _) => true,
            (Some(mine), Some(asked)) => mine == asked,
            // A project-wide request (listing) from a one-stack token: answered for its stack.
            (Some(_), None) => true,
        };
        project_ok && stack_ok
    }

    /// "read on stack p/dev", "write on project p", "admin on every stack".
    pub fn describe(&self) -> String {
        let level = self.level.name();
        match (&self.project, &self.stack) {
            (Some(project), Some(stack)) => format!("{level} on stack {project}/{stack}"),
            (Some(project), None) => format!("{level} on project {project}"),
            _ => format!("{level} on every stack"),
        }
    }
}

/// The user a request's access token names, and what the token lets them do.
#[derive(Debug, Clone)]
pub(crate) struct User {
    pub id: i64,
    pub name: String,
    pub scope: Scope,
    /// The id of the token the request carried, as `token list` shows it.
    pub token_id: String,
    /// When that token expires (Unix time), if it does.
    pub expires: Option<i64>,
    /// Where the request came from, for the audit log.
    pub source: String,
}

impl User {
    /// Who made the request, as the audit log records it.
    pub fn actor(&self) -> Actor {
        Actor {
            user: Some(self.name.clone()),
            token: Some(self.token_id.clone()),
            source: self.source.clone(),
        }
    }

    /// Refuses (403) unless the token may open the secrets of `project/stack`; a
    /// `read-no-secrets` token is told why.
    pub fn may_open(&self, project: &str, stack: &str) -> Result<(), ApiError> {
        if self.scope.level == Level::ReadNoSecrets && self.scope.covers(project, Some(stack)) {
            return Err(ApiError::Forbidden(format!(
                "the token of {} grants {}, which opens no secret: reading stack {project}/{stack} \
                 with its secrets opened (a preview, an update) needs a token granting `read` or \
                 more; `plinth stack export` works without one, its secrets left sealed",
                self.name,
                self.scope.describe()
            )));
        }
        self.may(Level::Read, project, Some(stack))
    }

    /// Refuses (403) unless the token may act at `level` on `project` (and `stack`, unless the
    /// request concerns the whole project).
    pub fn may(&self, level: Level, project: &str, stack: Option<&str>) -> Result<(), ApiError> {
        if self.scope.level >= level && self.scope.covers(project, stack) {
            return Ok(());
        }
        let target = match stack {
            Some(stack) => format!("stack {project}/{stack}"),
            None => format!("project {project}"),
        };
        Err(ApiError::Forbidden(format!(
            "the token of {} grants {}, and this needs {} on {target}: use a token that grants \
             it (the service's administrator makes one with `plinth serve token create --level \
             {} …`)",
            self.name,
            self.scope.describe(),
            level.name(),
            level.name()
        )))
    }
}

impl FromRequestParts<App> for User {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, app: &App) -> Result<User, ApiError> {
        let digest = token_digest(parts)?;
        User::of_token(parts, app, digest).await
    }
}

impl User {
    /// The user of the live token of digest `digest` (the console's sessions carry one).
    pub(crate) async fn of_token(
        parts: &Parts,
        app: &App,
        digest: Vec<u8>,
    ) -> Result<User, ApiError> {
        let Holder {
            id,
            name,
            level,
            project,
            stack,
            expires,
            ..
        } = holder(&app.pool, &digest).await?;
        let level = Level::parse(&level).ok_or_else(|| {
            ApiError::Internal(format!("a token with an unknown level `{level}`"))
        })?;
        if let Some(caller) = parts.extensions.get::<Caller>() {
            caller.user(&name);
            caller.token(&digest);
        }
        let token_id = crate::tokens::token_id(&digest);
        app.screened.found_valid(digest);
        Ok(User {
            id,
            name,
            scope: Scope {
                level,
                project,
                stack,
            },
            token_id,
            expires,
            source: source(parts, app.options.trust_forwarded_for),
        })
    }
}

/// The user of a live token and what it grants.
#[derive(sqlx::FromRow)]
struct Holder {
    id: i64,
    name: String,
    level: String,
    project: Option<String>,
    stack: Option<String>,
    revoked: bool,
    /// When it expires (Unix time), if it does.
    expires: Option<i64>,
    /// When it expired (UTC), if it did.
    expired: Option<String>,
}

/// The holder of the token of digest `digest`, if it is live; its use noted, at most once a
/// minute (a write per request would double the database's writes for reads).
async fn holder(pool: &sqlx::PgPool, digest: &[u8]) -> Result<Holder, ApiError> {
    let holder: Option<Holder> = sqlx::query_as(
        "WITH touched AS (
             UPDATE tokens SET last_used = now()
             WHERE digest = $1 AND revoked IS NULL AND (expires IS NULL OR expires > now())
               AND (last_used IS NULL OR last_used < now() - interval '1 minute')
         )
         SELECT u.id, u.name, t.level, t.project, t.stack, t.revoked IS NOT NULL AS revoked,
                EXTRACT(EPOCH FROM t.expires)::BIGINT AS expires,
                CASE WHEN t.expires <= now() THEN
                    to_char(t.expires AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') END AS expired
         FROM tokens t JOIN users u ON u.id = t.user_id WHERE t.digest = $1",
    )
    .bind(digest)
    .fetch_optional(pool)
    .await?;
    let holder = holder.ok_or_else(invalid_token)?;
    if holder.revoked {
        return Err(invalid_token());
    }
    if let Some(at) = &holder.expired {
        return Err(ApiError::Unauthorized(format!(
            "the access token expired at {at} UTC: ask whoever runs the service for a new one \
             (`plinth serve token create --expires …`), then `plinth login` with it"
        )));
    }
    Ok(holder)
}

/// The digest of the access token a request carries, to be checked by the statement that does
/// the request's work: the requests an update sends many of (journal and event batches) make
/// one round trip to the database instead of two. Like a [`User`]'s, the token may be of any
/// scope: the lease, which only a token granting write on the stack could take, is what lets
/// it act on the update. Before its body is read, the token must be one this replica found
/// valid within [`SCREENED_FOR`], or it is looked up first: a caller without a valid token
/// never makes the service read (decompress, parse) a body.
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
            holder(&app.pool, &digest).await?;
            app.screened.found_valid(digest.clone());
        }
        if let Some(caller) = parts.extensions.get::<Caller>() {
            caller.token(&digest);
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
        "the access token is not valid (revoked, expired, or from another service): log in \
         again with `plinth login`"
            .to_owned(),
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

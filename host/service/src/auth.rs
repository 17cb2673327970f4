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

/// What a token lets its holder do, from least to most. Each level includes the ones below.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// See stacks: their states, history, logs, and their secrets opened (a preview needs them).
    Read,
    /// Change them: create stacks, run updates, cancel one, seal secrets.
    Write,
    /// Remove stacks.
    Admin,
}

impl Level {
    pub fn name(self) -> &'static str {
        match self {
            Level::Read => "read",
            Level::Write => "write",
            Level::Admin => "admin",
        }
    }

    pub fn parse(name: &str) -> Option<Level> {
        [Level::Read, Level::Write, Level::Admin]
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
}

impl User {
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
             it (`plinth serve token create --level {} …`)",
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
        #[derive(sqlx::FromRow)]
        struct Row {
            id: i64,
            name: String,
            level: String,
            project: Option<String>,
            stack: Option<String>,
        }
        let user: Option<Row> = sqlx::query_as(
            "SELECT u.id, u.name, t.level, t.project, t.stack
             FROM tokens t JOIN users u ON u.id = t.user_id WHERE t.digest = $1",
        )
        .bind(digest(token))
        .fetch_optional(&app.pool)
        .await?;
        let Row {
            id,
            name,
            level,
            project,
            stack,
        } = user.ok_or_else(|| {
            ApiError::Unauthorized(
                "the access token is not valid (revoked, or from another service): log in again"
                    .to_owned(),
            )
        })?;
        let level = Level::parse(&level).ok_or_else(|| {
            ApiError::Internal(format!("a token with an unknown level `{level}`"))
        })?;
        Ok(User {
            id,
            name,
            scope: Scope {
                level,
                project,
                stack,
            },
        })
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

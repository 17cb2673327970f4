//! Self-service access: a signed-in user makes, lists and revokes their own tokens (never one
//! granting more than the token they ask with), and an administrator reads the audit log.

use std::time::{Duration, SystemTime};

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use plinth_state::protocol::{AuditPage, ListedToken, Revoked, TokenCreated, TokenList};
use serde::Deserialize;
use sqlx::PgPool;

use crate::audit::{self, Filter};
use crate::auth::{Level, Scope, User};
use crate::checks::shown;
use crate::error::ApiError;
use crate::tokens::{self, Revoke};

/// The longest a token may last, as `plinth serve token create --expires` allows.
const LONGEST_LIFETIME: Duration = Duration::from_secs(10 * 366 * 86_400);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CreateRequest {
    /// What it is for, shown by `token ls`.
    #[serde(default)]
    pub name: String,
    /// The caller's own level, at most `write`, if absent.
    #[serde(default)]
    pub level: Option<String>,
    /// The caller's own project and stack if absent.
    #[serde(default)]
    pub project: Option<String>,
    #[serde(default)]
    pub stack: Option<String>,
    /// How long it lasts, in seconds: as long as the caller's token at most, and as long if
    /// absent.
    #[serde(default)]
    pub expires_in: Option<u64>,
}

/// `POST tokens`: a new token of the caller's own, within what the caller's token grants.
pub(crate) async fn create_token(
    user: User,
    State(pool): State<PgPool>,
    crate::body::Body(request): crate::body::Body<CreateRequest>,
) -> Result<(StatusCode, Json<TokenCreated>), ApiError> {
    Ok((
        StatusCode::CREATED,
        Json(make_token(&user, &pool, request).await?),
    ))
}

/// A new token of `user`'s own, within what `user`'s token grants: the token (shown once), its
/// id, user, grants and life, as `POST tokens` answers (the console makes them so too).
pub(crate) async fn make_token(
    user: &User,
    pool: &PgPool,
    request: CreateRequest,
) -> Result<TokenCreated, ApiError> {
    let level = match &request.level {
        Some(name) => Level::parse(name).ok_or_else(|| {
            ApiError::BadRequest(format!(
                "`{}` is not a level: read-no-secrets, read, write or admin",
                shown(name)
            ))
        })?,
        None => user.scope.level.min(Level::Write),
    };
    let scope = Scope {
        level,
        project: request.project.or_else(|| user.scope.project.clone()),
        stack: request.stack.or_else(|| user.scope.stack.clone()),
    };
    if !user.scope.includes(&scope) {
        return Err(ApiError::Forbidden(format!(
            "the token of {} grants {}, and a token it makes grants no more: it cannot make one \
             granting {}",
            user.name,
            user.scope.describe(),
            scope.describe()
        )));
    }
    let lasting = lifetime(user, request.expires_in)?;
    let (token, id) = tokens::create(
        pool,
        &user.actor(),
        &user.name,
        &request.name,
        &scope,
        lasting,
    )
    .await?;
    Ok(TokenCreated {
        expires_in: lasting.map(|d| d.as_secs()),
        grants: scope.describe(),
        id,
        token,
        user: user.name.clone(),
    })
}

/// How long a new token lasts: as asked, within the caller's token's own life (a token cannot
/// outlive the one that made it), and as long as it if not asked.
fn lifetime(user: &User, asked: Option<u64>) -> Result<Option<Duration>, ApiError> {
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs() as i64;
    let left = user.expires.map(|at| at.saturating_sub(now).max(1) as u64);
    match (asked, left) {
        (Some(0), _) => Err(ApiError::BadRequest(
            "a token lasts more than 0 seconds: leave `expires_in` out for one as long as yours"
                .to_owned(),
        )),
        (Some(asked), _) if Duration::from_secs(asked) > LONGEST_LIFETIME => Err(
            ApiError::BadRequest("a token lasts at most 10 years".to_owned()),
        ),
        (Some(asked), Some(left)) if asked > left => Err(ApiError::Forbidden(format!(
            "the token of {} expires in {}, and a token it makes cannot outlive it: ask for at \
             most that, or leave the expiry out",
            user.name,
            humantime::format_duration(Duration::from_secs(left))
        ))),
        (Some(asked), _) => Ok(Some(Duration::from_secs(asked))),
        (None, left) => Ok(left.map(Duration::from_secs)),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ListQuery {
    /// Another user's tokens: for a token granting admin on every stack only.
    user: Option<String>,
}

/// `GET tokens`: the caller's tokens (or, for an administrator, another user's), never a token
/// itself.
pub(crate) async fn list_tokens(
    user: User,
    State(pool): State<PgPool>,
    Query(query): Query<ListQuery>,
) -> Result<Json<TokenList>, ApiError> {
    let whose = match &query.user {
        Some(other) if *other != user.name => {
            administrator(&user, "list another user's tokens")?;
            other.as_str()
        }
        _ => user.name.as_str(),
    };
    let listed = tokens::list(&pool, Some(whose)).await?;
    let tokens = (listed.into_iter())
        .map(|t| ListedToken {
            current: t.id == user.token_id,
            created: t.created,
            grants: t.scope,
            id: t.id,
            last_used: t.last_used,
            name: t.description,
            status: t.status,
            user: t.user,
        })
        .collect();
    Ok(Json(TokenList { tokens }))
}

/// `DELETE tokens/ID`: revokes one of the caller's tokens (any user's, for an administrator).
pub(crate) async fn revoke_token(
    user: User,
    State(pool): State<PgPool>,
    Path(id): Path<String>,
) -> Result<Json<Revoked>, ApiError> {
    let owner = match user.scope.everywhere(Level::Admin) {
        true => None,
        false => Some(user.name.as_str()),
    };
    let revoked = tokens::revoke(&pool, &user.actor(), Revoke::Id(&id), owner).await?;
    let revoked = revoked.into_iter().map(|t| t.id).collect();
    Ok(Json(Revoked { revoked }))
}

/// Refuses (403) unless the caller's token grants admin on every stack.
fn administrator(user: &User, to: &str) -> Result<(), ApiError> {
    match user.scope.everywhere(Level::Admin) {
        true => Ok(()),
        false => Err(forbidden(user, to)),
    }
}

/// The refusal of what `user` asked `to` do.
fn forbidden(user: &User, to: &str) -> ApiError {
    ApiError::Forbidden(format!(
        "the token of {} grants {}: to {to} a token needs admin (on every stack; on a project or \
         a stack, the audit log of that project or stack only)",
        user.name,
        user.scope.describe()
    ))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct AuditQuery {
    /// `PROJECT/STACK`, or `PROJECT`.
    pub stack: Option<String>,
    pub user: Option<String>,
    /// A duration back from now (`7d`) or a time (RFC 3339).
    pub since: Option<String>,
    /// The `next` of the page before.
    pub before: Option<i64>,
    pub per_page: Option<i64>,
}

/// `GET audit`: the audit log, newest first, a page at a time, for a token granting admin. One
/// whose admin is on a project or a stack sees that project's or stack's rows only.
pub(crate) async fn audit(
    user: User,
    State(pool): State<PgPool>,
    Query(query): Query<AuditQuery>,
) -> Result<Json<AuditPage>, ApiError> {
    let (entries, next) = audit_page(&user, &pool, query).await?;
    // As JSON objects, whose keys serialize sorted, as the page always had them.
    let entries = (entries.iter())
        .map(serde_json::to_value)
        .collect::<Result<_, _>>()
        .map_err(|e| ApiError::Internal(format!("an audit entry does not serialize: {e}")))?;
    Ok(Json(AuditPage { entries, next }))
}

/// A page of the audit log as `user`'s token may read it (the console's page reads it so too),
/// and the `before` of the next page.
pub(crate) async fn audit_page(
    user: &User,
    pool: &PgPool,
    query: AuditQuery,
) -> Result<(Vec<audit::Entry>, Option<i64>), ApiError> {
    if user.scope.level < Level::Admin {
        return Err(forbidden(user, "read the audit log"));
    }
    let per_page = query.per_page.unwrap_or(100);
    if !(1..=1000).contains(&per_page) || query.before.is_some_and(|b| b < 1) {
        return Err(ApiError::BadRequest(
            "per_page is 1 to 1000, and before a positive id (the `next` of the page before)"
                .to_owned(),
        ));
    }
    let (mut project, mut stack) = match query.stack.as_deref() {
        Some(named) => match named.split_once('/') {
            Some((project, stack)) => (Some(project.to_owned()), Some(stack.to_owned())),
            None => (Some(named.to_owned()), None),
        },
        None => (None, None),
    };
    for (what, name) in [("project", &project), ("stack", &stack)] {
        if let Some(name) = name {
            crate::checks::name(what, name)?;
        }
    }
    // A token for a project or a stack reads only its rows, whatever it asked.
    if let Some(own) = &user.scope.project {
        if project.as_ref().is_some_and(|asked| asked != own)
            || (user.scope.stack.is_some() && stack.is_some() && stack != user.scope.stack)
        {
            return Err(forbidden(user, "read the audit log of another stack"));
        }
        project = Some(own.clone());
        stack = user.scope.stack.clone().or(stack);
    }
    let since = (query.since.as_deref())
        .map(audit::parse_since)
        .transpose()
        .map_err(ApiError::BadRequest)?;
    let filter = Filter {
        project,
        stack,
        user: query.user,
        since,
        before: query.before,
        limit: per_page,
    };
    let entries = audit::list(pool, &filter).await?;
    let next = match entries.len() as i64 == per_page {
        true => entries.last().map(|e| e.id),
        false => None,
    };
    Ok((entries, next))
}

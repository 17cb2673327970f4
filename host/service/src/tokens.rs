//! The administration of access tokens (`plinth serve token …`), run against the database
//! directly by whoever runs the service: create one for a user, list them, revoke them.
//!
//! A token is known only by its digest; its id is the digest's first 12 hex digits, which names
//! it in a list without saying anything of the token itself.

use anyhow::Context;
use sqlx::PgPool;

use crate::audit::{self, Action, Actor};
use crate::auth::{Level, Scope, digest, new_token};
use crate::checks::{shown, shown_up_to};

/// How many hex digits of a token's digest make its id.
const ID_LEN: usize = 12;

/// One token, as `token list` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenInfo {
    /// The first hex digits of the token's digest.
    pub id: String,
    pub user: String,
    pub description: String,
    /// What it may do, as [`Scope::describe`] says it.
    pub scope: String,
    /// When it was created, as PostgreSQL prints a timestamp in UTC.
    pub created: String,
    /// `active`, `active until …`, `expired …` or `revoked …` (UTC).
    pub status: String,
    /// When a request last carried it (to the minute), or `never`.
    pub last_used: String,
}

/// A token's row: digest, user, description, level, project, stack, creation time, status,
/// last use.
type Row = (
    Vec<u8>,
    String,
    String,
    String,
    Option<String>,
    Option<String>,
    String,
    String,
    String,
);

/// The columns of a [`Row`], from `tokens` as `t` and `users` as `u`.
const COLUMNS: &str = "t.digest, u.name, t.description, t.level, t.project, t.stack, \
     to_char(t.created AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS'), \
     CASE WHEN t.revoked IS NOT NULL \
              THEN 'revoked ' || to_char(t.revoked AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI') \
          WHEN t.expires <= now() \
              THEN 'expired ' || to_char(t.expires AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI') \
          WHEN t.expires IS NOT NULL \
              THEN 'until ' || to_char(t.expires AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI') \
          ELSE 'active' END, \
     COALESCE(to_char(t.last_used AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI'), 'never')";

impl TokenInfo {
    fn from_row(
        (digest, user, description, level, project, stack, created, status, last_used): Row,
    ) -> Self {
        let scope = Scope {
            level: Level::parse(&level).unwrap_or(Level::Admin),
            project,
            stack,
        };
        TokenInfo {
            id: token_id(&digest),
            user,
            description,
            scope: scope.describe(),
            created,
            status,
            last_used,
        }
    }
}

/// Why a token could not be made or revoked.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// What was asked is not valid (a name, a description, a scope): what to give instead.
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    NotFound(String),
    /// The token is another user's, and the caller may not revoke it.
    #[error("{0}")]
    NotYours(String),
    #[error("database: {0}")]
    Database(#[from] sqlx::Error),
}

/// Creates `user` if new and a token for them that grants `scope`, for `lasting` (forever with
/// `None`); returns the token, which is stored only hashed, and its id. An admin command's:
/// recorded in the audit log as the database role's.
pub async fn create_token(
    pool: &PgPool,
    user: &str,
    description: &str,
    scope: &Scope,
    lasting: Option<std::time::Duration>,
) -> anyhow::Result<(String, String)> {
    let made = create(pool, &Actor::cli(), user, description, scope, lasting).await?;
    Ok(made)
}

/// [`create_token`] on behalf of `actor`.
pub(crate) async fn create(
    pool: &PgPool,
    actor: &Actor,
    user: &str,
    description: &str,
    scope: &Scope,
    lasting: Option<std::time::Duration>,
) -> Result<(String, String), TokenError> {
    let invalid = |message: String| Err(TokenError::Invalid(message));
    if user.is_empty() || user.len() > 100 || user.chars().any(char::is_control) {
        return invalid(format!(
            "invalid user name `{}`: use 1 to 100 printable characters",
            shown(user)
        ));
    }
    if scope.stack.is_some() && scope.project.is_none() {
        return invalid(
            "a token for one stack names its project too (`--project P --stack S`)".to_owned(),
        );
    }
    for (what, name) in [("project", &scope.project), ("stack", &scope.stack)] {
        if let Some(name) = name {
            crate::checks::name(what, name).map_err(|e| TokenError::Invalid(e.to_string()))?;
        }
    }
    if description.len() > 200 || description.chars().any(char::is_control) {
        return invalid("invalid description: use at most 200 printable characters".to_owned());
    }
    let token = new_token();
    let mut tx = pool.begin().await?;
    let (user_id,): (i64,) = sqlx::query_as(
        "INSERT INTO users (name) VALUES ($1)
         ON CONFLICT (name) DO UPDATE SET name = EXCLUDED.name RETURNING id",
    )
    .bind(user)
    .fetch_one(&mut *tx)
    .await?;
    let digest = digest(&token);
    sqlx::query(
        "INSERT INTO tokens (digest, user_id, description, level, project, stack, expires)
         VALUES ($1, $2, $3, $4, $5, $6, now() + make_interval(secs => $7))",
    )
    .bind(&digest)
    .bind(user_id)
    .bind(description)
    .bind(scope.level.name())
    .bind(&scope.project)
    .bind(&scope.stack)
    .bind(lasting.map(|d| d.as_secs_f64()))
    .execute(&mut *tx)
    .await?;
    let id = token_id(&digest);
    let detail = format!(
        "token {id} for {user}, granting {}{}{}",
        scope.describe(),
        lasting.map_or(String::new(), |d| format!(
            ", for {}",
            humantime::format_duration(std::time::Duration::from_secs(d.as_secs()))
        )),
        match description {
            "" => String::new(),
            named => format!(", named `{}`", shown_up_to(named, 60)),
        }
    );
    let on = scope.project.as_deref().zip(scope.stack.as_deref());
    audit::record(&mut tx, actor, Action::TokenCreated, on, &detail).await?;
    tx.commit().await?;
    Ok((token, id))
}

/// The id of the token of digest `digest`.
pub(crate) fn token_id(digest: &[u8]) -> String {
    hex::encode(&digest[..ID_LEN / 2])
}

/// The tokens of `user` (of every user with `None`), oldest first.
pub async fn list_tokens(pool: &PgPool, user: Option<&str>) -> anyhow::Result<Vec<TokenInfo>> {
    list(pool, user).await.context("cannot list the tokens")
}

/// [`list_tokens`], its error the database's.
pub(crate) async fn list(pool: &PgPool, user: Option<&str>) -> Result<Vec<TokenInfo>, sqlx::Error> {
    let rows: Vec<Row> = sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM tokens t JOIN users u ON u.id = t.user_id
         WHERE $1::text IS NULL OR u.name = $1
         ORDER BY t.created, t.digest"
    ))
    .bind(user)
    .fetch_all(pool)
    .await?;
    Ok(rows.into_iter().map(TokenInfo::from_row).collect())
}

/// What to revoke.
#[derive(Debug, Clone, Copy)]
pub enum Revoke<'a> {
    /// The token with this id (as `token list` shows it).
    Id(&'a str),
    /// Every token of this user.
    User(&'a str),
}

/// Revokes tokens: requests carrying them are refused (401) from now on, including those of an
/// update one of them is running. They stay listed, as revoked. Returns what was revoked;
/// naming nothing not yet revoked is an error. An admin command's: recorded in the audit log as
/// the database role's.
pub async fn revoke_tokens(pool: &PgPool, what: Revoke<'_>) -> anyhow::Result<Vec<TokenInfo>> {
    Ok(revoke(pool, &Actor::cli(), what, None).await?)
}

/// [`revoke_tokens`] on behalf of `actor`; with `owner`, only that user's tokens.
pub(crate) async fn revoke(
    pool: &PgPool,
    actor: &Actor,
    what: Revoke<'_>,
    owner: Option<&str>,
) -> Result<Vec<TokenInfo>, TokenError> {
    let (id, user) = match what {
        Revoke::Id(id) => {
            let prefix = hex::decode(id).ok().filter(|p| p.len() == ID_LEN / 2);
            let Some(prefix) = prefix else {
                return Err(TokenError::Invalid(format!(
                    "`{}` is not a token id ({ID_LEN} hex digits, as `token list` shows them)",
                    shown(id)
                )));
            };
            (Some(prefix), None)
        }
        Revoke::User(user) => (None, Some(user)),
    };
    let mut tx = pool.begin().await?;
    let rows: Vec<Row> = sqlx::query_as(&format!(
        "WITH t AS (
             UPDATE tokens t SET revoked = now() FROM users u
             WHERE u.id = t.user_id AND t.revoked IS NULL
               AND ($1::bytea IS NULL OR substring(t.digest FROM 1 FOR $3) = $1)
               AND ($2::text IS NULL OR u.name = $2)
               AND ($4::text IS NULL OR u.name = $4)
             RETURNING t.*)
         SELECT {COLUMNS} FROM t JOIN users u ON u.id = t.user_id ORDER BY t.created, t.digest"
    ))
    .bind(&id)
    .bind(user)
    .bind(ID_LEN as i32 / 2)
    .bind(owner)
    .fetch_all(&mut *tx)
    .await?;
    if rows.is_empty() {
        tx.rollback().await?;
        return Err(match (what, owner) {
            (Revoke::Id(shown_id), Some(owner)) => {
                let theirs: Option<(String,)> = sqlx::query_as(
                    "SELECT u.name FROM tokens t JOIN users u ON u.id = t.user_id
                     WHERE substring(t.digest FROM 1 FOR $2) = $1 AND t.revoked IS NULL",
                )
                .bind(&id)
                .bind(ID_LEN as i32 / 2)
                .fetch_optional(pool)
                .await?;
                match theirs {
                    Some(_) => TokenError::NotYours(format!(
                        "token {shown_id} is not one of {}'s: a token revokes only its own \
                         user's tokens, unless it grants admin on every stack",
                        shown(owner)
                    )),
                    None => TokenError::NotFound(format!(
                        "{} has no token not yet revoked with the id `{shown_id}`: see `plinth \
                         token ls`",
                        shown(owner)
                    )),
                }
            }
            (Revoke::Id(id), None) => TokenError::NotFound(format!(
                "no token not yet revoked has the id `{id}`: see `plinth serve token list`"
            )),
            (Revoke::User(user), _) => TokenError::NotFound(format!(
                "user `{}` has no token not yet revoked",
                shown(user)
            )),
        });
    }
    let revoked: Vec<TokenInfo> = rows.into_iter().map(TokenInfo::from_row).collect();
    for token in &revoked {
        let detail = format!("token {} of {}", token.id, token.user);
        audit::record(&mut tx, actor, Action::TokenRevoked, None, &detail).await?;
    }
    tx.commit().await?;
    Ok(revoked)
}

//! The administration of access tokens (`plinth serve token …`), run against the database
//! directly by whoever runs the service: create one for a user, list them, revoke them.
//!
//! A token is known only by its digest; its id is the digest's first 12 hex digits, which names
//! it in a list without saying anything of the token itself.

use anyhow::{Context, bail, ensure};
use sqlx::PgPool;

use crate::auth::{Level, Scope, digest, new_token};

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

/// Creates `user` if new and a token for them that grants `scope`, for `lasting` (forever with
/// `None`); returns the token, which is stored only hashed, and its id.
pub async fn create_token(
    pool: &PgPool,
    user: &str,
    description: &str,
    scope: &Scope,
    lasting: Option<std::time::Duration>,
) -> anyhow::Result<(String, String)> {
    ensure!(
        !user.is_empty() && user.len() <= 100 && !user.chars().any(char::is_control),
        "invalid user name `{user}`: use 1 to 100 printable characters"
    );
    ensure!(
        scope.stack.is_none() || scope.project.is_some(),
        "a token for one stack names its project too (`--project P --stack S`)"
    );
    ensure!(
        description.len() <= 200 && !description.chars().any(char::is_control),
        "invalid description: use at most 200 printable characters"
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
    tx.commit().await?;
    Ok((token, token_id(&digest)))
}

/// The id of the token of digest `digest`.
pub(crate) fn token_id(digest: &[u8]) -> String {
    hex::encode(&digest[..ID_LEN / 2])
}

/// The tokens of `user` (of every user with `None`), oldest first.
pub async fn list_tokens(pool: &PgPool, user: Option<&str>) -> anyhow::Result<Vec<TokenInfo>> {
    let rows: Vec<Row> = sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM tokens t JOIN users u ON u.id = t.user_id
         WHERE $1::text IS NULL OR u.name = $1
         ORDER BY t.created, t.digest"
    ))
    .bind(user)
    .fetch_all(pool)
    .await
    .context("cannot list the tokens")?;
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
/// naming nothing not yet revoked is an error.
pub async fn revoke_tokens(pool: &PgPool, what: Revoke<'_>) -> anyhow::Result<Vec<TokenInfo>> {
    let (id, user) = match what {
        Revoke::Id(id) => {
            let prefix = hex::decode(id).ok().filter(|p| p.len() == ID_LEN / 2);
            let Some(prefix) = prefix else {
                bail!(
                    "`{id}` is not a token id ({ID_LEN} hex digits, as `plinth serve token list` \
                     shows them)"
                );
            };
            (Some(prefix), None)
        }
        Revoke::User(user) => (None, Some(user)),
    };
    let rows: Vec<Row> = sqlx::query_as(&format!(
        "WITH t AS (
             UPDATE tokens t SET revoked = now() FROM users u
             WHERE u.id = t.user_id AND t.revoked IS NULL
               AND ($1::bytea IS NULL OR substring(t.digest FROM 1 FOR $3) = $1)
               AND ($2::text IS NULL OR u.name = $2)
             RETURNING t.*)
         SELECT {COLUMNS} FROM t JOIN users u ON u.id = t.user_id ORDER BY t.created, t.digest"
    ))
    .bind(&id)
    .bind(user)
    .bind(ID_LEN as i32 / 2)
    .fetch_all(pool)
    .await
    .context("cannot revoke the tokens")?;
    if rows.is_empty() {
        match what {
            Revoke::Id(id) => {
                bail!("no token not yet revoked has the id `{id}`: see `plinth serve token list`")
            }
            Revoke::User(user) => bail!("user `{user}` has no token not yet revoked"),
        }
    }
    Ok(rows.into_iter().map(TokenInfo::from_row).collect())
}

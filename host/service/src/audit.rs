//! The audit log: who changed what, when and from where. Each row is written in the transaction
//! of the change it records, so a change is never made unrecorded, nor recorded unmade. It holds
//! names, ids and a short detail: never a secret, a token or a body.

use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, SystemTime};

use axum::extract::ConnectInfo;
use axum::http::request::Parts;
use serde::Serialize;
use sqlx::{PgConnection, PgPool};

use crate::checks::shown_up_to;

/// What a row records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Action {
    UpdateBegun,
    UpdateCompleted,
    UpdateCancelled,
    /// A running update whose lease expired gave its stack up to a new one.
    UpdateTakenOver,
    StackCreated,
    StackRemoved,
    /// A stack given a new name; the row keeps the old one, the detail the new.
    StackRenamed,
    /// A phase replacing the state with a checkpoint, in an `import` update.
    StackImported,
    /// A phase replacing the state with a checkpoint, in any other update (`plinth state …`).
    StateEdited,
    StackRepaired,
    /// A removed stack brought back (admin CLI).
    StackRestored,
    /// A removed stack deleted for good, past its retention (the service or the admin CLI).
    StackPurged,
    TokenCreated,
    TokenRevoked,
    KeyRotated,
    /// A policy pack stored for a set of stacks, or replaced (admin CLI).
    PolicyPackAdded,
    PolicyPackRemoved,
    /// An update's history entry does not say it ran a pack the service told it to run.
    PolicyPackUnclaimed,
    /// A console session opened, ended, or refused (a wrong, revoked or expired token).
    SignedIn,
    SignedOut,
    SignInFailed,
}

impl Action {
    pub fn name(self) -> &'static str {
        match self {
            Action::UpdateBegun => "update.begun",
            Action::UpdateCompleted => "update.completed",
            Action::UpdateCancelled => "update.cancelled",
            Action::UpdateTakenOver => "update.taken-over",
            Action::StackCreated => "stack.created",
            Action::StackRemoved => "stack.removed",
            Action::StackRenamed => "stack.renamed",
            Action::StackImported => "stack.imported",
            Action::StateEdited => "state.edited",
            Action::StackRepaired => "stack.repaired",
            Action::StackRestored => "stack.restored",
            Action::StackPurged => "stack.purged",
            Action::TokenCreated => "token.created",
            Action::TokenRevoked => "token.revoked",
            Action::KeyRotated => "key.rotated",
            Action::PolicyPackAdded => "policy-pack.added",
            Action::PolicyPackRemoved => "policy-pack.removed",
            Action::PolicyPackUnclaimed => "policy-pack.unclaimed",
            Action::SignedIn => "console.signed-in",
            Action::SignedOut => "console.signed-out",
            Action::SignInFailed => "console.sign-in-failed",
        }
    }
}

/// Who made a change, and from where.
#[derive(Debug, Clone)]
pub(crate) struct Actor {
    /// The token's user; `None` for an admin command, recorded as the database role it ran as.
    pub user: Option<String>,
    /// The token's id.
    pub token: Option<String>,
    /// The peer address, or `cli`.
    pub source: String,
}

impl Actor {
    /// An admin command run on the database (`plinth serve token …`, `key rotate`, `stack repair`).
    pub fn cli() -> Actor {
        Actor {
            user: None,
            token: None,
            source: "cli".to_owned(),
        }
    }
}

/// The longest detail kept; the database refuses longer.
const DETAIL_CHARS: usize = 500;

/// Records `action` by `actor` on `stack` (project and name, if it concerns one) with `detail`,
/// in the transaction of `conn`.
pub(crate) async fn record(
    conn: &mut PgConnection,
    actor: &Actor,
    action: Action,
    stack: Option<(&str, &str)>,
    detail: &str,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO audit (action, user_name, token_id, source, project, stack, detail)
         VALUES ($1, COALESCE($2, session_user), $3, $4, $5, $6, $7)",
    )
    .bind(action.name())
    .bind(actor.user.as_deref().map(|u| bounded(u, 200)))
    .bind(&actor.token)
    .bind(bounded(&actor.source, 100))
    .bind(stack.map(|(project, _)| bounded(project, 200)))
    .bind(stack.map(|(_, stack)| bounded(stack, 200)))
    .bind(bounded(detail, DETAIL_CHARS))
    .execute(conn)
    .await?;
    Ok(())
}

/// `text` escaped and cut to `most` characters, as the table's bounds hold it: a change is never
/// refused for its record's sake.
fn bounded(text: &str, most: usize) -> String {
    shown_up_to(text, most).chars().take(most).collect()
}

/// Where a request came from: its peer's address, or, when the service is told to trust it
/// (`--trust-forwarded-for`, behind a proxy that sets it), the last address of
/// `X-Forwarded-For`, the one the proxy appended (those before it are the client's say-so),
/// with the proxy's.
pub(crate) fn source(parts: &Parts, trust_forwarded_for: bool) -> String {
    let peer = parts
        .extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(address)| address.ip());
    let peer = peer.map_or_else(|| "unknown".to_owned(), |ip| ip.to_string());
    if !trust_forwarded_for {
        return peer;
    }
    let forwarded = (parts.headers.get_all("x-forwarded-for").iter())
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .last()
        .and_then(|last| last.trim().parse::<IpAddr>().ok());
    match forwarded {
        Some(client) => format!("{client} via {peer}"),
        None => peer,
    }
}

/// Which rows to list.
#[derive(Debug, Default, Clone)]
pub struct Filter {
    pub project: Option<String>,
    /// Only with `project`.
    pub stack: Option<String>,
    pub user: Option<String>,
    pub since: Option<SystemTime>,
    /// Rows older than this id only (the next page).
    pub before: Option<i64>,
    /// At most this many rows, newest first.
    pub limit: i64,
}

/// One row, as `plinth serve audit` and `GET /api/v1/audit` show it. Its strings are as stored:
/// whoever prints them escapes them.
#[derive(Debug, Clone, Serialize)]
pub struct Entry {
    pub id: i64,
    /// RFC 3339, UTC, to the millisecond.
    pub at: String,
    pub action: String,
    pub user: String,
    pub token: Option<String>,
    pub source: String,
    pub project: Option<String>,
    pub stack: Option<String>,
    pub detail: String,
}

type Row = (
    i64,
    String,
    String,
    String,
    Option<String>,
    String,
    Option<String>,
    Option<String>,
    String,
);

/// The rows `filter` selects, newest first.
pub async fn list(pool: &PgPool, filter: &Filter) -> Result<Vec<Entry>, sqlx::Error> {
    let since = filter.since.map(|t| {
        t.duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or(Duration::ZERO)
            .as_secs_f64()
    });
    let rows: Vec<Row> = sqlx::query_as(
        "SELECT id, to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), action,
                user_name, token_id, source, project, stack, detail
         FROM audit
         WHERE ($1::text IS NULL OR project = $1) AND ($2::text IS NULL OR stack = $2)
           AND ($3::text IS NULL OR user_name = $3)
           AND ($4::float8 IS NULL OR at >= to_timestamp($4))
           AND ($5::bigint IS NULL OR id < $5)
         ORDER BY id DESC LIMIT $6",
    )
    .bind(&filter.project)
    .bind(&filter.stack)
    .bind(&filter.user)
    .bind(since)
    .bind(filter.before)
    .bind(filter.limit)
    .fetch_all(pool)
    .await?;
    Ok(rows
        .into_iter()
        .map(
            |(id, at, action, user, token, source, project, stack, detail)| Entry {
                id,
                at,
                action,
                user,
                token,
                source,
                project,
                stack,
                detail,
            },
        )
        .collect())
}

/// `--since`: a duration back from now (`7d`, `12h`) or a time (RFC 3339, `2026-11-20T08:00:00Z`).
pub fn parse_since(text: &str) -> Result<SystemTime, String> {
    if let Ok(ago) = humantime::parse_duration(text) {
        return SystemTime::now()
            .checked_sub(ago)
            .ok_or_else(|| format!("`{}` reaches back too far", shown_up_to(text, 40)));
    }
    humantime::parse_rfc3339_weak(text).map_err(|_| {
        format!(
            "`{}` is neither a duration (7d, 12h) nor a time (RFC 3339, such as \
             2026-11-20T08:00:00Z)",
            shown_up_to(text, 40)
        )
    })
}

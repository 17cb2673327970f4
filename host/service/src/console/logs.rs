//! An update's log, as `plinth logs` prints it: a recorded version's a page at a time, and the
//! running update's streamed live (server-sent events) until it ends. The page shows what was
//! logged so far without script; `logs.js` appends what comes after.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::Stream;
use maud::{Markup, html};
use plinth_state::LogEntry;
use serde::Deserialize;
use serde_json::Value;
use sqlx::PgPool;
use uuid::Uuid;

use super::errors::ConsoleError;
use super::layout;
use super::session::Viewer;
use crate::api::{App, stack_id};
use crate::auth::Level;
use crate::error::ApiError;

/// How often a live log looks for new events while none come.
const POLL: Duration = Duration::from_millis(500);
/// The most event batches a live log reads at once.
const BATCHES: i64 = 50;
/// The most reads of [`BATCHES`] a live log's page shows at once (the stream sends the rest).
const INITIAL_READS: usize = 20;

/// An event as its line, or a note for one this service cannot read (a newer client's).
fn line(event: &Value) -> String {
    match serde_json::from_value::<LogEntry>(event.clone()) {
        Ok(entry) => entry.line(),
        Err(_) => "(an event this console cannot show)".to_owned(),
    }
}

#[derive(Deserialize)]
pub(super) struct LogQuery {
    version: Option<i64>,
    #[serde(default)]
    after: i64,
}

/// The update running on stack `id`: its id, kind and user.
async fn running(pool: &PgPool, id: i64) -> Result<Option<(Uuid, String, String)>, ApiError> {
    Ok(sqlx::query_as(
        "SELECT u.id, u.kind, usr.name FROM updates u JOIN users usr ON usr.id = u.user_id
         WHERE u.stack_id = $1 AND u.status = 'running'",
    )
    .bind(id)
    .fetch_optional(pool)
    .await?)
}

/// The batches of update `update` after `(phase, seq)`: each one's place and lines.
async fn batches_after(
    pool: &PgPool,
    update: Uuid,
    (phase, seq): (i32, i64),
) -> Result<Vec<(i32, i64, Vec<String>)>, ApiError> {
    let rows: Vec<(i32, i64, sqlx::types::Json<Vec<Value>>)> = sqlx::query_as(
        "SELECT phase, seq, events FROM event_batches
         WHERE update_id = $1 AND (phase, seq) > ($2, $3) ORDER BY phase, seq LIMIT $4",
    )
    .bind(update)
    .bind(phase)
    .bind(seq)
    .bind(BATCHES)
    .fetch_all(pool)
    .await?;
    Ok((rows.into_iter())
        .map(|(phase, seq, events)| (phase, seq, events.0.iter().map(line).collect()))
        .collect())
}

/// `GET /stacks/P/S/logs`: the running update's log, live; or a version's (`?version=N`,
/// the latest by default).
pub(super) async fn page(
    viewer: Viewer,
    State(app): State<App>,
    Path((project, stack)): Path<(String, String)>,
    Query(query): Query<LogQuery>,
) -> Result<Markup, ConsoleError> {
    viewer
        .user
        .may(Level::ReadNoSecrets, &project, Some(&stack))?;
    let id = stack_id(&app.pool, &project, &stack).await?;
    let base = format!("/stacks/{project}/{stack}");
    let title = format!("Log of {project}/{stack}");
    if query.version.is_none()
        && let Some((update, kind, user)) = running(&app.pool, id).await?
    {
        // What was logged so far; the stream goes on from the last batch shown.
        let mut lines = Vec::new();
        let mut at = (0, 0);
        // At most this many reads into the page: the stream brings the rest.
        for _ in 0..INITIAL_READS {
            let batches = batches_after(&app.pool, update, at).await?;
            let Some(&(phase, seq, _)) = batches.last() else {
                break;
            };
            at = (phase, seq);
            lines.extend(batches.into_iter().flat_map(|(.., lines)| lines));
        }
        let live = format!(
            "{base}/logs/live?update={update}&phase={}&seq={}",
            at.0, at.1
        );
        let body = html! {
            h1 { (title) }
            p { a href=(base) { "Stack " (project) "/" (stack) } }
            p #status.changed { "Running: " (kind) " by " (user) ". New events appear as they are logged." }
            pre #log data-live=(live) { @for line in &lines { (line) "\n" } }
            script src="/assets/logs.js" defer {}
        };
        return Ok(layout::page(&title, &viewer, body));
    }
    let Some(log) = crate::events::page(&app.pool, id, query.version, query.after).await? else {
        let body = html! {
            h1 { (title) }
            p { a href=(base) { "Stack " (project) "/" (stack) } }
            p { @match query.version {
                Some(n) => { "The stack has no update " (n) "." }
                None => { "The stack has no updates yet." }
            } }
        };
        return Ok(layout::page(&title, &viewer, body));
    };
    let entry = &log.entry;
    let field = |name: &str| entry.get(name).and_then(Value::as_str).unwrap_or("?");
    let body = html! {
        h1 { (title) }
        p { a href=(base) { "Stack " (project) "/" (stack) } " · " a href={ (base) "/history" } { "History" } }
        p #status { "Update " (log.number) ": " (field("kind")) " " (field("result")) }
        div #checks { (super::history::checks(entry)) }
        @if log.events.is_empty() { p { "It recorded no events." } }
        pre #log { @for event in &log.events { (line(event)) "\n" } }
        @if let Some(next) = log.next {
            p.pages { a href={ (base) "/logs?version=" (log.number) "&after=" (next) } { "more" } }
        }
    };
    Ok(layout::page(&title, &viewer, body))
}

#[derive(Deserialize)]
pub(super) struct LiveQuery {
    update: Uuid,
    #[serde(default)]
    phase: i32,
    #[serde(default)]
    seq: i64,
}

/// Where a live log is.
struct Live {
    pool: PgPool,
    update: Uuid,
    at: (i32, i64),
    ended: bool,
}

/// `GET /stacks/P/S/logs/live?update=U&phase=P&seq=S`: the update's events after batch
/// `(P, S)`, as server-sent events (one per batch, a line each), then an `end` event saying how
/// it ended.
pub(super) async fn live(
    viewer: Viewer,
    State(app): State<App>,
    Path((project, stack)): Path<(String, String)>,
    Query(query): Query<LiveQuery>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ConsoleError> {
    viewer
        .user
        .may(Level::ReadNoSecrets, &project, Some(&stack))?;
    let id = stack_id(&app.pool, &project, &stack).await?;
    let of_stack: Option<(i64,)> =
        sqlx::query_as("SELECT stack_id FROM updates WHERE id = $1 AND stack_id = $2")
            .bind(query.update)
            .bind(id)
            .fetch_optional(&app.pool)
            .await?;
    if of_stack.is_none() {
        return Err(ApiError::NotFound(format!(
            "stack {project}/{stack} has no update {}",
            query.update
        ))
        .into());
    }
    let start = Live {
        pool: app.pool.clone(),
        update: query.update,
        at: (query.phase, query.seq),
        ended: false,
    };
    let stream = futures_util::stream::unfold(start, |mut live| async move {
        if live.ended {
            return None;
        }
        loop {
            let event = match next(&mut live).await {
                Ok(Some(event)) => event,
                Ok(None) => {
                    tokio::time::sleep(POLL).await;
                    continue;
                }
                // The database failed: the stream ends; the browser reconnects from the last
                // batch it received.
                Err(e) => {
                    tracing::warn!("a live log stopped: {e}");
                    return None;
                }
            };
            return Some((Ok(event), live));
        }
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}

/// The next event of a live log: its next batch, or its end; `None` while nothing is new.
async fn next(live: &mut Live) -> Result<Option<Event>, ApiError> {
    let mut batches = batches_after(&live.pool, live.update, live.at).await?;
    if !batches.is_empty() {
        let (phase, seq, lines) = batches.remove(0);
        live.at = (phase, seq);
        return Ok(Some(
            Event::default()
                .id(format!("{phase}.{seq}"))
                .data(lines.join("\n")),
        ));
    }
    let (status,): (String,) = sqlx::query_as("SELECT status FROM updates WHERE id = $1")
        .bind(live.update)
        .fetch_one(&live.pool)
        .await?;
    if status == "running" {
        return Ok(None);
    }
    // Batches sent just before it ended are read first.
    if !batches_after(&live.pool, live.update, live.at)
        .await?
        .is_empty()
    {
        return Box::pin(next(live)).await;
    }
    live.ended = true;
    Ok(Some(
        Event::default()
            .event("end")
            .data(format!("The update ended: {status}.")),
    ))
}

//! Engine events of updates, kept for `plinth logs`. A client sends them in numbered batches
//! while its update runs, up to [`MAX_IN_FLIGHT`] at once: a batch may arrive before the one
//! ahead of it, but never before every batch up to N − [`MAX_IN_FLIGHT`] is stored. A batch is
//! stored once: its retry (same number, same content) is answered as if new, and a different
//! batch under a number already taken is refused.
//!
//! Whether the batches up to N − W (W = [`MAX_IN_FLIGHT`]) are stored is read from the W batches
//! N − 2W + 1 ..= N − W alone, one short index range whatever the length of the log: each of
//! them was taken only once the W before it were stored, and so on down to batch 1.

use plinth_state::LogEntry;
use plinth_state::protocol::LogPage;
use serde_json::Value;
use serde_json::value::RawValue;
use sha2::{Digest, Sha256};
use sqlx::PgPool;
use uuid::Uuid;

use crate::auth::digest;
use crate::error::ApiError;
use crate::journal::Stored;

/// The most events one batch may carry, as each begun update is told (a client sends this
/// many, or what 4 s gathered).
const MAX_EVENTS: usize = plinth_state::protocol::EVENTS_BATCH_MAX;
/// How many batches a client may have in flight at once: the client's own bound.
const MAX_IN_FLIGHT: i64 = plinth_state::protocol::EVENTS_IN_FLIGHT as i64;
/// The most batches one page of a log carries: at most 20,000 events (1,000 from a client that
/// sent batches of the 50 events a service once took).
const PAGE_BATCHES: i64 = 20;

/// Stores batch `seq` of update `id`'s events, sent with the access token of digest `token`,
/// whose lease `lease` must still hold the stack.
pub(crate) async fn append(
    pool: &PgPool,
    token: &[u8],
    id: Uuid,
    lease: &str,
    seq: i64,
    events: &[Box<RawValue>],
) -> Result<Stored, ApiError> {
    if seq < 1 {
        return Err(ApiError::BadRequest(format!(
            "event batches are numbered from 1, not {seq}"
        )));
    }
    let events = checked(seq, events)?;
    // Stored as parsed: only what a log keeps reaches the database. The text digested is the
    // one stored.
    let text = serde_json::to_string(&events).expect("log entries serialize");
    let content = Sha256::digest(text.as_bytes()).to_vec();
    // One statement, one round trip: the access token and the lease are checked, the update's
    // row share-locked (its phases, completion and cancellation wait: the phase a batch belongs
    // to cannot change under it), and the batch is inserted unless it comes too early. What was
    // stored under `seq` before comes back, for telling a retry from a conflict.
    let (authorized, phase, ready, inserted, taken): (
        bool,
        Option<i64>,
        bool,
        bool,
        Option<Vec<u8>>,
    ) = sqlx::query_as(
        "WITH authorized AS (
                 SELECT EXISTS (SELECT 1 FROM live_tokens WHERE digest = $7) AS yes
             ), held AS (
                 SELECT (SELECT count(*) FROM versions WHERE update_id = $1) + 1 AS phase
                 FROM updates, authorized WHERE id = $1 AND lease_digest = $2
                   AND status = 'running' AND lease_expires >= now() AND authorized.yes
                 FOR SHARE OF updates
             ), ready AS (
                 SELECT $3 <= $6 OR (
                     SELECT count(*) FROM event_batches b, held
                     WHERE b.update_id = $1 AND b.phase = held.phase
                       AND b.seq BETWEEN $3 - 2 * $6 + 1 AND $3 - $6
                 ) = LEAST($6, $3 - $6) AS yes
             ), inserted AS (
                 INSERT INTO event_batches (update_id, phase, seq, digest, events)
                 SELECT $1, held.phase, $3, $4, $5::json FROM held, ready
                 WHERE ready.yes
                 ON CONFLICT (update_id, phase, seq) DO NOTHING
                 RETURNING seq
             )
             SELECT (SELECT yes FROM authorized), (SELECT phase FROM held),
                    (SELECT yes FROM ready),
                    EXISTS (SELECT 1 FROM inserted),
                    (SELECT b.digest FROM event_batches b, held
                     WHERE b.update_id = $1 AND b.phase = held.phase AND b.seq = $3)",
    )
    .bind(id)
    .bind(digest(lease))
    .bind(seq)
    .bind(&content)
    .bind(&text)
    .bind(MAX_IN_FLIGHT)
    .bind(token)
    .fetch_one(pool)
    .await?;
    if !authorized {
        return Err(crate::auth::invalid_token());
    }
    let Some(phase) = phase else {
        return Err(crate::updates::refused(pool, id, lease).await);
    };
    if inserted {
        return Ok(Stored::New);
    }
    let taken = match taken {
        Some(taken) => Some(taken),
        // Not there when the statement began, yet not inserted although not too early: the
        // same number was being stored at that moment by another request (a retry sent while
        // the first was under way). What it stored is visible now.
        None if ready => {
            let (taken,): (Vec<u8>,) = sqlx::query_as(
                "SELECT digest FROM event_batches WHERE update_id = $1 AND phase = $2 AND seq = $3",
            )
            .bind(id)
            .bind(phase)
            .bind(seq)
            .fetch_one(pool)
            .await?;
            Some(taken)
        }
        None => None,
    };
    match taken {
        Some(stored) if stored == content => Ok(Stored::Retry),
        Some(_) => Err(ApiError::Conflict(format!(
            "event batch {seq} of update {id} was already received with other events; a batch \
             is never rewritten"
        ))),
        None => Err(ApiError::Conflict(format!(
            "event batch {seq} of update {id} came too early: the batches up to {} are not all \
             stored, and a client has at most {MAX_IN_FLIGHT} in flight",
            seq - MAX_IN_FLIGHT
        ))),
    }
}

/// The batch's events, each a log entry, numbered in increasing order.
fn checked(seq: i64, events: &[Box<RawValue>]) -> Result<Vec<LogEntry>, ApiError> {
    if events.is_empty() || events.len() > MAX_EVENTS {
        return Err(ApiError::BadRequest(format!(
            "an event batch carries 1 to {MAX_EVENTS} events, not {}",
            events.len()
        )));
    }
    let mut parsed: Vec<LogEntry> = Vec::with_capacity(events.len());
    for (index, event) in events.iter().enumerate() {
        let entry: LogEntry = serde_json::from_str(event.get()).map_err(|e| {
            ApiError::BadRequest(format!(
                "event {} of event batch {seq} is not a logged event: {e}",
                index + 1
            ))
        })?;
        if let Some(previous) = parsed.last().filter(|p| p.seq >= entry.seq) {
            return Err(ApiError::BadRequest(format!(
                "event batch {seq} numbers event {} after event {}: events are numbered in order",
                entry.seq, previous.seq
            )));
        }
        parsed.push(entry);
    }
    Ok(parsed)
}

/// A page of the events of one version of a stack, for the console: entries and events as
/// stored.
pub(crate) type Page = LogPage<Value, Value>;

/// The version, its history entry, and the phase of its update that made it.
struct Found {
    number: i64,
    update: Option<Uuid>,
    entry: Value,
    phase: i64,
}

/// Version `number` of stack `stack_id` (the latest if `None`), if there is one.
async fn version(
    pool: &PgPool,
    stack_id: i64,
    number: Option<i64>,
) -> Result<Option<Found>, ApiError> {
    // The phase of its update that made the version: its place among that update's versions.
    let version: Option<(i64, Option<Uuid>, sqlx::types::Json<Value>, i64)> = sqlx::query_as(
        "SELECT v.version, v.update_id, v.entry,
                (SELECT count(*) FROM versions w
                 WHERE w.update_id = v.update_id AND w.version <= v.version)
         FROM versions v
         WHERE v.stack_id = $1
           AND v.version = COALESCE($2, (SELECT max(version) FROM versions WHERE stack_id = $1))",
    )
    .bind(stack_id)
    .bind(number)
    .fetch_optional(pool)
    .await?;
    Ok(version.map(|(number, update, entry, phase)| Found {
        number,
        update,
        entry: entry.0,
        phase,
    }))
}

/// The version's event batches after batch `after`, as `T`: a page's and one more, which
/// says whether there is more.
async fn batches<T>(
    pool: &PgPool,
    found: &Found,
    after: i64,
    column: &str,
) -> Result<Vec<(i64, T)>, ApiError>
where
    T: for<'r> sqlx::Decode<'r, sqlx::Postgres> + sqlx::Type<sqlx::Postgres> + Send + Unpin,
{
    // A version whose update is gone (a version made before updates were kept) has none.
    let Some(update) = found.update else {
        return Ok(Vec::new());
    };
    let query = format!(
        "SELECT seq, {column} FROM event_batches
         WHERE update_id = $1 AND phase = $2 AND seq > $3 ORDER BY seq LIMIT $4"
    );
    Ok(sqlx::query_as(&query)
        .bind(update)
        .bind(i32::try_from(found.phase).unwrap_or(i32::MAX))
        .bind(after)
        .bind(PAGE_BATCHES + 1)
        .fetch_all(pool)
        .await?)
}

/// Where the page after `batches` starts (their last batch), if there is more than a page.
fn next<T>(batches: &mut Vec<(i64, T)>, after: i64) -> Option<i64> {
    let more = batches.len() > PAGE_BATCHES as usize;
    batches.truncate(PAGE_BATCHES as usize);
    more.then(|| batches.last().map_or(after, |(seq, _)| *seq))
}

/// The events of version `number` of stack `stack_id` (the latest if `None`) after batch
/// `after`; `None` if there is no such version.
pub(crate) async fn page(
    pool: &PgPool,
    stack_id: i64,
    number: Option<i64>,
    after: i64,
) -> Result<Option<Page>, ApiError> {
    let Some(found) = version(pool, stack_id, number).await? else {
        return Ok(None);
    };
    let mut batches: Vec<(i64, sqlx::types::Json<Vec<Value>>)> =
        batches(pool, &found, after, "events").await?;
    let next = next(&mut batches, after);
    let events = (batches.into_iter())
        .flat_map(|(_, events)| events.0)
        .collect();
    Ok(Some(LogPage {
        number: found.number,
        entry: found.entry,
        events,
        next,
    }))
}

/// [`page`] as the API answers it, a [`LogPage`]'s JSON, its events copied in as the service
/// stored them: a page of 20,000 events is never parsed and written again.
pub(crate) async fn page_json(
    pool: &PgPool,
    stack_id: i64,
    number: Option<i64>,
    after: i64,
) -> Result<Option<Vec<u8>>, ApiError> {
    let Some(found) = version(pool, stack_id, number).await? else {
        return Ok(None);
    };
    let mut batches: Vec<(i64, String)> = batches(pool, &found, after, "events::text").await?;
    let next = next(&mut batches, after);
    let mut events = Vec::with_capacity(batches.iter().map(|(_, b)| b.len()).sum::<usize>() + 2);
    events.push(b'[');
    for (seq, batch) in &batches {
        // Each was written by `append` as a JSON array of log entries.
        let inner = (batch.trim().strip_prefix('['))
            .and_then(|b| b.strip_suffix(']'))
            .ok_or_else(|| {
                ApiError::Internal(format!("event batch {seq} is not stored as a JSON array"))
            })?
            .trim();
        if inner.is_empty() {
            continue;
        }
        if events.len() > 1 {
            events.push(b',');
        }
        events.extend_from_slice(inner.as_bytes());
    }
    events.push(b']');
    // A `LogPage`, its fields in their order.
    let mut body = Vec::with_capacity(events.len() + 1024);
    body.extend_from_slice(format!("{{\"number\":{},\"entry\":", found.number).as_bytes());
    serde_json::to_writer(&mut body, &found.entry).expect("an entry serializes");
    body.extend_from_slice(b",\"events\":");
    body.extend_from_slice(&events);
    body.extend_from_slice(b",\"next\":");
    serde_json::to_writer(&mut body, &next).expect("a number serializes");
    body.push(b'}');
    Ok(Some(body))
}

//! Journal batches: the snapshot manager's begin and end records, sent in numbered batches while
//! an update runs. A batch is stored once: its retry (same number, same content) is answered as
//! if new, and a different batch under a number already taken is refused.

use std::sync::Arc;

use plinth_state::ParsedBatch;
use serde_json::Value;
use serde_json::value::RawValue;
use sha2::{Digest, Sha256};
use sqlx::PgPool;
use uuid::Uuid;

use crate::auth::digest;
use crate::error::ApiError;
use crate::journal_commits::{Counted, Held, Outcome, Row};
use crate::metrics::Metrics;
use crate::parsed::PARSED;

/// The most entries one batch may carry, as each begun update is told (a client sends at most
/// this many, or what came while its previous batch was under way).
pub(crate) const MAX_ENTRIES: usize = plinth_state::protocol::JOURNAL_BATCH_MAX;

/// Whether a batch was new or a retry of one already stored.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Stored {
    New,
    Retry,
}

/// Stores batch `seq` of update `id`, sent with the access token of digest `token`, whose lease
/// `lease` must still hold the stack, by the next commit of the update's journal on this
/// replica (see [`crate::journal_commits`]). A batch that comes before the one ahead of it,
/// within [`IN_FLIGHT`] of the last stored (a client sends the next while the previous one
/// commits, on another connection), waits for it here, up to [`EARLY_WAIT`]: woken when this
/// replica stores a batch of the update, and looking again every [`EARLY_POLL`] for one another
/// replica stored.
pub(crate) async fn append(
    pool: &PgPool,
    token: &[u8],
    id: Uuid,
    lease: &str,
    seq: i64,
    entries: &[Box<RawValue>],
    metrics: &Arc<Metrics>,
) -> Result<Stored, ApiError> {
    let mut batch = Checked::new(seq, entries, token, lease)?;
    let journal = Held::of(id);
    let mut counted: Option<Counted> = None;
    let deadline = tokio::time::Instant::now() + EARLY_WAIT;
    loop {
        let arrival = journal.next_stored();
        tokio::pin!(arrival);
        arrival.as_mut().enable();
        let outcome = journal.commit(pool, batch.row.clone(), metrics).await?;
        match batch.settle(pool, id, lease, outcome).await? {
            Attempt::Stored(stored) => return Ok(stored),
            Attempt::Early { next }
                if seq - next < IN_FLIGHT && tokio::time::Instant::now() < deadline =>
            {
                counted.get_or_insert_with(|| Counted::count(&metrics.journal_waiting));
                let _ = tokio::time::timeout(EARLY_POLL, arrival).await;
            }
            Attempt::Early { next } => {
                return Err(ApiError::Conflict(format!(
                    "journal batch {seq} of update {id} came before batch {next}; batches are \
                     sent in order, at most {IN_FLIGHT} in flight"
                )));
            }
        }
    }
}

/// How many journal batches a client may have in flight: the service waits for the batches
/// ahead of one that came early only within this many.
const IN_FLIGHT: i64 = plinth_state::protocol::JOURNAL_IN_FLIGHT as i64;
/// How long a batch that came early waits for those ahead of it: longer than a client retries
/// one through an outage (about 13 s, its waits stretched by `Retry-After`), so that a batch
/// stored by a late retry still finds the next one waiting rather than refused.
const EARLY_WAIT: std::time::Duration = std::time::Duration::from_secs(30);
/// How often a batch that came early looks again, for a batch another replica stored.
const EARLY_POLL: std::time::Duration = std::time::Duration::from_millis(20);

/// What an attempt to store a batch came to.
enum Attempt {
    Stored(Stored),
    /// Batch `next` is not stored yet.
    Early {
        next: i64,
    },
}

/// A batch checked as it came, ready to store.
struct Checked {
    /// Handed to the fold once stored.
    parsed: Option<ParsedBatch>,
    row: Arc<Row>,
}

impl Checked {
    fn new(
        seq: i64,
        entries: &[Box<RawValue>],
        token: &[u8],
        lease: &str,
    ) -> Result<Checked, ApiError> {
        if entries.is_empty() || entries.len() > MAX_ENTRIES {
            return Err(ApiError::BadRequest(format!(
                "a journal batch carries 1 to {MAX_ENTRIES} entries, not {}",
                entries.len()
            )));
        }
        let parsed = ParsedBatch::check(entries.iter().map(|entry| entry.get())).map_err(
            |(place, reason)| {
                ApiError::BadRequest(format!(
                    "entry {place} of journal batch {seq} is not a journal entry: {reason}"
                ))
            },
        )?;
        let CreateSeqs {
            opened,
            closed,
            needed,
        } = creates_of(seq, &parsed)?;
        // Stored and digested as the client wrote it, never parsed into a tree and written again:
        // a retry carries the same text. (One written otherwise is still told from a conflict, by
        // its content, below.)
        let text = json_array(entries);
        let content = Sha256::digest(text.as_bytes()).to_vec();
        Ok(Checked {
            parsed: Some(parsed),
            row: Arc::new(Row {
                seq,
                token: token.to_vec(),
                lease: digest(lease),
                text,
                content,
                opened,
                closed,
                needed,
            }),
        })
    }

    /// What the statement that stored the batch, or did not, found: stored, a retry, early,
    /// or refused.
    async fn settle(
        &mut self,
        pool: &PgPool,
        id: Uuid,
        lease: &str,
        (authorized, holds, last, inserted, stored, unbegun): Outcome,
    ) -> Result<Attempt, ApiError> {
        let Row {
            seq, content, text, ..
        } = &*self.row;
        let seq = *seq;
        if !authorized {
            return Err(crate::auth::invalid_token());
        }
        if !holds {
            return Err(crate::updates::refused(pool, id, lease).await);
        }
        if let Some(create) = unbegun.filter(|_| !inserted && stored.is_none() && seq == last + 1) {
            return Err(unbegun_create(seq, create));
        }
        if inserted {
            // Kept for the fold: the transaction that stored it has committed.
            let parsed = self.parsed.take().expect("a batch is inserted once");
            PARSED.keep(id, seq, content.clone(), parsed, text.len());
            return Ok(Attempt::Stored(Stored::New));
        }
        let stored = match stored {
            Some(stored) => stored,
            // Not there when the statement began, yet not inserted: the same number was being
            // stored at that moment by another request (a retry sent while the first was still
            // under way). What it stored is visible now.
            None if seq == last + 1 => {
                let (stored,): (Vec<u8>,) = sqlx::query_as(
                    "SELECT digest FROM journal_batches WHERE update_id = $1 AND seq = $2",
                )
                .bind(id)
                .bind(seq)
                .fetch_one(pool)
                .await?;
                stored
            }
            None => return Ok(Attempt::Early { next: last + 1 }),
        };
        if stored == *content || same_entries(pool, id, seq, text).await? {
            Ok(Attempt::Stored(Stored::Retry))
        } else {
            Err(ApiError::Conflict(format!(
                "journal batch {seq} of update {id} was already received with other entries; a \
             batch is never rewritten"
            )))
        }
    }
}

/// The creates batch `seq` opens, closes, and needs open, as the database keeps them.
struct CreateSeqs {
    opened: Vec<i64>,
    closed: Vec<i64>,
    needed: Vec<i64>,
}

fn creates_of(seq: i64, batch: &ParsedBatch) -> Result<CreateSeqs, ApiError> {
    let creates = batch.creates();
    let numbers = |seqs: &[u64]| -> Result<Vec<i64>, ApiError> {
        (seqs.iter())
            .map(|&s| {
                i64::try_from(s).map_err(|_| {
                    ApiError::BadRequest(format!(
                        "journal batch {seq} numbers an operation {s}, beyond what is accepted"
                    ))
                })
            })
            .collect()
    };
    let needed = numbers(&creates.needed)?;
    let closed = numbers(&creates.closed)?;
    // A create ended twice in this batch, in short after any other end: no earlier `begin`
    // makes that rebuildable.
    let mut seen = std::collections::HashSet::new();
    if let Some(create) = (needed.iter()).find(|s| !seen.insert(**s) || closed.contains(s)) {
        return Err(unbegun_create(seq, *create));
    }
    Ok(CreateSeqs {
        opened: numbers(&creates.opened)?,
        closed,
        needed,
    })
}

/// The refusal of batch `seq`, which ends `create` in short without its `begin` open.
fn unbegun_create(seq: i64, create: i64) -> ApiError {
    ApiError::BadRequest(format!(
        "journal batch {seq} ends create {create} as begun (`created-as-begun`), but no earlier \
         entry of this update began it, or it has ended already: the state could not be rebuilt \
         from such a journal; send the whole `created` entry"
    ))
}

/// `entries` as one JSON array.
fn json_array(entries: &[Box<RawValue>]) -> String {
    let length = entries.iter().map(|e| e.get().len() + 1).sum::<usize>();
    let mut array = String::with_capacity(length + 2);
    array.push('[');
    for (i, entry) in entries.iter().enumerate() {
        if i > 0 {
            array.push(',');
        }
        array.push_str(entry.get());
    }
    array.push(']');
    array
}

/// Whether batch `seq` of update `id`, stored with another digest, holds the entries of `text`
/// all the same: the retry of a batch written otherwise (by another client version, or stored
/// by a service that digested another form of it).
async fn same_entries(pool: &PgPool, id: Uuid, seq: i64, text: &str) -> Result<bool, ApiError> {
    let (stored,): (String,) =
        sqlx::query_as("SELECT entries FROM journal_batches WHERE update_id = $1 AND seq = $2")
            .bind(id)
            .bind(seq)
            .fetch_one(pool)
            .await?;
    let parsed = |text: &str| serde_json::from_str::<Value>(text).ok();
    Ok(parsed(&stored).is_some_and(|stored| Some(stored) == parsed(text)))
}

/// The update's journal entries, in order.
pub(crate) async fn entries(pool: &PgPool, id: Uuid) -> Result<Vec<Value>, ApiError> {
    let batches: Vec<(sqlx::types::Json<Vec<Value>>,)> = sqlx::query_as(
        "SELECT entries::json FROM journal_batches WHERE update_id = $1 ORDER BY seq",
    )
    .bind(id)
    .fetch_all(pool)
    .await?;
    Ok(batches.into_iter().flat_map(|(batch,)| batch.0).collect())
}

//! Journal batches: the snapshot manager's begin and end records, sent in numbered batches while
//! an update runs. A batch is stored once: its retry (same number, same content) is answered as
//! if new, and a different batch under a number already taken is refused.

use serde_json::Value;
use sha2::{Digest, Sha256};
use sqlx::PgPool;
use uuid::Uuid;

use crate::auth::digest;
use crate::error::ApiError;

/// The most entries one batch may carry (the client sends at most 100, or what 50 ms gathered).
pub(crate) const MAX_ENTRIES: usize = 100;

/// Whether a batch was new or a retry of one already stored.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Stored {
    New,
    Retry,
}

/// Stores batch `seq` of update `id`, whose lease `lease` must still hold the stack.
pub(crate) async fn append(
    pool: &PgPool,
    id: Uuid,
    lease: &str,
    seq: i64,
    entries: &[Value],
) -> Result<Stored, ApiError> {
    if entries.is_empty() || entries.len() > MAX_ENTRIES {
        return Err(ApiError::BadRequest(format!(
            "a journal batch carries 1 to {MAX_ENTRIES} entries, not {}",
            entries.len()
        )));
    }
    for (index, entry) in entries.iter().enumerate() {
        plinth_backend::check_entry(entry).map_err(|reason| {
            ApiError::BadRequest(format!(
                "entry {} of journal batch {seq} is not a journal entry: {reason}",
                index + 1
            ))
        })?;
    }
    // serde_json's maps are ordered by key, so equal batches serialize, and digest, alike. The
    // same text is what the database stores.
    let text = serde_json::to_string(entries).expect("JSON serializes");
    let content = Sha256::digest(text.as_bytes()).to_vec();
    // One statement, one round trip: the lease is checked and the update's row share-locked
    // (so that a completion or cancellation waits for it, and nothing is appended to an update
    // that has ended), and the batch is inserted only if it is the next one. What was stored
    // under `seq` before comes back, for telling a retry from a conflict.
    let (holds, last, inserted, stored): (bool, i64, bool, Option<Vec<u8>>) = sqlx::query_as(
        "WITH held AS (
             SELECT id FROM updates
             WHERE id = $1 AND lease_digest = $2 AND status = 'running'
               AND lease_expires >= now()
             FOR SHARE
         ), last AS (
             SELECT COALESCE(max(seq), 0) AS seq FROM journal_batches WHERE update_id = $1
         ), inserted AS (
             INSERT INTO journal_batches (update_id, seq, digest, entries)
             SELECT $1, $3, $4, $5::jsonb FROM held, last WHERE last.seq = $3 - 1
             ON CONFLICT DO NOTHING
             RETURNING seq
         )
         SELECT EXISTS (SELECT 1 FROM held), (SELECT seq FROM last),
                EXISTS (SELECT 1 FROM inserted),
                (SELECT digest FROM journal_batches WHERE update_id = $1 AND seq = $3)",
    )
    .bind(id)
    .bind(digest(lease))
    .bind(seq)
    .bind(&content)
    .bind(&text)
    .fetch_one(pool)
    .await?;
    if !holds {
        return Err(crate::updates::refused(pool, id, lease).await);
    }
    if inserted {
        return Ok(Stored::New);
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
        None => {
            return Err(ApiError::Conflict(format!(
                "journal batch {seq} of update {id} came before batch {}; batches are sent in \
                 order",
                last + 1
            )));
        }
    };
    if stored == content {
        Ok(Stored::Retry)
    } else {
        Err(ApiError::Conflict(format!(
            "journal batch {seq} of update {id} was already received with other entries; a \
             batch is never rewritten"
        )))
    }
}

/// The update's journal entries, in order.
pub(crate) async fn entries(pool: &PgPool, id: Uuid) -> Result<Vec<Value>, ApiError> {
    let batches: Vec<(sqlx::types::Json<Vec<Value>>,)> =
        sqlx::query_as("SELECT entries FROM journal_batches WHERE update_id = $1 ORDER BY seq")
            .bind(id)
            .fetch_all(pool)
            .await?;
    Ok(batches.into_iter().flat_map(|(batch,)| batch.0).collect())
}

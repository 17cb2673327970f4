//! Group commit of journal batches: the batches of one update that reach this replica while a
//! commit of that update's journal is in progress are stored together by the next transaction,
//! one commit (one WAL flush, when the database syncs) for all of them, instead of a commit each
//! in turn. Each batch is still stored by its own statement, checked as if alone (its token, its
//! lease, its number, the creates it ends); a batch is answered only once the transaction that
//! stored it has committed, so an acknowledged batch is durable as before.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, MutexGuard};

use sqlx::PgPool;
use sqlx::postgres::{PgArguments, Postgres};
use sqlx::query::QueryAs;
use tokio::sync::{Notify, oneshot};
use uuid::Uuid;

use crate::error::ApiError;
use crate::metrics::Metrics;

/// One batch's statement: what it binds.
pub(crate) struct Row {
    pub(crate) seq: i64,
    /// The digest of the access token it was sent with.
    pub(crate) token: Vec<u8>,
    /// The digest of the lease it was sent under.
    pub(crate) lease: Vec<u8>,
    /// Its entries, as one JSON array, as the client wrote them.
    pub(crate) text: String,
    /// The digest of `text`.
    pub(crate) content: Vec<u8>,
    /// The creates it opens, closes, and needs open.
    pub(crate) opened: Vec<i64>,
    pub(crate) closed: Vec<i64>,
    pub(crate) needed: Vec<i64>,
}

/// What the statement found: whether the token is live and the lease holds, the last batch
/// stored before it, whether it was inserted, the digest stored under its number (before it),
/// and the first create it ends in short that is not open.
pub(crate) type Outcome = (bool, bool, i64, bool, Option<Vec<u8>>, Option<i64>);

impl Row {
    /// One statement, one round trip: the access token and the lease are checked, the update's
    /// row share-locked (so that a completion or cancellation waits for it, and nothing is
    /// appended to an update that has ended), and the batch is inserted only if it is the next
    /// one. What was stored under `seq` before comes back, for telling a retry from a conflict.
    /// The batch is checked against the journal it extends in the same statement: the creates
    /// it ends in short must be open (begun in an earlier batch and not ended), and the creates
    /// it leaves open are recorded for the batches after it. In a transaction, each statement
    /// sees what the ones before it stored.
    fn statement(&self, id: Uuid) -> QueryAs<'_, Postgres, Outcome, PgArguments> {
        sqlx::query_as(
            "WITH authorized AS (
             SELECT EXISTS (SELECT 1 FROM live_tokens WHERE digest = $6) AS yes
         ), held AS (
             SELECT id FROM updates, authorized
             WHERE id = $1 AND lease_digest = $2 AND status = 'running'
               AND lease_expires >= now() AND authorized.yes
             FOR SHARE OF updates
         ), last AS (
             SELECT COALESCE(max(seq), 0) AS seq FROM journal_batches WHERE update_id = $1
         ), unbegun AS (
             SELECT min(s) AS seq FROM unnest($9::bigint[]) s
             WHERE NOT EXISTS (SELECT 1 FROM open_creates o WHERE o.update_id = $1 AND o.seq = s)
         ), inserted AS (
             INSERT INTO journal_batches (update_id, seq, digest, entries)
             SELECT $1, $3, $4, $5 FROM held, last, unbegun
             WHERE last.seq = $3 - 1 AND unbegun.seq IS NULL
             ON CONFLICT DO NOTHING
             RETURNING seq
         ), closed AS (
             DELETE FROM open_creates
             WHERE update_id = $1 AND seq = ANY ($8::bigint[] || $9::bigint[])
               AND EXISTS (SELECT 1 FROM inserted)
         ), opened AS (
             INSERT INTO open_creates (update_id, seq)
             SELECT $1, s FROM unnest($7::bigint[]) s WHERE EXISTS (SELECT 1 FROM inserted)
             ON CONFLICT DO NOTHING
         )
         SELECT (SELECT yes FROM authorized), EXISTS (SELECT 1 FROM held), (SELECT seq FROM last),
                EXISTS (SELECT 1 FROM inserted),
                (SELECT digest FROM journal_batches WHERE update_id = $1 AND seq = $3),
                (SELECT seq FROM unbegun)",
        )
        .bind(id)
        .bind(&self.lease)
        .bind(self.seq)
        .bind(&self.content)
        .bind(&self.text)
        .bind(&self.token)
        .bind(&self.opened)
        .bind(&self.closed)
        .bind(&self.needed)
    }
}

/// This replica's view of one update's journal.
#[derive(Default)]
pub(crate) struct Journal {
    /// Woken whenever a commit stored a batch of the update.
    stored: Notify,
    queue: Mutex<Queue>,
}

#[derive(Default)]
struct Queue {
    /// The batches the next transaction stores.
    batches: Vec<Queued>,
    /// Whether a committer is storing batches of the update now.
    committing: bool,
}

struct Queued {
    row: Arc<Row>,
    answer: oneshot::Sender<Result<Outcome, ApiError>>,
}

/// The updates whose batches this replica is storing, or which wait here for the ones ahead.
static JOURNALS: LazyLock<Mutex<HashMap<Uuid, Arc<Journal>>>> = LazyLock::new(Default::default);

fn journals() -> MutexGuard<'static, HashMap<Uuid, Arc<Journal>>> {
    // A panic holding it leaves whole entries: go on with them.
    JOURNALS.lock().unwrap_or_else(|e| e.into_inner())
}

/// A hold on an update's [`Journal`] on this replica, given up when dropped: the last hold
/// removes it.
pub(crate) struct Held {
    id: Uuid,
    journal: Arc<Journal>,
}

impl Held {
    pub(crate) fn of(id: Uuid) -> Held {
        let journal = journals().entry(id).or_default().clone();
        Held { id, journal }
    }

    /// The next commit that stores a batch of the update, as a future to enable before looking.
    pub(crate) fn next_stored(&self) -> tokio::sync::futures::Notified<'_> {
        self.journal.stored.notified()
    }

    /// Stores `row` with the batches of the update that came with it, by the next transaction:
    /// at once if none is in progress. Answers once that transaction has committed.
    pub(crate) async fn commit(
        &self,
        pool: &PgPool,
        row: Arc<Row>,
        metrics: &Arc<Metrics>,
    ) -> Result<Outcome, ApiError> {
        let (answer, answered) = oneshot::channel();
        let lead = {
            let mut queue = self.queue();
            queue.batches.push(Queued { row, answer });
            !std::mem::replace(&mut queue.committing, true)
        };
        let _queued = if lead {
            // A task of its own: the request that started it may be dropped (its client gone)
            // while the others wait for its commit.
            tokio::spawn(commit_queued(
                pool.clone(),
                Held::of(self.id),
                metrics.clone(),
            ));
            None
        } else {
            Some(Counted::count(&metrics.journal_queued))
        };
        answered.await.unwrap_or_else(|_| {
            Err(ApiError::Internal(
                "the replica stopped storing this update's journal batches; send the batch again"
                    .into(),
            ))
        })
    }

    fn queue(&self) -> MutexGuard<'_, Queue> {
        (self.journal.queue.lock()).unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        let mut journals = journals();
        // The map's and this one: nothing else of the update is here.
        if Arc::strong_count(&self.journal) == 2 {
            journals.remove(&self.id);
        }
    }
}

/// Stores the update's queued batches, all that are queued in one transaction, until none is.
async fn commit_queued(pool: PgPool, held: Held, metrics: Arc<Metrics>) {
    let _stopping = Stopping(&held);
    loop {
        let mut batches = {
            let mut queue = held.queue();
            if queue.batches.is_empty() {
                queue.committing = false;
                break;
            }
            std::mem::take(&mut queue.batches)
        };
        batches.sort_by_key(|batch| batch.row.seq);
        let rows: Vec<&Row> = batches.iter().map(|batch| &*batch.row).collect();
        let outcomes: Vec<Result<Outcome, sqlx::Error>> = match store(&pool, held.id, &rows).await {
            Ok(outcomes) => outcomes.into_iter().map(Ok).collect(),
            // Which statement failed, and whether the others would have: each alone tells.
            Err(_) if rows.len() > 1 => {
                let mut outcomes = Vec::with_capacity(rows.len());
                for row in &rows {
                    outcomes.push(
                        store(&pool, held.id, &[*row])
                            .await
                            .map(|mut o| o.remove(0)),
                    );
                }
                outcomes
            }
            Err(e) => vec![Err(e)],
        };
        let mut stored = 0;
        for (batch, outcome) in batches.into_iter().zip(outcomes) {
            if let Ok((.., true, _, _)) = &outcome {
                stored += 1;
            }
            // Its request may be gone: its client sends it again, and is told it was stored.
            let _ = batch.answer.send(outcome.map_err(ApiError::from));
        }
        if stored > 0 {
            metrics.journal_commits.inc();
            held.journal.stored.notify_waiters();
        }
    }
}

/// Stores `rows`, in their order, by one transaction.
async fn store(pool: &PgPool, id: Uuid, rows: &[&Row]) -> Result<Vec<Outcome>, sqlx::Error> {
    if let [row] = rows {
        // One statement commits by itself: no round trips to begin and commit.
        return Ok(vec![row.statement(id).fetch_one(pool).await?]);
    }
    let mut transaction = pool.begin().await?;
    let mut outcomes = Vec::with_capacity(rows.len());
    for row in rows {
        outcomes.push(row.statement(id).fetch_one(&mut *transaction).await?);
    }
    transaction.commit().await?;
    Ok(outcomes)
}

/// Set while a committer runs: if it panics, the batches queued are answered (as failed, by
/// dropping their senders) and the next batch starts a committer again, rather than every
/// batch of the update waiting for good.
struct Stopping<'a>(&'a Held);

impl Drop for Stopping<'_> {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            return;
        }
        let mut queue = self.0.queue();
        queue.batches.clear();
        queue.committing = false;
    }
}

/// Counts a batch in a gauge for as long as it waits.
pub(crate) struct Counted<'a>(&'a prometheus_client::metrics::gauge::Gauge);

impl Counted<'_> {
    pub(crate) fn count(gauge: &prometheus_client::metrics::gauge::Gauge) -> Counted<'_> {
        gauge.inc();
        Counted(gauge)
    }
}

impl Drop for Counted<'_> {
    fn drop(&mut self) {
        self.0.dec();
    }
}

//! Journal batches: the snapshot manager's begin and end records, sent in numbered batches while
//! an update runs. A batch is stored once: its retry (same number, same content) is answered as
//! if new, and a different batch under a number already taken is refused.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use plinth_state::ParsedBatch;
use plinth_state::protocol::MAX_OPEN_CREATES;
use prometheus_client::metrics::gauge::Gauge;
use serde_json::Value;
use serde_json::value::RawValue;
use sha2::{Digest, Sha256};
use sqlx::PgPool;
use tokio::sync::Notify;
use uuid::Uuid;

use crate::auth::digest;
use crate::db::HotConnections;
use crate::error::ApiError;
use crate::open_creates::{self, CaughtUp, Effect, OPEN, Validity};
use crate::parsed::PARSED;
use crate::replays::REPLAYS;

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
/// `lease` must still hold the stack. A batch that comes before the one ahead of it, within
/// [`IN_FLIGHT`] of the last stored (a client sends the next while the previous one commits,
/// on another connection), waits for it here, up to [`EARLY_WAIT`]: woken when this replica
/// stores a batch of the update, and looking again every [`EARLY_POLL`] for one another replica
/// stored. While this replica is storing every batch ahead of it, it waits without reading the
/// database: a third of an update's batches come so, and each read cost a query.
pub(crate) async fn append(
    (pool, hot): (&PgPool, &HotConnections),
    token: &[u8],
    id: Uuid,
    lease: &str,
    seq: i64,
    entries: &[Box<RawValue>],
    waiting_gauge: &Gauge,
) -> Result<Stored, ApiError> {
    let mut batch = Checked::new(seq, entries)?;
    let waiting = Arrivals::watch(id);
    let _storing = waiting.storing(seq);
    let mut counted: Option<Waiting> = None;
    let deadline = tokio::time::Instant::now() + EARLY_WAIT;
    loop {
        let arrival = waiting.next();
        tokio::pin!(arrival);
        arrival.as_mut().enable();
        let known = match OPEN.check(id, seq, &batch.needed, &batch.effect) {
            Some(validity) => CaughtUp::Known(validity),
            None => match OPEN.through(id) {
                Some(through) if waiting.stores_here(through, seq) => {
                    CaughtUp::Early { next: through + 1 }
                }
                _ => {
                    let asked = (batch.needed.as_slice(), &batch.effect);
                    open_creates::catch_up(pool, token, id, lease, seq, asked).await?
                }
            },
        };
        let attempt = match known {
            CaughtUp::Known(validity) => {
                (batch.store((pool, hot), token, id, lease, validity)).await?
            }
            CaughtUp::Early { next } => Attempt::Early { next },
        };
        match attempt {
            Attempt::Stored(stored) => {
                if stored == Stored::New {
                    waiting.stored();
                }
                return Ok(stored);
            }
            Attempt::Early { next }
                if seq - next < IN_FLIGHT && tokio::time::Instant::now() < deadline =>
            {
                counted.get_or_insert_with(|| Waiting::count(waiting_gauge));
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

/// Counts a batch waiting in the gauge of those waiting, for as long as it does.
struct Waiting<'a>(&'a Gauge);

impl Waiting<'_> {
    fn count(gauge: &Gauge) -> Waiting<'_> {
        gauge.inc();
        Waiting(gauge)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// The batches of each update under way on this replica.
static WAITING: std::sync::LazyLock<std::sync::Mutex<HashMap<Uuid, Arc<Watch>>>> =
    std::sync::LazyLock::new(Default::default);

/// One update's batches under way on this replica.
#[derive(Default)]
struct Watch {
    /// Wakes the batches waiting for those ahead of them: when one is stored, or given up.
    notify: Notify,
    /// The numbers of the batches being stored (a retry sent while the first try is still under
    /// way counts twice).
    storing: std::sync::Mutex<Vec<i64>>,
}

impl Watch {
    fn storing(&self) -> std::sync::MutexGuard<'_, Vec<i64>> {
        self.storing.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A request's view of the arrivals of its update's batches on this replica.
struct Arrivals {
    id: Uuid,
    watch: Arc<Watch>,
}

impl Arrivals {
    fn watch(id: Uuid) -> Arrivals {
        let mut waiting = WAITING.lock().expect("never poisoned");
        let watch = waiting.entry(id).or_default().clone();
        Arrivals { id, watch }
    }

    /// Counts batch `seq` as being stored here, until the guard is dropped.
    fn storing(&self, seq: i64) -> Storing<'_> {
        self.watch.storing().push(seq);
        Storing {
            watch: &self.watch,
            seq,
        }
    }

    /// Whether every batch between `through`, the last this replica knows stored, and `seq` is
    /// being stored here (at least one is, and fewer than [`IN_FLIGHT`]: a batch further ahead
    /// is refused, never waited for): their outcome wakes this one.
    fn stores_here(&self, through: i64, seq: i64) -> bool {
        let storing = self.watch.storing();
        (1..IN_FLIGHT).contains(&(seq - 1 - through))
            && (through + 1..seq).all(|ahead| storing.contains(&ahead))
    }

    /// The next batch this replica stores, as a future to enable before looking.
    fn next(&self) -> tokio::sync::futures::Notified<'_> {
        self.watch.notify.notified()
    }

    /// Wakes the batches waiting for this one.
    fn stored(&self) {
        self.watch.notify.notify_waiters();
    }
}

impl Drop for Arrivals {
    fn drop(&mut self) {
        let mut waiting = WAITING.lock().expect("never poisoned");
        // The map's and this one: no other request of the update is here.
        if Arc::strong_count(&self.watch) == 2 {
            waiting.remove(&self.id);
        }
    }
}

/// A batch being stored on this replica: once stored or given up (refused, its request gone),
/// the batches waiting for it look again.
struct Storing<'a> {
    watch: &'a Watch,
    seq: i64,
}

impl Drop for Storing<'_> {
    fn drop(&mut self) {
        let mut storing = self.watch.storing();
        if let Some(at) = storing.iter().position(|&s| s == self.seq) {
            storing.swap_remove(at);
        }
        drop(storing);
        self.watch.notify.notify_waiters();
    }
}

/// A batch checked as it came, ready to store.
struct Checked {
    seq: i64,
    /// Handed to the fold once stored.
    parsed: Option<ParsedBatch>,
    effect: Effect,
    /// The creates it ends in short, which earlier batches must have left open.
    needed: Vec<i64>,
    text: String,
    content: Vec<u8>,
}

impl Checked {
    fn new(seq: i64, entries: &[Box<RawValue>]) -> Result<Checked, ApiError> {
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
        let (effect, needed) = creates_of(seq, &parsed)?;
        // Stored and digested as the client wrote it, never parsed into a tree and written again:
        // a retry carries the same text. (One written otherwise is still told from a conflict, by
        // its content, below.)
        let text = json_array(entries);
        let content = Sha256::digest(text.as_bytes()).to_vec();
        Ok(Checked {
            seq,
            parsed: Some(parsed),
            effect,
            needed,
            text,
            content,
        })
    }

    /// Stores the batch, if `validity` says it may extend the journal, unless it came early;
    /// or tells a retry from a conflict.
    async fn store(
        &mut self,
        (pool, hot): (&PgPool, &HotConnections),
        token: &[u8],
        id: Uuid,
        lease: &str,
        validity: Validity,
    ) -> Result<Attempt, ApiError> {
        let Checked {
            seq,
            parsed,
            effect,
            text,
            content,
            ..
        } = self;
        let seq = *seq;
        let mut conn = hot.take().await?;
        // One statement, one round trip: the access token and the lease are checked, the update's
        // row share-locked (so that a completion or cancellation waits for it, and nothing is
        // appended to an update that has ended), and the batch is inserted only if it is the next
        // one, with what it does to the creates open, for replicas that catch up. What was
        // stored under `seq` before comes back, for telling a retry from a conflict.
        #[allow(clippy::type_complexity)]
        let (authorized, holds, last, inserted, stored): (
            bool,
            bool,
            i64,
            bool,
            Option<Vec<u8>>,
        ) = sqlx::query_as(
            "WITH authorized AS (
                 SELECT EXISTS (SELECT 1 FROM live_tokens WHERE digest = $6) AS yes
             ), held AS (
                 SELECT id FROM updates, authorized
                 WHERE id = $1 AND lease_digest = $2 AND status = 'running'
                   AND lease_expires >= now() AND authorized.yes
                 FOR SHARE OF updates
             ), last AS (
                 SELECT COALESCE(max(seq), 0) AS seq FROM journal_batches WHERE update_id = $1
             ), inserted AS (
                 INSERT INTO journal_batches (update_id, seq, digest, entries, opens, ends)
                 SELECT $1, $3, $4, $5::json, $7, $8 FROM held, last
                 WHERE last.seq = $3 - 1 AND $9
                 ON CONFLICT DO NOTHING
                 RETURNING seq
             )
             SELECT (SELECT yes FROM authorized), EXISTS (SELECT 1 FROM held),
                    (SELECT seq FROM last), EXISTS (SELECT 1 FROM inserted),
                    (SELECT digest FROM journal_batches WHERE update_id = $1 AND seq = $3)",
        )
        .bind(id)
        .bind(digest(lease))
        .bind(seq)
        .bind(&*content)
        .bind(&*text)
        .bind(token)
        .bind(&effect.opens)
        .bind(&effect.ends)
        .bind(validity == Validity::Valid)
        .fetch_one(&mut *conn)
        .await?;
        conn.answered();
        if !authorized {
            return Err(crate::auth::invalid_token());
        }
        if !holds {
            return Err(crate::updates::refused(pool, id, lease).await);
        }
        // Refused only as the next batch: a retry of a stored one is told by its digest below.
        if !inserted && stored.is_none() && seq == last + 1 {
            match validity {
                Validity::Unbegun(create) => return Err(unbegun_create(seq, create)),
                Validity::TooManyOpen => return Err(too_many_open(seq)),
                Validity::Valid | Validity::Unknown => {}
            }
        }
        if inserted {
            OPEN.stored(id, seq, effect);
            // Replayed or kept for the fold, once this transaction is committed: it is one
            // statement.
            let parsed = parsed.take().expect("a batch is inserted once");
            let size = text.len();
            if let Some(parsed) = REPLAYS.keep(pool, id, seq, content.clone(), parsed, size) {
                PARSED.keep(id, seq, content.clone(), parsed, size);
            }
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

/// What batch `seq` does to the creates open, and the creates it needs open.
fn creates_of(seq: i64, batch: &ParsedBatch) -> Result<(Effect, Vec<i64>), ApiError> {
    let creates = batch.creates();
    let (effect, needed) = Effect::of(&creates).map_err(|s| {
        ApiError::BadRequest(format!(
            "journal batch {seq} numbers an operation {s}, beyond what is accepted"
        ))
    })?;
    // A create ended twice in this batch, in short after any other end: no earlier `begin`
    // makes that rebuildable.
    let mut seen = HashSet::new();
    let closed: HashSet<u64> = creates.closed.iter().copied().collect();
    if let Some(&create) =
        (needed.iter()).find(|&&s| !seen.insert(s) || closed.contains(&(s as u64)))
    {
        return Err(unbegun_create(seq, create));
    }
    Ok((effect, needed))
}

/// The refusal of batch `seq`, which ends `create` in short without its `begin` open.
fn unbegun_create(seq: i64, create: i64) -> ApiError {
    ApiError::BadRequest(format!(
        "journal batch {seq} ends create {create} as begun (`created-as-begun`), but no earlier \
         entry of this update began it, or it has ended already: the state could not be rebuilt \
         from such a journal; send the whole `created` entry"
    ))
}

fn too_many_open(seq: i64) -> ApiError {
    ApiError::BadRequest(format!(
        "journal batch {seq} would leave more than {MAX_OPEN_CREATES} creates of this update \
         begun and not ended, more than a client has operations in flight (`--parallel` is at \
         most {MAX_OPEN_CREATES}): end the creates begun before beginning more"
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
    let (stored,): (String,) = sqlx::query_as(
        "SELECT entries::text FROM journal_batches WHERE update_id = $1 AND seq = $2",
    )
    .bind(id)
    .bind(seq)
    .fetch_one(pool)
    .await?;
    let parsed = |text: &str| serde_json::from_str::<Value>(text).ok();
    Ok(parsed(&stored).is_some_and(|stored| Some(stored) == parsed(text)))
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

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::pin::pin;
    use std::task::{Context, Poll, Waker};

    use super::*;

    /// Whether `future` is ready, polled once.
    fn ready(future: std::pin::Pin<&mut impl Future>) -> bool {
        let mut context = Context::from_waker(Waker::noop());
        matches!(future.poll(&mut context), Poll::Ready(_))
    }

    #[test]
    fn a_batch_waits_here_only_while_every_batch_ahead_is_stored_here() {
        let id = Uuid::from_u128(0x5107);
        let waiting = Arrivals::watch(id);
        let first = waiting.storing(1);
        let second = waiting.storing(2);
        assert!(waiting.stores_here(0, 2), "batch 1 is under way here");
        assert!(
            !waiting.stores_here(0, 3),
            "batches 1 and 2 are, but 3 is beyond the batches in flight"
        );
        assert!(!waiting.stores_here(0, 4), "batch 3 is not");
        assert!(
            !waiting.stores_here(1, 2),
            "none is ahead of 2 once 1 is stored"
        );
        assert!(
            !waiting.stores_here(2, 2),
            "a retry of a stored batch waits for none"
        );

        // A batch given up (or stored) wakes those waiting: they look again.
        let arrival = waiting.next();
        let mut arrival = pin!(arrival);
        arrival.as_mut().enable();
        assert!(!ready(arrival.as_mut()));
        drop(first);
        assert!(
            ready(arrival.as_mut()),
            "woken when batch 1 is no longer under way"
        );
        assert!(!waiting.stores_here(0, 2));

        // A retry sent while its first try is under way counts twice.
        let retry = waiting.storing(2);
        drop(second);
        assert!(waiting.stores_here(1, 3));
        drop(retry);
        assert!(!waiting.stores_here(1, 3));
        // However many a client says it stores, a batch waits only within the window.
        let far: Vec<Storing> = (2..1000).map(|seq| waiting.storing(seq)).collect();
        assert!(!waiting.stores_here(1, 1000));
        drop(far);
    }

    #[test]
    fn an_update_is_watched_while_a_request_of_it_is_here() {
        let id = Uuid::from_u128(0x5108);
        let watched = || WAITING.lock().unwrap().contains_key(&id);
        let one = Arrivals::watch(id);
        let two = Arrivals::watch(id);
        drop(one);
        assert!(watched());
        drop(two);
        assert!(!watched(), "forgotten with its last request");
    }
}

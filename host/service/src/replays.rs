//! Each running update's journal replayed on this replica as its batches are stored, so that the
//! fold at the end of a phase only writes the state: the replay was most of a fold, and the
//! client waits for the fold.
//!
//! Only a shortcut, as [`crate::parsed`] is: a fold takes a replay only if it began from the
//! base the fold would read (the same version, its rows untouched since) and applied exactly
//! the batches stored since the last fold, digest for digest; otherwise the fold replays them
//! as before. A replay that fails is dropped: the fold's own replay says why. A replay begins
//! with an update's first batch, or with the first batch after a phase this replica folded,
//! and its batches are applied off the requests' path, in order, one task at a time.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use plinth_engine::names::{ProjectName, StackName};
use plinth_state::{ParsedBatch, PluginUse, Rebuilt, Replay as Fields, Replayer};
use sqlx::PgPool;
use uuid::Uuid;

use crate::versions::{self, BaseIdentity};

/// The most batch text, in bytes, the replays under way may hold (their states, bases
/// included, take several times that): an `up` of 100,000 creates sends about 70 MB. A replay
/// that would go beyond it is dropped, and its update's batches are kept as [`crate::parsed`]
/// keeps them.
const CAPACITY: usize = 128 << 20;

/// How long a replay is kept without a batch: one whose update another replica ends is never
/// taken.
const KEEP_FOR: Duration = Duration::from_secs(600);

/// This replica's replays.
pub(crate) static REPLAYS: Replays = Replays::new(CAPACITY, KEEP_FOR);

pub(crate) struct Replays {
    slots: Mutex<Option<Slots>>,
    capacity: usize,
    keep_for: Duration,
}

#[derive(Default)]
struct Slots {
    updates: HashMap<Uuid, Slot>,
    /// The text held by every replay.
    held: usize,
}

enum Slot {
    /// A phase was folded here through the batch before this one, at that moment: a replay may
    /// begin with it.
    Next(i64, Instant),
    Replaying(Arc<Replaying>),
}

/// One update's replay.
struct Replaying {
    /// The batches stored and not applied yet, by number.
    waiting: Mutex<Waiting>,
    /// Applied by one task at a time, in order.
    replay: tokio::sync::Mutex<Replay>,
}

struct Waiting {
    batches: BTreeMap<i64, Stored>,
    /// The text this replay holds.
    held: usize,
    last: Instant,
    /// A task is applying them, or about to.
    applying: bool,
}

struct Stored {
    digest: Vec<u8>,
    batch: ParsedBatch,
}

enum Replay {
    /// Its base is not read yet; it begins with batch `first`.
    Unread {
        first: i64,
    },
    Ready(Box<Ready>),
    /// It failed, or a fold took it.
    Over,
}

struct Ready {
    base: BaseIdentity,
    /// The first batch it applies.
    first: i64,
    /// The batches applied, in order, with their digests.
    applied: Vec<(i64, Vec<u8>)>,
    replayer: Replayer,
}

impl Ready {
    fn next(&self) -> i64 {
        self.applied.last().map_or(self.first, |(seq, _)| seq + 1)
    }

    /// Applies `batches`, in order; `false` if one fails.
    fn apply(&mut self, batches: Vec<(i64, Stored)>) -> bool {
        for (seq, Stored { digest, batch }) in batches {
            if seq != self.next() || self.replayer.apply(batch).is_err() {
                return false;
            }
            self.applied.push((seq, digest));
        }
        true
    }
}

impl Waiting {
    /// The batches waiting from `next` on without a gap, in order.
    fn take_from(&mut self, mut next: i64) -> Vec<(i64, Stored)> {
        let mut taken = Vec::new();
        while let Some(stored) = self.batches.remove(&next) {
            taken.push((next, stored));
            next += 1;
        }
        taken
    }
}

impl Replaying {
    fn waiting(&self) -> MutexGuard<'_, Waiting> {
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Replays {
    const fn new(capacity: usize, keep_for: Duration) -> Replays {
        Replays {
            slots: Mutex::new(None),
            capacity,
            keep_for,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Option<Slots>> {
        // Every change leaves whole slots: a panic holding it leaves nothing half done.
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes batch `seq` of update `update`, stored with `digest` from a text of `size` bytes,
    /// into its replay, and applies it off the request's path; gives it back if the update has
    /// no replay here (the caller keeps it for the fold otherwise).
    pub(crate) fn keep(
        &self,
        pool: &PgPool,
        update: Uuid,
        seq: i64,
        digest: Vec<u8>,
        batch: ParsedBatch,
        size: usize,
    ) -> Option<ParsedBatch> {
        let mut slots = self.lock();
        let slots = slots.get_or_insert_with(Slots::default);
        let replaying = match slots.updates.get(&update) {
            Some(Slot::Replaying(replaying)) => replaying.clone(),
            Some(Slot::Next(next, _)) if *next == seq => slots.begin(update, seq, self.keep_for),
            None if seq == 1 => slots.begin(update, seq, self.keep_for),
            _ => return Some(batch),
        };
        if slots.held + size > self.capacity {
            // Dropped (what it holds is freed once the batch being applied is): its update's
            // batches are kept elsewhere from now on.
            replaying.waiting().batches.clear();
            slots.remove(update);
            return Some(batch);
        }
        let mut waiting = replaying.waiting();
        waiting.held += size;
        slots.held += size;
        waiting.last = Instant::now();
        waiting.batches.insert(seq, Stored { digest, batch });
        if !std::mem::replace(&mut waiting.applying, true) {
            drop(waiting);
            tokio::spawn(apply_waiting(pool.clone(), update, replaying));
        }
        None
    }

    /// The state update `update`'s replay makes, recording `plugins` (the base's if `None`), if
    /// it began from `base`, after batch `folded`, and applied exactly the batches `stored` (by
    /// number and digest, in order). A replay is taken once; a later phase may begin another.
    pub(crate) async fn finish(
        &self,
        update: Uuid,
        base: &BaseIdentity,
        folded: i64,
        stored: &[(i64, Vec<u8>)],
        plugins: Option<Vec<PluginUse>>,
    ) -> Option<Rebuilt> {
        let last = stored.last()?.0;
        let replaying = {
            let mut slots = self.lock();
            let slots = slots.get_or_insert_with(Slots::default);
            let slot = (slots.updates).insert(update, Slot::Next(last + 1, Instant::now()));
            let Some(Slot::Replaying(replaying)) = slot else {
                return None;
            };
            let mut waiting = replaying.waiting();
            slots.held -= std::mem::take(&mut waiting.held);
            drop(waiting);
            replaying
        };
        // Waits for the batches being applied.
        let mut replay = replaying.replay.lock().await;
        let Replay::Ready(mut ready) = std::mem::replace(&mut *replay, Replay::Over) else {
            return None;
        };
        drop(replay);
        if ready.base != *base || ready.first != folded + 1 {
            return None;
        }
        let rest = replaying.waiting().take_from(ready.next());
        let stored = stored.to_vec();
        let finished = tokio::task::spawn_blocking(move || {
            (ready.apply(rest) && ready.applied == stored)
                .then(|| ready.replayer.finish(plugins).ok())
                .flatten()
        });
        finished.await.ok().flatten()
    }

    /// Forgets update `update`, ended.
    pub(crate) fn forget(&self, update: Uuid) {
        let mut slots = self.lock();
        if let Some(slots) = slots.as_mut() {
            slots.remove(update);
        }
    }
}

impl Slots {
    /// Begins a replay of update `update` from batch `first`, forgetting those idle for
    /// `keep_for` first.
    fn begin(&mut self, update: Uuid, first: i64, keep_for: Duration) -> Arc<Replaying> {
        self.drop_idle(keep_for);
        let replaying = Arc::new(Replaying {
            waiting: Mutex::new(Waiting {
                batches: BTreeMap::new(),
                held: 0,
                last: Instant::now(),
                applying: false,
            }),
            replay: tokio::sync::Mutex::new(Replay::Unread { first }),
        });
        (self.updates).insert(update, Slot::Replaying(replaying.clone()));
        replaying
    }

    fn remove(&mut self, update: Uuid) {
        if let Some(Slot::Replaying(replaying)) = self.updates.remove(&update) {
            self.held -= std::mem::take(&mut replaying.waiting().held);
        }
    }

    /// Forgets the replays that took no batch for `keep_for`, and the phases folded as long ago
    /// (their updates may have ended elsewhere).
    fn drop_idle(&mut self, keep_for: Duration) {
        let idle: Vec<Uuid> = (self.updates.iter())
            .filter(|(_, slot)| match slot {
                Slot::Replaying(replaying) => replaying.waiting().last.elapsed() > keep_for,
                Slot::Next(_, folded) => folded.elapsed() > keep_for,
            })
            .map(|(update, _)| *update)
            .collect();
        for update in idle {
            self.remove(update);
        }
    }
}

/// Applies the batches of `replaying` waiting in order, reading its base first.
async fn apply_waiting(pool: PgPool, update: Uuid, replaying: Arc<Replaying>) {
    let mut replay = replaying.replay.lock().await;
    if let Replay::Unread { first } = *replay {
        *replay = match read_base(&pool, update).await {
            Some((base, replayer)) => Replay::Ready(Box::new(Ready {
                base,
                first,
                applied: Vec::new(),
                replayer,
            })),
            None => Replay::Over,
        };
    }
    loop {
        let (ready, batches) = {
            let mut waiting = replaying.waiting();
            let batches = match &*replay {
                Replay::Ready(ready) => waiting.take_from(ready.next()),
                _ => {
                    // Never to be applied: the fold reads them from the database.
                    waiting.batches.clear();
                    Vec::new()
                }
            };
            if batches.is_empty() {
                waiting.applying = false;
                return;
            }
            let Replay::Ready(ready) = &mut *replay else {
                unreachable!("batches are taken only for a replay ready")
            };
            (ready, batches)
        };
        // A batch of a hundred entries is a few hundred microseconds of work: applied here,
        // one at a time, rather than handed to another thread, which cost more than it.
        for batch in batches {
            if !ready.apply(vec![batch]) {
                *replay = Replay::Over;
                break;
            }
            tokio::task::yield_now().await;
        }
    }
}

/// The base update `update` folds its batches over, read and parsed.
async fn read_base(pool: &PgPool, update: Uuid) -> Option<(BaseIdentity, Replayer)> {
    let mut conn = pool.acquire().await.ok()?;
    let (stack_id, project, name): (i64, String, String) = sqlx::query_as(
        "SELECT s.id, s.project, s.name FROM updates u JOIN stacks s ON s.id = u.stack_id
         WHERE u.id = $1",
    )
    .bind(update)
    .fetch_one(&mut *conn)
    .await
    .ok()?;
    let (base, checkpoint) = versions::latest_kept(&mut conn, stack_id).await.ok()?;
    drop(conn);
    let project = ProjectName::new(&project).ok()?;
    let stack = StackName::new(&name).ok()?;
    let origin = PathBuf::from(format!("service:{project}/{stack}"));
    tokio::task::spawn_blocking(move || {
        let replayer = Replayer::new(
            &project,
            &stack,
            checkpoint.as_deref().map(Vec::as_slice),
            &origin,
            Fields::Checked,
        );
        Some((base, replayer.ok()?))
    })
    .await
    .ok()
    .flatten()
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn batch(seq: i64) -> ParsedBatch {
        let begin = format!(
            r#"{{"entry":"begin","seq":{seq},"kind":"creating","resource":{{"urn":"urn:plinth:dev::p::t:T::r{seq}","type":"t:T","custom":true}}}}"#
        );
        let end = format!(r#"{{"entry":"created-as-begun","seq":{seq},"id":"id-{seq}"}}"#);
        ParsedBatch::check([begin.as_str(), end.as_str()]).unwrap()
    }

    fn base(version: i64) -> BaseIdentity {
        BaseIdentity {
            version,
            holder: Some(versions::Holder {
                version,
                row: "700".into(),
            }),
        }
    }

    /// A replay over the empty state of version `version`, from batch `first`, holding batches
    /// `waiting` (digest: the number's byte) not applied yet.
    fn replaying(version: i64, first: i64, waiting: std::ops::Range<i64>) -> Arc<Replaying> {
        let project = ProjectName::new("p").unwrap();
        let stack = StackName::new("dev").unwrap();
        let replayer =
            Replayer::new(&project, &stack, None, Path::new("s"), Fields::Checked).unwrap();
        let ready = Ready {
            base: base(version),
            first,
            applied: Vec::new(),
            replayer,
        };
        let batches = (waiting.map(|seq| {
            (
                seq,
                Stored {
                    digest: vec![seq as u8],
                    batch: batch(seq),
                },
            )
        }))
        .collect();
        Arc::new(Replaying {
            waiting: Mutex::new(Waiting {
                batches,
                held: 0,
                last: Instant::now(),
                applying: false,
            }),
            replay: tokio::sync::Mutex::new(Replay::Ready(Box::new(ready))),
        })
    }

    fn stored(seqs: std::ops::Range<i64>) -> Vec<(i64, Vec<u8>)> {
        seqs.map(|seq| (seq, vec![seq as u8])).collect()
    }

    fn with(replays: &Replays, update: Uuid, replaying: Arc<Replaying>) {
        let mut slots = replays.lock();
        let slots = slots.get_or_insert_with(Slots::default);
        slots.updates.insert(update, Slot::Replaying(replaying));
    }

    #[tokio::test]
    async fn a_fold_takes_a_replay_only_of_its_base_and_exactly_its_batches() {
        let replays = Replays::new(CAPACITY, KEEP_FOR);
        let update = Uuid::from_u128(1);
        let finish = |base, folded, stored: Vec<(i64, Vec<u8>)>| {
            let replays = &replays;
            async move { replays.finish(update, &base, folded, &stored, None).await }
        };

        with(&replays, update, replaying(4, 1, 1..3));
        let rebuilt = finish(base(4), 0, stored(1..3))
            .await
            .expect("its batches, its base");
        assert_eq!((rebuilt.resources, rebuilt.changes.create), (2, 2));
        // Taken once; the next phase may begin one with the batch after.
        assert!(finish(base(4), 0, stored(1..3)).await.is_none());
        let next = |replays: &Replays| match replays.lock().as_ref().unwrap().updates.get(&update) {
            Some(Slot::Next(next, _)) => Some(*next),
            _ => None,
        };
        assert_eq!(next(&replays), Some(3));

        for (replay, (base, folded, stored)) in [
            (replaying(4, 1, 1..3), (self::base(5), 0, stored(1..3))),
            (replaying(4, 1, 1..3), (self::base(4), 1, stored(1..3))),
            // A batch it never had (another replica stored it).
            (replaying(4, 1, 1..3), (self::base(4), 0, stored(1..4))),
            // One stored with another digest.
            (
                replaying(4, 1, 1..3),
                (self::base(4), 0, vec![(1, vec![1]), (2, vec![9])]),
            ),
            (replaying(4, 1, 2..3), (self::base(4), 0, stored(1..3))),
        ] {
            with(&replays, update, replay);
            assert!(finish(base, folded, stored).await.is_none());
        }
    }

    #[tokio::test]
    async fn a_replay_begins_with_a_phase_and_gives_batches_back_beyond_its_capacity() {
        // Never reached: the replays' bases are never read here.
        let pool = PgPool::connect_lazy("postgres://plinth@127.0.0.1:1/none").unwrap();
        let replays = Replays::new(100, KEEP_FOR);
        let (first, later) = (Uuid::from_u128(1), Uuid::from_u128(2));
        let keep = |update, seq, size| replays.keep(&pool, update, seq, vec![], batch(seq), size);
        assert!(
            keep(first, 1, 60).is_none(),
            "an update's first batch begins one"
        );
        assert!(
            keep(later, 3, 10).is_some(),
            "not a batch after others went elsewhere"
        );
        assert!(keep(first, 2, 60).is_some(), "beyond its capacity");
        assert!(keep(first, 3, 10).is_some(), "dropped, it takes no more");
        let slots = replays.lock();
        assert_eq!(slots.as_ref().unwrap().held, 0);
        assert!(slots.as_ref().unwrap().updates.is_empty());
    }
}

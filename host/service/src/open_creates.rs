//! The creates each running update's journal has begun and not ended, as this replica last read
//! them: a journal batch that ends a create in short (`created-as-begun`) is refused unless an
//! earlier batch began it, so that no stored journal is one the state cannot be rebuilt from.
//!
//! Kept in memory rather than in a table: a row inserted and deleted per create left dead tuples
//! that the next batches' checks walked until autovacuum came by, and each `up` of 10,000
//! creates made PostgreSQL work more than the one before (1.3 s of its CPU, then 2.0, 2.3,
//! 2.6, 3.5, 3.8). Every batch stores what it opens and ends beside its entries, so a replica
//! that has not seen some batches (another replica stored them, or it restarted) reads only those
//! to catch up.

use std::collections::{HashMap, HashSet};
use std::sync::{LazyLock, Mutex, MutexGuard};

use plinth_state::protocol::MAX_OPEN_CREATES;
use plinth_state::{Creates, ParsedBatch};
use serde_json::value::RawValue;
use sqlx::PgPool;
use uuid::Uuid;

use crate::auth::digest;
use crate::error::ApiError;

/// This replica's view of every update's open creates.
pub(crate) static OPEN: LazyLock<OpenCreates> = LazyLock::new(|| {
    OpenCreates::new(Limits {
        capacity: CAPACITY,
        max_updates: MAX_UPDATES,
        max_open: MAX_OPEN_CREATES,
    })
});

/// The most creates (and updates, one each) the view holds; beyond it, the updates used least
/// recently are forgotten (read back from the database if their batches come again). About
/// 40 MB at most. The update a batch is for is never forgotten for it: one update holds at most
/// [`MAX_OPEN_CREATES`], as many as a client has operations in flight.
const CAPACITY: usize = 1 << 20;
/// The most updates the view holds: those another replica completed are never forgotten here
/// otherwise, and each one forgotten is looked for among them all.
const MAX_UPDATES: usize = 4096;

/// What a batch does to its update's open creates, as [`ParsedBatch::creates`] says.
pub(crate) struct Effect {
    /// Creates begun in the batch and not ended in it.
    pub opens: Vec<i64>,
    /// Operations begun in earlier batches that it ends (creates among them, in short or whole).
    pub ends: Vec<i64>,
}

/// Whether a batch may extend the journal so far.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Validity {
    Valid,
    /// It ends create `.0` in short, which no earlier batch left open.
    Unbegun(i64),
    /// It would leave more creates open at once than any client has operations in flight
    /// ([`MAX_OPEN_CREATES`]): kept in memory, so refused.
    TooManyOpen,
    /// Not known here: the batch was stored already (this is a retry, which the digest settles),
    /// or the request may not append to the update (which storing it says).
    Unknown,
}

/// What reading the batches this replica has not seen came to.
pub(crate) enum CaughtUp {
    Known(Validity),
    /// Batch `next` is not stored yet.
    Early {
        next: i64,
    },
}

/// The open creates of each update, after its batches up to a number.
pub(crate) struct OpenCreates {
    updates: Mutex<Updates>,
    limits: Limits,
}

#[derive(Clone, Copy)]
struct Limits {
    capacity: usize,
    max_updates: usize,
    /// The most creates one update may leave open.
    max_open: usize,
}

#[derive(Default)]
struct Updates {
    open: HashMap<Uuid, Open>,
    /// The creates held, plus one per update.
    size: usize,
    /// Counts uses, for telling which update was used least recently.
    uses: u64,
}

#[derive(Clone, Default)]
struct Open {
    /// The batches up to this one are taken in.
    through: i64,
    creates: HashSet<i64>,
    /// When it was last used, in [`Updates::uses`].
    used: u64,
}

impl Open {
    fn apply(&mut self, effect: &Effect) {
        for create in &effect.ends {
            self.creates.remove(create);
        }
        self.creates.extend(&effect.opens);
        self.through += 1;
    }

    /// Whether a batch that needs creates `needed` open and does `effect` may follow, with at
    /// most `max_open` creates open after it.
    fn validity(&self, needed: &[i64], effect: &Effect, max_open: usize) -> Validity {
        if let Some(&create) = needed.iter().find(|create| !self.creates.contains(create)) {
            return Validity::Unbegun(create);
        }
        // Each create it ends counted once, however often a hostile batch names it.
        let ended: HashSet<&i64> = (effect.ends.iter())
            .filter(|create| self.creates.contains(create))
            .collect();
        match self.creates.len() - ended.len() + effect.opens.len() > max_open {
            true => Validity::TooManyOpen,
            false => Validity::Valid,
        }
    }
}

impl OpenCreates {
    fn new(limits: Limits) -> OpenCreates {
        OpenCreates {
            updates: Mutex::default(),
            limits,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Updates> {
        // Every change leaves whole entries: a panic holding it leaves nothing half done.
        self.updates.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether batch `seq` of update `id`, which needs creates `needed` open and does
    /// `effect`, may extend the journal, if this replica has taken in every batch before it and
    /// no later one.
    pub(crate) fn check(
        &self,
        id: Uuid,
        seq: i64,
        needed: &[i64],
        effect: &Effect,
    ) -> Option<Validity> {
        let max_open = self.limits.max_open;
        let mut updates = self.lock();
        let now = updates.use_one();
        match updates.open.get_mut(&id) {
            Some(open) if open.through == seq - 1 => {
                open.used = now;
                Some(open.validity(needed, effect, max_open))
            }
            Some(_) => None,
            // Nothing is open before the first batch.
            None if seq == 1 => Some(Open::default().validity(needed, effect, max_open)),
            None => None,
        }
    }

    /// Takes in that batch `seq` of update `id` was stored, with `effect`.
    pub(crate) fn stored(&self, id: Uuid, seq: i64, effect: &Effect) {
        let mut updates = self.lock();
        if seq == 1 && !updates.open.contains_key(&id) {
            updates.insert(id, Open::default(), self.limits);
        }
        let now = updates.use_one();
        let Some(open) = updates.open.get_mut(&id) else {
            return;
        };
        // Only in order: another request may have read it from the database meanwhile.
        if open.through != seq - 1 {
            return;
        }
        let before = open.creates.len();
        open.apply(effect);
        open.used = now;
        let after = open.creates.len();
        updates.size = updates.size + after - before;
        updates.shrink(id, self.limits);
    }

    /// Forgets update `id`, ended.
    pub(crate) fn forget(&self, id: Uuid) {
        let mut updates = self.lock();
        if let Some(open) = updates.open.remove(&id) {
            updates.size -= 1 + open.creates.len();
        }
    }

    /// The last batch of update `id` this replica has taken in, if it knows the update.
    pub(crate) fn through(&self, id: Uuid) -> Option<i64> {
        self.lock().open.get(&id).map(|open| open.through)
    }

    /// A copy of what is known of update `id`.
    fn view(&self, id: Uuid) -> Open {
        self.lock().open.get(&id).cloned().unwrap_or_default()
    }

    /// Keeps `open`, read from the database, unless what is known is as far along already.
    fn caught_up(&self, id: Uuid, open: Open) {
        let mut updates = self.lock();
        let known = updates.open.get(&id).map_or(-1, |known| known.through);
        if open.through > known {
            updates.insert(id, open, self.limits);
        }
    }
}

impl Updates {
    fn use_one(&mut self) -> u64 {
        self.uses += 1;
        self.uses
    }

    fn insert(&mut self, id: Uuid, mut open: Open, limits: Limits) {
        open.used = self.use_one();
        self.size += 1 + open.creates.len();
        if let Some(old) = self.open.insert(id, open) {
            self.size -= 1 + old.creates.len();
        }
        self.shrink(id, limits);
    }

    /// Forgets the updates used least recently, other than `keep`, until within `limits`.
    fn shrink(&mut self, keep: Uuid, limits: Limits) {
        while self.size > limits.capacity || self.open.len() > limits.max_updates {
            let oldest = (self.open.iter())
                .filter(|(id, _)| **id != keep)
                .min_by_key(|(_, open)| open.used)
                .map(|(id, _)| *id);
            let Some(oldest) = oldest else { return };
            let open = self.open.remove(&oldest).expect("just found");
            self.size -= 1 + open.creates.len();
        }
    }
}

/// Reads the batches of update `id` stored after those this replica has taken in and before
/// `seq`, and says whether batch `seq`, which needs creates `needed` open and does `effect`, may
/// extend them. Only for a request that may append to the update: otherwise the validity is
/// unknown, and storing the batch refuses it.
pub(crate) async fn catch_up(
    pool: &PgPool,
    token: &[u8],
    id: Uuid,
    lease: &str,
    seq: i64,
    (needed, effect): (&[i64], &Effect),
) -> Result<CaughtUp, ApiError> {
    let mut open = OPEN.view(id);
    if open.through >= seq {
        return Ok(CaughtUp::Known(Validity::Unknown));
    }
    #[allow(clippy::type_complexity)]
    let rows: Vec<(
        bool,
        Option<i64>,
        Option<Vec<i64>>,
        Option<Vec<i64>>,
        Option<String>,
    )> = sqlx::query_as(
        "WITH allowed AS (
             SELECT EXISTS (SELECT 1 FROM live_tokens WHERE digest = $2)
                AND EXISTS (SELECT 1 FROM updates WHERE id = $1 AND lease_digest = $3
                            AND status = 'running' AND lease_expires >= now()) AS yes
         )
         SELECT allowed.yes, b.seq, b.opens, b.ends,
                CASE WHEN b.opens IS NULL THEN b.entries::text END
         FROM allowed LEFT JOIN journal_batches b
           ON allowed.yes AND b.update_id = $1 AND b.seq > $4 AND b.seq < $5
         ORDER BY b.seq",
    )
    .bind(id)
    .bind(token)
    .bind(digest(lease))
    .bind(open.through)
    .bind(seq)
    .fetch_all(pool)
    .await?;
    if !rows.first().is_some_and(|row| row.0) {
        return Ok(CaughtUp::Known(Validity::Unknown));
    }
    for (_, stored, opens, ends, entries) in rows {
        // Numbered without gaps: each is the next.
        if stored != Some(open.through + 1) {
            break;
        }
        let effect = match (opens, ends) {
            (Some(opens), Some(ends)) => Effect { opens, ends },
            // Stored before batches kept their effect.
            _ => effect_of_text(entries.as_deref().unwrap_or("[]")),
        };
        open.apply(&effect);
    }
    let validity =
        (open.through == seq - 1).then(|| open.validity(needed, effect, OPEN.limits.max_open));
    let next = open.through + 1;
    OPEN.caught_up(id, open);
    Ok(match validity {
        Some(validity) => CaughtUp::Known(validity),
        None => CaughtUp::Early { next },
    })
}

impl Effect {
    /// What a batch that does `creates` does, and the creates it needs open; or the first
    /// operation number it names beyond what is stored.
    pub(crate) fn of(creates: &Creates) -> Result<(Effect, Vec<i64>), u64> {
        let numbers = |seqs: &[u64]| -> Result<Vec<i64>, u64> {
            (seqs.iter())
                .map(|&s| i64::try_from(s).map_err(|_| s))
                .collect()
        };
        let needed = numbers(&creates.needed)?;
        let mut ends = numbers(&creates.closed)?;
        ends.extend(&needed);
        let opens = numbers(&creates.opened)?;
        Ok((Effect { opens, ends }, needed))
    }
}

/// What a batch stored as `text` does; nothing if it cannot be read (it was checked when stored,
/// and a journal that does not rebuild is reported when its version is made).
fn effect_of_text(text: &str) -> Effect {
    let parsed = serde_json::from_str::<Vec<&RawValue>>(text)
        .ok()
        .and_then(|entries| ParsedBatch::check(entries.iter().map(|e| e.get())).ok());
    match parsed.map(|batch| Effect::of(&batch.creates())) {
        Some(Ok((effect, _))) => effect,
        _ => Effect {
            opens: Vec::new(),
            ends: Vec::new(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn effect(opens: &[i64], ends: &[i64]) -> Effect {
        Effect {
            opens: opens.to_vec(),
            ends: ends.to_vec(),
        }
    }

    fn limits(capacity: usize, max_updates: usize) -> Limits {
        Limits {
            capacity,
            max_updates,
            max_open: 1_000,
        }
    }

    /// Checks a batch that ends `needed` in short and nothing else.
    fn check(open: &OpenCreates, id: Uuid, seq: i64, needed: &[i64]) -> Option<Validity> {
        open.check(id, seq, needed, &effect(&[], needed))
    }

    #[test]
    fn a_batch_is_checked_against_the_batches_before_it_taken_in_order() {
        let open = OpenCreates::new(limits(100, 10));
        let id = Uuid::new_v4();
        assert_eq!(check(&open, id, 1, &[]), Some(Validity::Valid));
        assert_eq!(check(&open, id, 1, &[7]), Some(Validity::Unbegun(7)));
        assert_eq!(check(&open, id, 2, &[]), None, "batch 1 not taken in");
        open.stored(id, 1, &effect(&[1, 2], &[]));
        assert_eq!(check(&open, id, 2, &[1, 2]), Some(Validity::Valid));
        assert_eq!(check(&open, id, 2, &[1, 3]), Some(Validity::Unbegun(3)));
        open.stored(id, 2, &effect(&[], &[1]));
        assert_eq!(
            check(&open, id, 3, &[1]),
            Some(Validity::Unbegun(1)),
            "ended"
        );
        assert_eq!(check(&open, id, 3, &[2]), Some(Validity::Valid));
        assert_eq!(
            check(&open, id, 2, &[2]),
            None,
            "a retry is not checked here"
        );
        open.stored(id, 2, &effect(&[9], &[]));
        assert_eq!(
            check(&open, id, 3, &[9]),
            Some(Validity::Unbegun(9)),
            "a batch is taken in once"
        );
        open.forget(id);
        assert_eq!(check(&open, id, 3, &[2]), None, "forgotten");
        assert_eq!(open.lock().size, 0);
    }

    #[test]
    fn what_was_read_back_is_kept_only_if_it_is_further_along() {
        let open = OpenCreates::new(limits(100, 10));
        let id = Uuid::new_v4();
        open.stored(id, 1, &effect(&[1], &[]));
        let behind = Open {
            through: 0,
            ..Open::default()
        };
        open.caught_up(id, behind);
        assert_eq!(check(&open, id, 2, &[1]), Some(Validity::Valid));
        let ahead = Open {
            through: 3,
            creates: [5].into(),
            used: 0,
        };
        open.caught_up(id, ahead);
        assert_eq!(check(&open, id, 4, &[5]), Some(Validity::Valid));
        assert_eq!(open.lock().size, 2);
    }

    #[test]
    fn beyond_the_capacity_the_updates_used_least_recently_go() {
        let open = OpenCreates::new(limits(6, 10));
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        open.stored(a, 1, &effect(&[1, 2], &[]));
        open.stored(b, 1, &effect(&[1], &[]));
        assert_eq!(open.lock().size, 5);
        assert!(check(&open, a, 2, &[]).is_some(), "a used last");
        open.stored(b, 2, &effect(&[2, 3], &[]));
        assert_eq!(check(&open, a, 2, &[]), None, "a went for b");
        assert_eq!(check(&open, b, 3, &[1, 2, 3]), Some(Validity::Valid));
        // One update larger than the whole capacity is kept: it is the one in use.
        open.stored(b, 3, &effect(&[4, 5, 6, 7], &[]));
        assert_eq!(check(&open, b, 4, &[7]), Some(Validity::Valid));

        // And never more updates than the most it keeps, however small.
        let open = OpenCreates::new(limits(100, 2));
        let ids: Vec<Uuid> = (0..3).map(|_| Uuid::new_v4()).collect();
        for id in &ids {
            open.stored(*id, 1, &effect(&[], &[]));
        }
        assert_eq!(check(&open, ids[0], 2, &[]), None, "the first went");
        assert!(check(&open, ids[1], 2, &[]).is_some() && check(&open, ids[2], 2, &[]).is_some());
    }

    #[test]
    fn a_batch_leaving_more_creates_open_than_any_client_has_in_flight_is_refused() {
        let open = OpenCreates::new(Limits {
            max_open: 3,
            ..limits(100, 10)
        });
        let id = Uuid::new_v4();
        let four = effect(&[1, 2, 3, 4], &[]);
        assert_eq!(open.check(id, 1, &[], &four), Some(Validity::TooManyOpen));
        open.stored(id, 1, &effect(&[1, 2, 3], &[]));
        let one_more = effect(&[4], &[]);
        assert_eq!(
            open.check(id, 2, &[], &one_more),
            Some(Validity::TooManyOpen)
        );
        // Ending one makes room for one, however often the batch names the one it ends.
        let swap = effect(&[4], &[1, 1, 1]);
        assert_eq!(open.check(id, 2, &[], &swap), Some(Validity::Valid));
        let swap_two = effect(&[4, 5], &[1, 1]);
        assert_eq!(
            open.check(id, 2, &[], &swap_two),
            Some(Validity::TooManyOpen)
        );
        // An operation that is not an open create makes no room.
        let other = effect(&[4], &[9]);
        assert_eq!(open.check(id, 2, &[], &other), Some(Validity::TooManyOpen));
    }

    #[test]
    fn a_batch_stored_as_text_is_read_for_its_effect() {
        let text = r#"[{"entry":"created-as-begun","seq":1,"id":"a"},{"entry":"failed","seq":4}]"#;
        let read = effect_of_text(text);
        assert_eq!((read.opens, read.ends), (vec![], vec![4, 1]));
        let unreadable = effect_of_text("not json");
        assert!(unreadable.opens.is_empty() && unreadable.ends.is_empty());
    }
}

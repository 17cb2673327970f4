//! Journal batches as this replica parsed them when they arrived, kept for the fold at the
//! update's completion: checking a batch parses every entry anyway, and reading an update's
//! batches back from the database and parsing them again was most of its completion's wait.
//!
//! Only a shortcut: the database holds every batch, and the fold takes a parsed batch only if
//! its digest is the one stored. A batch that another replica received, or that this one
//! dropped (to stay within [`CAPACITY`], or kept longer than [`KEEP_FOR`]), is read back and
//! parsed as before.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use plinth_state::ParsedBatch;
use uuid::Uuid;

/// The most batch text, in bytes, whose parsed entries the replica keeps (they take about four
/// times that): an update of 30,000 creates sends about 21 MB. The oldest go first.
const CAPACITY: usize = 32 << 20;

/// How long a batch is kept: those of an update another replica completes are never taken.
const KEEP_FOR: Duration = Duration::from_secs(600);

/// The replica's parsed batches.
pub(crate) static PARSED: ParsedBatches = ParsedBatches::new(CAPACITY, KEEP_FOR);

/// Where a batch is kept: its update and number.
type Key = (Uuid, i64);

/// Parsed batches, up to a capacity of batch text.
pub(crate) struct ParsedBatches {
    batches: Mutex<Option<Batches>>,
    capacity: usize,
    keep_for: Duration,
}

#[derive(Default)]
struct Batches {
    kept: HashMap<Key, Kept>,
    /// The keys by the order they were kept in.
    order: BTreeMap<u64, Key>,
    next: u64,
    size: usize,
}

struct Kept {
    digest: Vec<u8>,
    batch: ParsedBatch,
    /// The length of its text.
    size: usize,
    /// Its place in `order`.
    place: u64,
    kept_at: Instant,
}

impl ParsedBatches {
    const fn new(capacity: usize, keep_for: Duration) -> ParsedBatches {
        ParsedBatches {
            batches: Mutex::new(None),
            capacity,
            keep_for,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Option<Batches>> {
        // A panic holding it leaves whole batches: go on with them.
        self.batches.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Keeps `batch`, stored as batch `seq` of update `update` with `digest`, parsed from a
    /// text of `size` bytes.
    pub(crate) fn keep(
        &self,
        update: Uuid,
        seq: i64,
        digest: Vec<u8>,
        batch: ParsedBatch,
        size: usize,
    ) {
        if size > self.capacity {
            return;
        }
        let mut batches = self.lock();
        let batches = batches.get_or_insert_with(Batches::default);
        batches.remove(&(update, seq));
        let now = Instant::now();
        while let Some((_, oldest)) = batches.order.first_key_value() {
            let expired = (batches.kept.get(oldest))
                .is_some_and(|kept| now.duration_since(kept.kept_at) > self.keep_for);
            if !expired && batches.size + size <= self.capacity {
                break;
            }
            let oldest = *oldest;
            batches.remove(&oldest);
        }
        let place = batches.next;
        batches.next += 1;
        batches.order.insert(place, (update, seq));
        batches.size += size;
        let kept = Kept {
            digest,
            batch,
            size,
            place,
            kept_at: now,
        };
        batches.kept.insert((update, seq), kept);
    }

    /// Takes batch `seq` of update `update` if it is kept with `digest`, the one stored.
    pub(crate) fn take(&self, update: Uuid, seq: i64, digest: &[u8]) -> Option<ParsedBatch> {
        let mut batches = self.lock();
        let kept = batches.as_mut()?.remove(&(update, seq))?;
        (kept.digest == digest).then_some(kept.batch)
    }
}

impl Batches {
    fn remove(&mut self, key: &Key) -> Option<Kept> {
        let kept = self.kept.remove(key)?;
        self.order.remove(&kept.place);
        self.size -= kept.size;
        Some(kept)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(entries: usize) -> ParsedBatch {
        let entry = r#"{"entry":"deleted","seq":1,"old":0}"#;
        ParsedBatch::check(std::iter::repeat_n(entry, entries)).unwrap()
    }

    #[test]
    fn a_batch_is_taken_once_and_only_with_the_digest_stored() {
        let parsed = ParsedBatches::new(1000, KEEP_FOR);
        let (keep, take) = (
            |u, s, d, b, n| parsed.keep(u, s, d, b, n),
            |u, s, d: &[u8]| parsed.take(u, s, d),
        );
        let update = Uuid::new_v4();
        keep(update, 1, vec![1], batch(2), 100);
        keep(update, 2, vec![2], batch(3), 100);
        assert!(take(update, 1, &[9]).is_none(), "another digest");
        assert!(
            take(update, 1, &[1]).is_none(),
            "dropped when the digest differed"
        );
        assert_eq!(take(update, 2, &[2]).map(|b| b.len()), Some(3));
        assert!(take(update, 2, &[2]).is_none(), "taken once");
        assert!(take(Uuid::new_v4(), 2, &[2]).is_none());
    }

    #[test]
    fn the_oldest_go_first_beyond_the_capacity() {
        let parsed = ParsedBatches::new(1000, KEEP_FOR);
        let (keep, take) = (
            |u, s, d, b, n| parsed.keep(u, s, d, b, n),
            |u, s, d: &[u8]| parsed.take(u, s, d),
        );
        let update = Uuid::new_v4();
        keep(update, 1, vec![1], batch(1), 500);
        keep(update, 2, vec![2], batch(1), 500);
        keep(update, 3, vec![3], batch(1), 500);
        assert!(take(update, 1, &[1]).is_none(), "dropped for the third");
        assert!(take(update, 2, &[2]).is_some());
        assert!(take(update, 3, &[3]).is_some());
        keep(update, 4, vec![4], batch(1), 1001);
        assert!(
            take(update, 4, &[4]).is_none(),
            "larger than the whole capacity"
        );
    }

    #[test]
    fn a_batch_kept_longer_than_its_time_goes_when_the_next_comes() {
        let parsed = ParsedBatches::new(1000, Duration::ZERO);
        let update = Uuid::new_v4();
        parsed.keep(update, 1, vec![1], batch(1), 10);
        std::thread::sleep(Duration::from_millis(1));
        parsed.keep(update, 2, vec![2], batch(1), 10);
        assert!(parsed.take(update, 1, &[1]).is_none(), "expired");
        assert!(parsed.take(update, 2, &[2]).is_some());
    }
}

//! The sign-in rate limit: a token bucket per source address. Each attempt takes a token and a
//! sign-in that succeeds gives it back, so a user who signs in often is never held up while
//! guessing tokens is slowed to the refill rate. The clock is a parameter: tests step it.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Failed attempts an address may make at once.
pub(crate) const BURST: u32 = 10;
/// How often an address gets one attempt back.
pub(crate) const REFILL: Duration = Duration::from_secs(6);
/// The most addresses remembered: past that, those whose bucket is full again are forgotten
/// (they would start full anyway), so a flood of addresses cannot grow the map without bound.
const MOST_ADDRESSES: usize = 10_000;

/// An address's bucket: its attempts left, as of `at`.
#[derive(Clone, Copy)]
struct Bucket {
    left: f64,
    at: Instant,
}

impl Bucket {
    /// The bucket refilled up to `now`.
    fn at(self, now: Instant) -> Bucket {
        let gained = now.saturating_duration_since(self.at).as_secs_f64() / REFILL.as_secs_f64();
        Bucket {
            left: (self.left + gained).min(f64::from(BURST)),
            at: now,
        }
    }
}

/// The buckets, by source address (as the audit log records it).
#[derive(Default)]
pub(crate) struct SignInLimit(Mutex<HashMap<String, Bucket>>);

impl SignInLimit {
    /// Takes an attempt for `source` at `now`; refused with how long until the next one if it
    /// has none left.
    pub(crate) fn take(&self, source: &str, now: Instant) -> Result<(), Duration> {
        let mut buckets = self.0.lock().expect("never poisoned");
        if buckets.len() >= MOST_ADDRESSES && !buckets.contains_key(source) {
            buckets.retain(|_, b| b.at(now).left < f64::from(BURST));
        }
        let full = Bucket {
            left: f64::from(BURST),
            at: now,
        };
        let bucket = buckets.entry(source.to_owned()).or_insert(full);
        *bucket = bucket.at(now);
        if bucket.left < 1.0 {
            let wait = (1.0 - bucket.left) * REFILL.as_secs_f64();
            return Err(Duration::from_secs_f64(wait).max(Duration::from_secs(1)));
        }
        bucket.left -= 1.0;
        Ok(())
    }

    /// Gives back the attempt `source` took: it signed in.
    pub(crate) fn give_back(&self, source: &str) {
        let mut buckets = self.0.lock().expect("never poisoned");
        if let Some(bucket) = buckets.get_mut(source) {
            bucket.left = (bucket.left + 1.0).min(f64::from(BURST));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_gets_its_burst_then_one_attempt_per_refill_and_others_are_unaffected() {
        let limit = SignInLimit::default();
        let start = Instant::now();
        for _ in 0..BURST {
            limit.take("10.0.0.1", start).unwrap();
        }
        let wait = limit.take("10.0.0.1", start).unwrap_err();
        assert_eq!(wait, REFILL);
        limit.take("10.0.0.2", start).unwrap();
        // Half a refill later: still none; a whole one: one, and only one.
        assert!(limit.take("10.0.0.1", start + REFILL / 2).is_err());
        limit.take("10.0.0.1", start + REFILL).unwrap();
        assert!(limit.take("10.0.0.1", start + REFILL).is_err());
        // A success gives its attempt back.
        limit.give_back("10.0.0.1");
        limit.take("10.0.0.1", start + REFILL).unwrap();
        // Long after, the bucket is full again, never fuller.
        let later = start + REFILL * 1000;
        for _ in 0..BURST {
            limit.take("10.0.0.1", later).unwrap();
        }
        assert!(limit.take("10.0.0.1", later).is_err());
    }
}

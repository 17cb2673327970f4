//! What a program may make the host hold. Registration never blocks the program, so without a
//! bound a program that registers forever (or whose every apply registers another) grows the
//! host's memory until it dies: its own memory limit and call deadline do not see what it hands
//! over. Each run counts the program's registrations, applies, the bytes of the values it
//! sends and of the messages it logs (each kept in the update's log, shown by `plinth logs`),
//! and refuses the one past its budget.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::value::{PropertyMap, Value};

/// The most a program may register in one run. The defaults leave a 100,000-resource stack
/// (what plinth is designed for) room to spare: measured on a debug build, a program that
/// exhausts any one of them peaks at about 300 MB in `preview`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProgramBudget {
    /// Resources, components and reads registered.
    pub registrations: u64,
    /// Apply closures registered (each is resumed once its inputs resolve).
    pub applies: u64,
    /// Bytes of the values the program sends (inputs, apply inputs, outputs) and its apply
    /// closures return, as counted by [`size_of`].
    pub input_bytes: u64,
    /// Bytes of the messages the program logs, each counted with [`LOG_ENTRY_BYTES`] more, so
    /// that a flood of empty messages is bounded too.
    pub log_bytes: u64,
}

/// What a logged message costs beyond its text: the time, severity and framing it is kept with.
pub const LOG_ENTRY_BYTES: u64 = 64;

impl Default for ProgramBudget {
    fn default() -> Self {
        ProgramBudget {
            registrations: 500_000,
            applies: 1_000_000,
            // 2.5 KiB for each resource of a 100,000-resource stack; `up` holds a few copies.
            input_bytes: 256 << 20,
            // A line of 600 bytes for each resource of a 100,000-resource stack.
            log_bytes: 64 << 20,
        }
    }
}

/// A program went past its budget: which part, and how to raise it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the program exceeded its budget of {limit} {what} in one run (a program that never \
     finishes, or far larger than expected); if it is right, raise \
     `limits: {{ {key}: ... }}` under `program:` in Plinth.yaml"
)]
pub struct BudgetExceeded {
    pub what: &'static str,
    pub key: &'static str,
    pub limit: u64,
}

/// What a program spent of its budget so far.
#[derive(Debug, Default)]
pub(crate) struct Spent {
    registrations: AtomicU64,
    applies: AtomicU64,
    input_bytes: AtomicU64,
    log_bytes: AtomicU64,
}

impl Spent {
    fn take(
        counter: &AtomicU64,
        amount: u64,
        limit: u64,
        what: &'static str,
        key: &'static str,
    ) -> Result<(), BudgetExceeded> {
        let before = counter.fetch_add(amount, Ordering::Relaxed);
        if before.saturating_add(amount) > limit {
            return Err(BudgetExceeded { what, key, limit });
        }
        Ok(())
    }

    /// One registration of a resource, component or read, with `inputs`.
    pub(crate) fn registration(
        &self,
        budget: &ProgramBudget,
        inputs: &PropertyMap,
    ) -> Result<(), BudgetExceeded> {
        let limit = budget.registrations;
        Self::take(
            &self.registrations,
            1,
            limit,
            "registrations",
            "registrations",
        )?;
        self.bytes(budget, map_size(inputs))
    }

    /// One apply, with `inputs`.
    pub(crate) fn apply(
        &self,
        budget: &ProgramBudget,
        inputs: &[Value],
    ) -> Result<(), BudgetExceeded> {
        Self::take(&self.applies, 1, budget.applies, "applies", "applies")?;
        self.bytes(budget, inputs.iter().map(size_of).sum())
    }

    /// `bytes` more of values sent.
    pub(crate) fn bytes(&self, budget: &ProgramBudget, bytes: u64) -> Result<(), BudgetExceeded> {
        let limit = budget.input_bytes;
        Self::take(
            &self.input_bytes,
            bytes,
            limit,
            "bytes of inputs",
            "input-bytes",
        )
    }

    /// One logged `message`.
    pub(crate) fn log(&self, budget: &ProgramBudget, message: &str) -> Result<(), BudgetExceeded> {
        Self::take(
            &self.log_bytes,
            message.len() as u64 + LOG_ENTRY_BYTES,
            budget.log_bytes,
            "bytes of log messages",
            "log-bytes",
        )
    }
}

/// The bytes `value` takes, roughly: its strings, and a word for every other node. Linear in
/// the value, which was just lifted out of the guest.
pub fn size_of(value: &Value) -> u64 {
    const WORD: u64 = 8;
    match value {
        Value::String(s) => WORD + s.len() as u64,
        Value::Array(items) => WORD + items.iter().map(size_of).sum::<u64>(),
        Value::Object(map) => WORD + map_size(map),
        Value::Secret(inner) => WORD + size_of(inner),
        Value::Output(_) => 3 * WORD,
        Value::Null | Value::Bool(_) | Value::Integer(_) | Value::Number(_) | Value::Unknown => {
            WORD
        }
    }
}

/// [`size_of`] a map: its keys and values.
pub fn map_size(map: &PropertyMap) -> u64 {
    map.iter().map(|(k, v)| k.len() as u64 + size_of(v)).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_part_of_the_budget_is_refused_past_its_limit_with_its_own_key() {
        let budget = ProgramBudget {
            registrations: 2,
            applies: 1,
            input_bytes: 100,
            log_bytes: 2 * LOG_ENTRY_BYTES + 10,
        };
        let spent = Spent::default();
        let map = PropertyMap::new();
        spent.registration(&budget, &map).unwrap();
        spent.registration(&budget, &map).unwrap();
        let err = spent.registration(&budget, &map).unwrap_err().to_string();
        assert!(
            err.contains("budget of 2 registrations")
                && err.contains("`limits: { registrations: ... }` under `program:`"),
            "{err}"
        );
        spent.apply(&budget, &[]).unwrap();
        let err = spent.apply(&budget, &[]).unwrap_err().to_string();
        assert!(err.contains("`limits: { applies: ... }`"), "{err}");
        let big = Value::String("x".repeat(200));
        let err = Spent::default()
            .apply(&budget, &[big])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("budget of 100 bytes of inputs") && err.contains("input-bytes"),
            "{err}"
        );
        // Empty messages count too.
        spent.log(&budget, "0123456789").unwrap();
        spent.log(&budget, "").unwrap();
        let err = spent.log(&budget, "").unwrap_err().to_string();
        assert!(
            err.contains("budget of 138 bytes of log messages")
                && err.contains("`limits: { log-bytes: ... }`"),
            "{err}"
        );
    }

    #[test]
    fn sizes_count_strings_and_nodes() {
        assert_eq!(size_of(&Value::Null), 8);
        assert_eq!(size_of(&Value::String("abcd".into())), 12);
        let map = PropertyMap::from([("k".to_owned(), Value::Array(vec![Value::Bool(true)]))]);
        assert_eq!(map_size(&map), 1 + 8 + 8);
    }
}

//! The resources one guest call may use: a memory limit and a deadline.

use std::time::Duration;

use wasmtime::{ResourceLimiter, StoreLimits, StoreLimitsBuilder};

/// The resources a plugin or program may use. Each call runs under `call_timeout`; each
/// instance's linear memory may not grow beyond `memory_bytes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The most linear memory one instance may use, in bytes.
    pub memory_bytes: usize,
    /// How long one call into the guest may take, time spent waiting on the host included.
    pub call_timeout: Duration,
}

/// Why limits cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LimitsError {
    #[error(
        "a memory limit of {0} bytes is too small: a guest needs at least 1 MiB (e.g. `64MiB`)"
    )]
    MemoryTooSmall(u64),
    #[error("a memory limit of {0} bytes is too large: a 32-bit guest cannot use more than 4 GiB")]
    MemoryTooLarge(u64),
    #[error("a call timeout of {0:?} is too short: deadlines are checked every 10ms (e.g. `30s`)")]
    TimeoutTooShort(Duration),
    #[error("a call timeout of {0:?} is too long: the most is one day")]
    TimeoutTooLong(Duration),
}

impl Limits {
    /// The smallest memory limit: less cannot run a Rust guest's stack.
    pub const MIN_MEMORY_BYTES: u64 = 1 << 20;
    /// The largest: all a 32-bit linear memory can address.
    pub const MAX_MEMORY_BYTES: u64 = 4 << 30;
    /// The shortest call timeout: the granularity of deadlines.
    pub const MIN_CALL_TIMEOUT: Duration = crate::load::engine::EPOCH_TICK;
    /// The longest call timeout.
    pub const MAX_CALL_TIMEOUT: Duration = Duration::from_secs(24 * 60 * 60);

    /// Limits of `memory_bytes` and `call_timeout`, if both are within the bounds above.
    pub fn new(memory_bytes: u64, call_timeout: Duration) -> Result<Limits, LimitsError> {
        if memory_bytes < Self::MIN_MEMORY_BYTES {
            return Err(LimitsError::MemoryTooSmall(memory_bytes));
        }
        if memory_bytes > Self::MAX_MEMORY_BYTES {
            return Err(LimitsError::MemoryTooLarge(memory_bytes));
        }
        if call_timeout < Self::MIN_CALL_TIMEOUT {
            return Err(LimitsError::TimeoutTooShort(call_timeout));
        }
        if call_timeout > Self::MAX_CALL_TIMEOUT {
            return Err(LimitsError::TimeoutTooLong(call_timeout));
        }
        Ok(Limits {
            memory_bytes: usize::try_from(memory_bytes)
                .map_err(|_| LimitsError::MemoryTooLarge(memory_bytes))?,
            call_timeout,
        })
    }
}

impl Default for Limits {
    /// 256 MiB of memory and one minute per call.
    fn default() -> Self {
        Limits {
            memory_bytes: 256 << 20,
            call_timeout: Duration::from_secs(60),
        }
    }
}

/// The most data a guest may pass to the host in one call: what an export returns, or what it
/// sends one host function. Wasmtime counts it while lifting, before allocating anything, and
/// refuses the call beyond it; without it a plugin could make the host copy up to its whole
/// memory, and every copy the value goes through afterwards (state, journal, events) multiply it.
pub(crate) const MAX_TRANSFER_BYTES: usize = 64 << 20;

/// Enforces the memory limit through [`StoreLimits`] and remembers whether the guest hit it, so
/// that the trap that usually follows (a Rust guest aborts when an allocation fails) can be
/// reported as what it is.
pub(crate) struct MemoryLimiter {
    limits: StoreLimits,
    memory_bytes: usize,
    /// The size a denied growth asked for, since the start of the current call.
    denied: Option<usize>,
}

impl MemoryLimiter {
    pub(crate) fn new(memory_bytes: usize) -> MemoryLimiter {
        MemoryLimiter {
            limits: StoreLimitsBuilder::new().memory_size(memory_bytes).build(),
            memory_bytes,
            denied: None,
        }
    }

    /// Forgets denials of earlier calls.
    pub(crate) fn reset(&mut self) {
        self.denied = None;
    }

    /// The limit, and the size a denied growth asked for, if the guest hit the limit in this call.
    pub(crate) fn exceeded(&self) -> Option<(usize, usize)> {
        self.denied.map(|desired| (self.memory_bytes, desired))
    }
}

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let allowed = self.limits.memory_growing(current, desired, maximum)?;
        if !allowed && desired > self.memory_bytes {
            self.denied = Some(desired);
        }
        Ok(allowed)
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        self.limits.table_growing(current, desired, maximum)
    }

    fn instances(&self) -> usize {
        self.limits.instances()
    }

    fn tables(&self) -> usize {
        self.limits.tables()
    }

    fn memories(&self) -> usize {
        self.limits.memories()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_are_checked_against_their_bounds() {
        let second = Duration::from_secs(1);
        assert_eq!(
            Limits::new(512 << 20, 2 * second),
            Ok(Limits {
                memory_bytes: 512 << 20,
                call_timeout: 2 * second
            })
        );
        assert!(Limits::new(4 << 30, Limits::MAX_CALL_TIMEOUT).is_ok());
        assert_eq!(
            Limits::new(1000, second),
            Err(LimitsError::MemoryTooSmall(1000))
        );
        assert_eq!(
            Limits::new(5 << 30, second),
            Err(LimitsError::MemoryTooLarge(5 << 30))
        );
        let err = Limits::new(1 << 20, Duration::from_millis(1)).unwrap_err();
        assert!(err.to_string().contains("too short"), "{err}");
        let err = Limits::new(1 << 20, 2 * Limits::MAX_CALL_TIMEOUT).unwrap_err();
        assert!(err.to_string().contains("the most is one day"), "{err}");
    }

    #[test]
    fn records_growth_beyond_the_limit_only() {
        let mut limiter = MemoryLimiter::new(1 << 20);
        assert!(limiter.memory_growing(0, 1 << 19, None).unwrap());
        assert_eq!(limiter.exceeded(), None);
        // Beyond the module's own maximum but within ours: denied, but not our limit.
        assert!(!limiter.memory_growing(0, 1 << 19, Some(1 << 18)).unwrap());
        assert_eq!(limiter.exceeded(), None);
        assert!(!limiter.memory_growing(0, 2 << 20, None).unwrap());
        assert_eq!(limiter.exceeded(), Some((1 << 20, 2 << 20)));
        limiter.reset();
        assert_eq!(limiter.exceeded(), None);
    }
}

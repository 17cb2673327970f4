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

impl Default for Limits {
    /// 256 MiB of memory and one minute per call.
    fn default() -> Self {
        Limits {
            memory_bytes: 256 << 20,
            call_timeout: Duration::from_secs(60),
        }
    }
}

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

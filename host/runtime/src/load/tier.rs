//! The two ways a component is compiled to machine code: quickly, for a guest that was just
//! built from source and may change again at the next edit, or well, for a released one that
//! runs unchanged many times.

use std::fmt;

/// How a component is compiled. Each tier has an engine of its own and keys its precompiled
/// artifacts on that engine's configuration, so an artifact of one is never taken for the other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tier {
    /// Winch, wasmtime's baseline compiler: one pass over each function, several times faster
    /// to compile than Cranelift, slower code. A component Winch refuses (a Wasm feature it does
    /// not implement) is compiled by Cranelift instead.
    Fast,
    /// Cranelift, optimizing: slower to compile, faster code.
    Optimized,
}

impl Tier {
    pub const ALL: [Tier; 2] = [Tier::Fast, Tier::Optimized];

    pub fn name(self) -> &'static str {
        match self {
            Tier::Fast => "fast",
            Tier::Optimized => "optimized",
        }
    }
}

impl fmt::Display for Tier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

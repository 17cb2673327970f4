//! Which compiler tier a run compiles each component on (`--compiler`, `PLINTH_COMPILER`): by
//! default the fast one for guests plinth builds from source in the project, which change at
//! every edit, and the optimizing one for component files (the store's, a registry's, a
//! `.wasm` path), which run unchanged many times. docs/compiler.md.

use clap::ValueEnum;
use plinth_runtime::Tier;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub enum Compiler {
    /// Fast for guests built from source, optimized for component files.
    #[default]
    Auto,
    /// Every component on the fast tier (Winch).
    Fast,
    /// Every component on the optimizing tier (Cranelift).
    Optimized,
}

impl Compiler {
    /// The tier of a component that was built from a guest directory (`built`), or read from
    /// a component file.
    pub fn tier(self, built: bool) -> Tier {
        match self {
            Compiler::Auto if built => Tier::Fast,
            Compiler::Auto | Compiler::Optimized => Tier::Optimized,
            Compiler::Fast => Tier::Fast,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_compiles_only_guests_built_from_source_fast() {
        assert_eq!(Compiler::Auto.tier(true), Tier::Fast);
        assert_eq!(Compiler::Auto.tier(false), Tier::Optimized);
        for built in [true, false] {
            assert_eq!(Compiler::Fast.tier(built), Tier::Fast);
            assert_eq!(Compiler::Optimized.tier(built), Tier::Optimized);
        }
    }
}

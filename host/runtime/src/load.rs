//! Loading and caching: the wasmtime engines' configuration (one per compiler tier), the cache
//! of precompiled artifacts, and the [`Runtime`](runtime::Runtime) that loads components as the engine's
//! providers, programs and policy packs.

pub(crate) mod bytes;
pub(crate) mod cache;
pub(crate) mod engine;
pub(crate) mod engines;
pub(crate) mod file_index;
pub(crate) mod hints;
pub(crate) mod policy_config;
pub(crate) mod policy_pack;
pub(crate) mod program;
pub(crate) mod provider;
pub(crate) mod runtime;
pub(crate) mod tier;
pub(crate) mod write_only;

//! The wasmtime embedding of plinth: loads provider and program components (through a cache of
//! precompiled artifacts), runs them sandboxed under a deadline and a memory limit, and
//! implements the engine's [`Provider`](plinth_engine::provider::Provider) and
//! [`Program`](plinth_engine::program::Program) traits over them.
//!
//! One [`Runtime`] serves a whole process:
//!
//! ```no_run
//! # async fn demo() -> Result<(), plinth_runtime::LoadError> {
//! use plinth_runtime::{Grants, Limits, Runtime, Tier};
//!
//! let runtime = Runtime::new("/home/me/.plinth/cache".into())?;
//! let random = runtime
//!     .load_provider(
//!         "random",
//!         "plugins/random.wasm".as_ref(),
//!         Limits::default(),
//!         Grants::default(),
//!         Tier::Optimized,
//!     )
//!     .await?;
//! println!("{} {}", random.info().name, random.info().version);
//! # Ok(())
//! # }
//! ```
//!
//! The modules fall into four groups: `sandbox` (what a guest instance runs in), `access`
//! (grants, the capabilities a plugin asks for, the advice a refusal gives), `abi` (the WIT
//! contract's versions and what crosses it) and `load` (the engine, the cache, and the
//! providers, programs and policy packs it loads).

mod abi;
mod access;
mod error;
mod load;
mod masking;
mod sandbox;

pub use abi::inspect::ComponentInfo;
pub use abi::versions::{Kind, WitVersion};
pub use access::advice::{GrantAdvice, PlainAdvice};
pub use access::capabilities::{Capabilities, CapabilityError};
pub use access::endpoint::{
    AuthorityPattern, EndpointPattern, HostPattern, PatternError, PortPattern,
};
pub use access::grants::{Access, DirGrant, Grants};
pub use access::missing::{DirRequest, Missing};
pub use error::LoadError;
pub use load::bytes::{ComponentBytes, MAX_COMPONENT_BYTES, read_component_file};
pub use load::cache::LoadStats;
pub use load::policy_pack::{ComponentPolicyPack, PolicySettings};
pub use load::runtime::Runtime;
pub use load::tier::Tier;
pub use masking::{MASK, MIN_MASKED_LEN, SecretMasker, secret_masker};
pub use sandbox::limits::{Limits, LimitsError};
pub use sandbox::{CODE_DIR, LIBRARY_DIR, ProgramCode};

//! The wasmtime embedding of plinth: loads provider and program components (through a cache of
//! precompiled artifacts), runs them sandboxed under a deadline and a memory limit, and
//! implements the engine's [`Provider`](plinth_engine::provider::Provider) and
//! [`Program`](plinth_engine::program::Program) traits over them.
//!
//! One [`Runtime`] serves a whole process:
//!
//! ```no_run
//! # async fn demo() -> Result<(), plinth_runtime::LoadError> {
//! use plinth_runtime::{Grants, Limits, Runtime};
//!
//! let runtime = Runtime::new("/home/me/.plinth/cache".into())?;
//! let random = runtime
//!     .load_provider(
//!         "random",
//!         "plugins/random.wasm".as_ref(),
//!         Limits::default(),
//!         Grants::default(),
//!     )
//!     .await?;
//! println!("{} {}", random.info().name, random.info().version);
//! # Ok(())
//! # }
//! ```

mod advice;
mod bindings;
mod bytes;
mod cache;
mod capabilities;
mod configured;
mod denial;
mod dir_advice;
mod endpoint;
mod engine;
mod env;
mod epoch;
mod error;
mod file_index;
mod grant_overlap;
mod grants;
mod guest;
mod hints;
mod http;
mod inspect;
mod limits;
mod masking;
mod net;
mod program;
mod provider;
mod remark;
mod runtime;
mod sandbox;
mod schema;
mod stdio;
mod upgrade;
mod values;
mod versions;
mod wait;

pub use advice::{GrantAdvice, PlainAdvice};
pub use bytes::{ComponentBytes, MAX_COMPONENT_BYTES, read_component_file};
pub use cache::LoadStats;
pub use capabilities::{Capabilities, CapabilityError, DirRequest, Missing};
pub use endpoint::{AuthorityPattern, EndpointPattern, HostPattern, PatternError, PortPattern};
pub use error::LoadError;
pub use grants::{Access, DirGrant, Grants};
pub use inspect::ComponentInfo;
pub use limits::{Limits, LimitsError};
pub use masking::{MASK, MIN_MASKED_LEN, SecretMasker, secret_masker};
pub use runtime::Runtime;
pub use versions::{Kind, WitVersion};

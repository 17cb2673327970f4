//! The plinth engine: resource model, step generation and execution, and the snapshot manager.
//!
//! The engine knows nothing of WebAssembly. It talks to providers through [`provider::Provider`]
//! and to programs through [`program::Program`]; the runtime implements both over components,
//! and tests implement them in process.

pub mod budget;
pub mod deployment;
pub mod events;
pub mod journal;
pub mod names;
pub mod plan;
pub mod policy;
pub mod program;
pub mod property_path;
pub mod provider;
pub mod refresh;
pub mod resource;
pub mod schema;
pub mod shown;
pub mod snapshot;
mod stack_root;
pub mod urn;
pub mod value;
pub mod write_only;

pub use deployment::step::StepError;

//! Plugins: where a project's plugins come from (`resolve`: a crate, a file or the store;
//! `store`, `download`, `registry`), how they are pinned (`lockfile`, with the capabilities
//! approved in `approval`), policy packs from registries (`packs`), mirrors (`mirror`), how
//! they load as the engine's providers
//! (`providers`), and the `plinth plugin` command (`command`).

mod approval;
mod command;
mod describe;
mod download;
mod keys;
mod locate;
pub mod lockfile;
mod mirror;
pub mod oci;
pub mod packs;
mod properties;
pub mod providers;
mod publish;
pub mod registry;
pub mod resolve;
pub mod signature;
pub mod store;
pub mod trusted;

pub use command::{PluginCommand, run, short};
pub use describe::provider_info;
pub use locate::locate;

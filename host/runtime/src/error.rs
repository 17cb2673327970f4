//! Why a component could not be loaded.

use std::io;
use std::path::PathBuf;

/// Why a provider or program component could not be loaded and started.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The wasmtime engine could not be created with plinth's configuration.
    #[error("cannot create the WebAssembly engine: {0}")]
    Engine(String),
    #[error("cannot read `{}`: {source}", path.display())]
    Read { path: PathBuf, source: io::Error },
    /// The file is not a WebAssembly component (garbage, or a core module).
    #[error("`{}` is not a WebAssembly component: {reason}", path.display())]
    NotAComponent { path: PathBuf, reason: String },
    /// The component is malformed or uses features the engine does not enable.
    #[error("cannot compile `{}`: {message}", path.display())]
    Compile { path: PathBuf, message: String },
    /// The component does not fit the world it was loaded as (missing exports, unknown imports).
    #[error("`{}` is not a plinth {world}: {message}", path.display())]
    Link {
        path: PathBuf,
        world: &'static str,
        message: String,
    },
    /// Instantiating the component, or its first call, failed.
    #[error("`{}` failed to start: {message}", path.display())]
    Start { path: PathBuf, message: String },
    /// A directory granted to the plugin cannot be granted.
    #[error("plugin `{plugin}`: cannot grant the directory `{}`: {reason}", path.display())]
    Grant {
        plugin: String,
        path: PathBuf,
        reason: String,
    },
    /// The provider calls itself something else than the name it was requested under.
    #[error("`{}` is the provider `{actual}`, not `{expected}`", path.display())]
    NameMismatch {
        path: PathBuf,
        expected: String,
        actual: String,
    },
}

/// Lets a [`ProviderSource`](plinth_engine::provider::ProviderSource) built on the runtime
/// report load failures to the engine.
impl From<LoadError> for plinth_engine::provider::LoadError {
    fn from(error: LoadError) -> Self {
        plinth_engine::provider::LoadError(error.to_string())
    }
}

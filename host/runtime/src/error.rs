//! Why a component could not be loaded.

use std::io;
use std::path::PathBuf;

use crate::access::capabilities::CapabilityError;

/// Why a provider or program component could not be loaded and started.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The wasmtime engine could not be created with plinth's configuration.
    #[error("cannot create the WebAssembly engine: {0}")]
    Engine(String),
    /// The cause is part of the message and not the error's source, so that a reporter that
    /// walks the chain does not print it twice.
    #[error("cannot read `{}`: {error}", path.display())]
    Read { path: PathBuf, error: io::Error },
    /// The path names a directory, a device, a FIFO: nothing a component is read from.
    #[error(
        "`{}` is {kind}, not a component file: give the path of a `.wasm` file",
        path.display()
    )]
    NotAFile { path: PathBuf, kind: &'static str },
    /// The file is larger than any component plinth reads.
    #[error(
        "`{}` is {} MiB, larger than the {} MiB a component file may be: is it the right file?",
        path.display(),
        size >> 20,
        limit >> 20
    )]
    TooLarge {
        path: PathBuf,
        size: u64,
        limit: u64,
    },
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
    /// The component exports a version of the plinth world this host does not load.
    #[error(
        "`{}` is a plinth {world} built against plinth:plugin@{version}, which this plinth does          not support (it loads {supported}): use a plinth that supports it, or rebuild the          component against one of those",
        path.display()
    )]
    UnsupportedVersion {
        path: PathBuf,
        world: &'static str,
        /// The version the component was built against.
        version: String,
        /// The versions this host loads, e.g. `0.1.0 and 0.2.0`.
        supported: String,
    },
    /// The component is neither a plinth provider nor a plinth program.
    #[error(
        "`{}` is not a plinth component: {reason} (this plinth loads plinth:plugin {supported})",
        path.display()
    )]
    NotPlinth {
        path: PathBuf,
        reason: String,
        supported: String,
    },
    /// The plugin asks for capabilities the project does not grant, or malformed ones.
    #[error(transparent)]
    Capabilities(#[from] CapabilityError),
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
    /// An environment variable granted to the plugin cannot be granted.
    #[error("plugin `{plugin}`: cannot grant the environment variable `{name}`: {reason}")]
    EnvGrant {
        plugin: String,
        name: String,
        reason: &'static str,
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

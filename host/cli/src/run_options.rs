//! What `preview`, `up`, `refresh` and `destroy` share beyond the engine's options: how a run
//! is shown (`--json`, `--diff`) and what it leaves out (`--exclude`).

use std::sync::Arc;

use anyhow::Result;
use clap::Args;

use crate::compiler::Compiler;
use crate::json_events::JsonStream;

#[derive(Args)]
pub struct RunOptions {
    /// Write the run's events as JSON, one object per line, on stdout (docs/events.schema.json);
    /// everything else goes to stderr.
    #[arg(long)]
    pub json: bool,
    /// Show every property each step changes, old and new (secrets masked).
    #[arg(long)]
    pub diff: bool,
    /// Leave this resource exactly as it is, even if the program no longer declares it (a URN,
    /// or the name of a resource in the state); repeatable. Every other resource is changed.
    #[arg(long = "exclude", value_name = "URN", conflicts_with = "targets")]
    pub exclude: Vec<String>,
    /// Also leave out every resource that depends on an excluded one.
    #[arg(long, requires = "exclude")]
    pub exclude_dependents: bool,
    /// Take a registry plugin's new build although it asks for more (directories, variables,
    /// network peers) than the one pinned in Plinth.lock.
    #[arg(long)]
    pub accept_capabilities: bool,
    /// Build TypeScript guests without checking their types (faster; esbuild still needs
    /// valid syntax).
    #[arg(long, env = "PLINTH_SKIP_TYPECHECK")]
    pub skip_typecheck: bool,
    /// How components are compiled: `fast` (Winch: seconds less per edit, slower code),
    /// `optimized` (Cranelift), or `auto`: fast for guests built from source in the project,
    /// optimized for component files (store, registry, `.wasm` paths).
    #[arg(long, value_enum, env = "PLINTH_COMPILER", default_value_t)]
    pub compiler: Compiler,
}

impl RunOptions {
    /// With `--json`, the stream, which takes stdout for itself.
    pub fn json_stream(&self) -> Result<Option<Arc<JsonStream>>> {
        if !self.json {
            return Ok(None);
        }
        Ok(Some(Arc::new(JsonStream::take_stdout()?)))
    }
}

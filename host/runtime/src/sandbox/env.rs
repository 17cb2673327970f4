//! Environment variables under the env grant: a guest sees the granted names only, with the
//! values plinth itself has; and the host notes when a guest reads its environment, so that a
//! failure can point at a variable it could not see.

use wasmtime::component::HasData;
use wasmtime_wasi::WasiCtxBuilder;
use wasmtime_wasi::cli::WasiCliCtxView;
use wasmtime_wasi::p2::bindings::cli::environment::Host;

use crate::sandbox::denial::Denials;

/// Gives the guest the granted variables that are set in plinth's environment. One that is
/// not set is absent in the guest too; one that is not Unicode cannot be passed and is absent.
pub(crate) fn pass_granted(names: &[String], wasi: &mut WasiCtxBuilder, guest: &str) {
    for (i, name) in names.iter().enumerate() {
        if names[..i].contains(name) {
            continue;
        }
        match std::env::var(name) {
            Ok(value) => {
                wasi.env(name, value);
            }
            Err(std::env::VarError::NotPresent) => {}
            Err(std::env::VarError::NotUnicode(_)) => tracing::warn!(
                target: "plinth::sandbox",
                guest,
                "the granted environment variable `{name}` is not Unicode: it is not passed"
            ),
        }
    }
}

/// What `wasi:cli/environment` is linked with: the sandbox's [`WatchedEnv`].
pub(crate) struct WatchedEnvData;

impl HasData for WatchedEnvData {
    type Data<'a> = WatchedEnv<'a>;
}

/// wasmtime-wasi's environment, with reads noted in [`Denials`].
pub(crate) struct WatchedEnv<'a> {
    pub(crate) cli: WasiCliCtxView<'a>,
    pub(crate) denials: &'a Denials,
}

impl Host for WatchedEnv<'_> {
    fn get_environment(&mut self) -> wasmtime::Result<Vec<(String, String)>> {
        self.denials.env_read();
        self.cli.get_environment()
    }

    fn get_arguments(&mut self) -> wasmtime::Result<Vec<String>> {
        self.cli.get_arguments()
    }

    fn initial_cwd(&mut self) -> wasmtime::Result<Option<String>> {
        self.cli.initial_cwd()
    }
}

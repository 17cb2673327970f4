//! Programs implemented by components of the `program` world.
//!
//! One instance serves a whole run. The host implements the `monitor` import by forwarding each
//! call to the engine's [`Monitor`], which is placed in the store for the duration of each call
//! into the program. A program built against an older `plinth:plugin` (0.1 or 0.2) imports that
//! version's `monitor`, which the host implements with the same code (the interface did not
//! change), converting values up from and down to that version's types (integers travel down as
//! floats).

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use plinth_engine::program::{Monitor, Program, ProgramError};
use plinth_engine::shown::escape_controls;
use plinth_engine::value::{PropertyMap, Value};
use wasmtime::component::{Component, Linker};
use wasmtime::{Engine, Store};
use wasmtime_wasi::{WasiCtxView, WasiView};

use crate::abi::abi_upgrade::{Upgrade, downgrade};
use crate::abi::bindings::{legacy_types, types, v0_1, v0_2, v0_3};
use crate::abi::guest::FromGuest;
use crate::abi::values::{self, Origin};
use crate::abi::versions::WitVersion;
use crate::error::LoadError;
use crate::sandbox::epoch::EpochTicker;
use crate::sandbox::limits::Limits;
use crate::sandbox::{self, ProgramCode, Sandbox, Sandboxed};

/// The store data of a program instance.
pub(crate) struct ProgramState {
    sandbox: Sandbox,
    /// The engine's monitor, during a call into the program.
    monitor: Option<Monitor>,
}

/// A program component ready to instantiate, with the bindings of the version it speaks.
pub(crate) enum ProgramPre {
    V0_1(v0_1::program::ProgramPre<ProgramState>),
    V0_2(v0_2::program::ProgramPre<ProgramState>),
    V0_3(v0_3::program::ProgramPre<ProgramState>),
}

/// An instance's bindings, in the version it speaks.
enum Bindings {
    V0_1(v0_1::program::Program),
    V0_2(v0_2::program::Program),
    V0_3(v0_3::program::Program),
}

impl ProgramPre {
    /// Pre-instantiates `component`, built against `version`, with `linker`.
    pub(crate) fn new(
        linker: &Linker<ProgramState>,
        component: &Component,
        version: WitVersion,
    ) -> wasmtime::Result<ProgramPre> {
        let pre = linker.instantiate_pre(component)?;
        Ok(match version {
            WitVersion::V0_1 => ProgramPre::V0_1(v0_1::program::ProgramPre::new(pre)?),
            WitVersion::V0_2 => ProgramPre::V0_2(v0_2::program::ProgramPre::new(pre)?),
            WitVersion::V0_3 => ProgramPre::V0_3(v0_3::program::ProgramPre::new(pre)?),
        })
    }

    fn engine(&self) -> &Engine {
        match self {
            ProgramPre::V0_1(pre) => pre.engine(),
            ProgramPre::V0_2(pre) => pre.engine(),
            ProgramPre::V0_3(pre) => pre.engine(),
        }
    }

    async fn instantiate(&self, store: &mut Store<ProgramState>) -> wasmtime::Result<Bindings> {
        Ok(match self {
            ProgramPre::V0_1(pre) => Bindings::V0_1(pre.instantiate_async(store).await?),
            ProgramPre::V0_2(pre) => Bindings::V0_2(pre.instantiate_async(store).await?),
            ProgramPre::V0_3(pre) => Bindings::V0_3(pre.instantiate_async(store).await?),
        })
    }
}

/// Links the `monitor` of every version into `linker`.
pub(crate) fn add_to_linker(linker: &mut Linker<ProgramState>) -> wasmtime::Result<()> {
    use wasmtime::component::HasSelf;
    v0_1::program::Program::add_to_linker::<_, HasSelf<_>>(linker, |s| s)?;
    v0_2::program::Program::add_to_linker::<_, HasSelf<_>>(linker, |s| s)?;
    v0_3::program::Program::add_to_linker::<_, HasSelf<_>>(linker, |s| s)
}

/// Calls the callback `$method` of `$program` (a [`ComponentProgram`]) with `$args`, in the
/// version the program speaks; an older program gets `$legacy` instead (values converted down,
/// evaluated only for such a program), and what it returns is upgraded.
macro_rules! call {
    ($program:expr, $method:ident($($arg:expr),* $(,)?), legacy($($legacy:expr),* $(,)?)) => {{
        let program: &mut ComponentProgram = &mut $program;
        let backstop = sandbox::backstop(&mut program.store);
        let call = async {
            match &program.bindings {
                Bindings::V0_1(b) => b
                    .plinth_plugin_callbacks()
                    .$method(&mut program.store, $($legacy),*)
                    .await
                    .map(Upgrade::upgrade),
                Bindings::V0_2(b) => b
                    .plinth_plugin_callbacks()
                    .$method(&mut program.store, $($legacy),*)
                    .await
                    .map(Upgrade::upgrade),
                Bindings::V0_3(b) => {
                    b.plinth_plugin_callbacks()
                        .$method(&mut program.store, $($arg),*)
                        .await
                }
            }
        };
        let outcome = tokio::time::timeout_at(backstop, call).await;
        outcome.unwrap_or_else(|_| Err(sandbox::overran(&mut program.store)))
    }};
}

/// A [`Program`] backed by a component.
pub(crate) struct ComponentProgram {
    name: String,
    store: Store<ProgramState>,
    bindings: Bindings,
    /// Why the instance cannot be entered again: a call trapped, or was cancelled midway.
    broken: Option<String>,
    /// Keeps deadlines working while the program lives.
    _epoch: Arc<EpochTicker>,
}

impl ComponentProgram {
    /// Instantiates the program at `path` from `pre`; a language runtime is given its `code`
    /// and goes by the code's name.
    pub(crate) async fn start(
        path: &Path,
        code: Option<&ProgramCode>,
        pre: ProgramPre,
        limits: Limits,
        epoch: Arc<EpochTicker>,
    ) -> Result<ComponentProgram, LoadError> {
        let name = match code {
            Some(code) => code.name.clone(),
            None => path.file_stem().map_or_else(
                || path.display().to_string(),
                |s| s.to_string_lossy().into_owned(),
            ),
        };
        let sandbox =
            Sandbox::new(name.as_str().into(), log_stdout, limits, code).map_err(|message| {
                LoadError::Start {
                    path: path.to_owned(),
                    message,
                }
            })?;
        let state = ProgramState {
            sandbox,
            monitor: None,
        };
        let mut store = sandbox::new_store(pre.engine(), state);
        sandbox::begin_call(&mut store);
        let bindings = match pre.instantiate(&mut store).await {
            Ok(bindings) => bindings,
            Err(e) => {
                return Err(LoadError::Start {
                    path: path.to_owned(),
                    message: store.data().sandbox.failure("instantiate", &e),
                });
            }
        };
        Ok(ComponentProgram {
            name,
            store,
            bindings,
            broken: None,
            _epoch: epoch,
        })
    }

    /// Prepares a call `op` into the program, with `monitor` available to it.
    fn enter(&mut self, op: &str, monitor: &Monitor) -> Result<(), ProgramError> {
        if let Some(why) = &self.broken {
            return Err(ProgramError(format!(
                "program `{}` cannot be called again: {why}",
                self.name
            )));
        }
        // Cleared by `leave`: if the call's future is dropped midway, the instance stays broken.
        self.broken = Some(format!("`{op}` was cancelled before it returned"));
        self.store.data_mut().monitor = Some(monitor.clone());
        sandbox::begin_call(&mut self.store);
        Ok(())
    }

    /// Ends the call `op` with its `result`.
    fn leave<R>(
        &mut self,
        op: &str,
        result: wasmtime::Result<Result<R, String>>,
    ) -> Result<R, ProgramError> {
        self.store.data_mut().monitor = None;
        match result {
            Ok(returned) => {
                self.broken = None;
                returned.map_err(|message| {
                    let message = message.into_host();
                    // The program's own words, on one line: they cannot start a line of their own.
                    let message = escape_controls(&message);
                    ProgramError(format!("program `{}`: `{op}` failed: {message}", self.name))
                })
            }
            Err(e) => {
                // A host call's error may quote what the program sent.
                let failure = self.store.data().sandbox.failure(op, &e).into_host();
                self.broken = Some(failure.clone());
                Err(ProgramError(format!("program `{}`: {failure}", self.name)))
            }
        }
    }
}

#[async_trait]
impl Program for ComponentProgram {
    async fn run(&mut self, monitor: &Monitor) -> Result<(), ProgramError> {
        self.enter("run", monitor)?;
        let result = call!(*self, call_run(), legacy());
        self.leave("run", result)
    }

    async fn resume(
        &mut self,
        monitor: &Monitor,
        apply: u64,
        inputs: Vec<Value>,
    ) -> Result<Value, ProgramError> {
        let inputs: Vec<types::Value> = inputs.iter().map(values::to_wit).collect();
        self.enter("resume", monitor)?;
        let result = call!(
            *self,
            call_resume(apply, &inputs),
            legacy(apply, &inputs.iter().map(downgrade).collect::<Vec<_>>())
        );
        let value = self.leave("resume", result)?;
        values::from_wit(value, Origin::Program).map_err(|e| {
            ProgramError(format!(
                "program `{}`: `resume` of apply {apply} returned a malformed value: {e}",
                self.name
            ))
        })
    }
}

fn log_stdout(guest: &str, line: &str) {
    tracing::info!(target: "plinth::guest", guest, "{line}");
}

impl ProgramState {
    fn monitor(&self) -> wasmtime::Result<&Monitor> {
        self.monitor.as_ref().ok_or_else(|| {
            wasmtime::Error::msg("the monitor was called outside `run` and `resume`")
        })
    }
}

/// Converts a property map the program sent with `call`; a malformed one fails the call.
fn guest_map(value: types::Value, call: impl FnOnce() -> String) -> wasmtime::Result<PropertyMap> {
    values::map_from_wit(value, Origin::Program)
        .map_err(|e| wasmtime::Error::msg(format!("{}: {e}", call())))
}

/// The value types of 0.3, as the monitor converts them: nothing to do.
mod current_values {
    use crate::abi::bindings::types::Value;

    pub(super) fn up(value: Value) -> Value {
        value
    }

    pub(super) fn down(value: Value) -> Value {
        value
    }
}

/// The value types of 0.1 and 0.2, converted up and down.
mod legacy_values {
    use super::{Upgrade, downgrade, legacy_types, types};

    pub(super) fn up(value: legacy_types::Value) -> types::Value {
        value.upgrade()
    }

    pub(super) fn down(value: types::Value) -> legacy_types::Value {
        downgrade(&value)
    }
}

/// Implements the `monitor` of the WIT version `$version` for programs: the interface is the
/// same in every version, only its generated types differ. `$types` are that version's value
/// types and `$convert` the module converting them (`up` to the current ones, `down` from them).
macro_rules! monitor_host {
    ($module:ident, $version:ident, $types:ident, $convert:ident) => {
        mod $module {
            use plinth_engine::events::Severity;
            use plinth_engine::program::{CustomTimeouts, RegisterRequest, ResourceOptions};
            use plinth_engine::value::Value;

            use super::$convert::{down, up};
            use super::{ProgramState, guest_map};
            use crate::abi::bindings::$types as types;
            use crate::abi::bindings::$version::program::plinth::plugin::monitor;
            use crate::abi::guest::FromGuest;
            use crate::abi::values::{self, Origin};

            /// Every string of the options masked (see [`crate::abi::guest`]); taken apart
            /// exhaustively, so that a new field does not compile until it is converted.
            pub(crate) fn resource_options(options: monitor::ResourceOptions) -> ResourceOptions {
                let monitor::ResourceOptions {
                    depends_on,
                    parent,
                    provider,
                    protect,
                    retain_on_delete,
                    delete_before_replace,
                    ignore_changes,
                    replace_on_changes,
                    aliases,
                    custom_timeouts,
                    import_id,
                } = options;
                ResourceOptions {
                    depends_on,
                    parent,
                    provider,
                    protect,
                    retain_on_delete,
                    delete_before_replace,
                    ignore_changes: ignore_changes.into_host(),
                    replace_on_changes: replace_on_changes.into_host(),
                    aliases: aliases.into_host(),
                    custom_timeouts: custom_timeouts.map(|t| CustomTimeouts {
                        create_seconds: t.create_seconds,
                        update_seconds: t.update_seconds,
                        delete_seconds: t.delete_seconds,
                    }),
                    import_id: import_id.into_host(),
                }
            }

            /// A registration with its strings masked and its inputs concealed. The inputs
            /// come first: a secret among them is masked in the name too.
            pub(crate) fn register_request(
                request: monitor::RegisterRequest,
            ) -> wasmtime::Result<RegisterRequest> {
                let monitor::RegisterRequest {
                    type_,
                    name,
                    custom,
                    inputs,
                    options,
                } = request;
                let inputs = guest_map(up(inputs), || {
                    format!(
                        "register-resource `{}`: malformed inputs",
                        name.clone().into_host()
                    )
                })?;
                Ok(RegisterRequest {
                    ty: type_.into_host(),
                    name: name.into_host(),
                    custom,
                    inputs,
                    options: resource_options(options),
                })
            }

            impl monitor::Host for ProgramState {
                fn register_resource(
                    &mut self,
                    request: monitor::RegisterRequest,
                ) -> wasmtime::Result<u64> {
                    let request = register_request(request)?;
                    Ok(self.monitor()?.register_resource(request)?)
                }

                fn read_resource(
                    &mut self,
                    ty: String,
                    name: String,
                    id: String,
                    inputs: types::Value,
                    options: monitor::ResourceOptions,
                ) -> wasmtime::Result<u64> {
                    let name = name.into_host();
                    let inputs = guest_map(up(inputs), || {
                        format!("read-resource `{name}`: malformed inputs")
                    })?;
                    let (ty, id) = (ty.into_host(), id.into_host());
                    let options = resource_options(options);
                    Ok(self
                        .monitor()?
                        .read_resource(ty, name, id, inputs, options)?)
                }

                fn register_apply(&mut self, inputs: Vec<types::Value>) -> wasmtime::Result<u64> {
                    let inputs = inputs
                        .into_iter()
                        .enumerate()
                        .map(|(i, input)| {
                            values::from_wit(up(input), Origin::Program).map_err(|e| {
                                wasmtime::Error::msg(format!(
                                    "register-apply: malformed input {i}: {e}"
                                ))
                            })
                        })
                        .collect::<wasmtime::Result<Vec<Value>>>()?;
                    Ok(self.monitor()?.register_apply(inputs)?)
                }

                fn register_outputs(
                    &mut self,
                    handle: Option<u64>,
                    outputs: types::Value,
                ) -> wasmtime::Result<()> {
                    let outputs = guest_map(up(outputs), || {
                        "register-outputs: malformed outputs".to_owned()
                    })?;
                    Ok(self.monitor()?.register_outputs(handle, outputs)?)
                }

                async fn invoke(
                    &mut self,
                    token: String,
                    args: types::Value,
                ) -> wasmtime::Result<Result<types::Value, String>> {
                    let monitor = self.monitor()?.clone();
                    let token = token.into_host();
                    let args = guest_map(up(args), || {
                        format!("invoke `{token}`: malformed arguments")
                    })?;
                    Ok(monitor
                        .invoke(&token, args)
                        .await
                        .map(|result| down(values::to_wit(&result))))
                }

                fn config(&mut self, key: String) -> wasmtime::Result<Option<types::Value>> {
                    Ok(self
                        .monitor()?
                        .config(&key.into_host())
                        .map(|v| down(values::to_wit(&v))))
                }

                fn get_stack_info(&mut self) -> wasmtime::Result<monitor::StackInfo> {
                    let info = self.monitor()?.stack_info();
                    Ok(monitor::StackInfo {
                        project: info.project.clone(),
                        stack: info.stack.clone(),
                        dry_run: info.dry_run,
                    })
                }

                fn log(
                    &mut self,
                    level: monitor::LogLevel,
                    message: String,
                ) -> wasmtime::Result<()> {
                    let severity = match level {
                        monitor::LogLevel::Debug => Severity::Debug,
                        monitor::LogLevel::Info => Severity::Info,
                        monitor::LogLevel::Warn => Severity::Warning,
                        monitor::LogLevel::Error => Severity::Error,
                    };
                    // What a program logs is its output too: masked like its stdout.
                    Ok(self.monitor()?.log(severity, message.into_host())?)
                }
            }
        }
    };
}

monitor_host!(monitor_v0_1, v0_1, legacy_types, legacy_values);
monitor_host!(monitor_v0_2, v0_2, legacy_types, legacy_values);
monitor_host!(monitor_v0_3, v0_3, types, current_values);

impl types::Host for ProgramState {}
impl legacy_types::Host for ProgramState {}

impl WasiView for ProgramState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        self.sandbox.ctx()
    }
}

impl Sandboxed for ProgramState {
    fn sandbox(&mut self) -> &mut Sandbox {
        &mut self.sandbox
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use crate::abi::bindings::types::{Node, Value};
    use crate::abi::bindings::v0_3::program::plinth::plugin::monitor;

    /// Every string a program sends with `register-resource` (`text` holds `secret`, learned
    /// already) reaches the engine masked, and inputs with a key holding it are refused, the
    /// error masked; `read-resource`, `invoke`, `config` and `log` convert theirs with the same
    /// `into_host`.
    pub(crate) fn assert_monitor_strings_masked(text: &str, secret: &str) {
        let options = || monitor::ResourceOptions {
            depends_on: vec![],
            parent: None,
            provider: None,
            protect: false,
            retain_on_delete: false,
            delete_before_replace: false,
            ignore_changes: vec![text.into()],
            replace_on_changes: vec![text.into()],
            aliases: vec![text.into()],
            custom_timeouts: None,
            import_id: Some(text.into()),
        };
        let request = |key: &str| monitor::RegisterRequest {
            type_: text.into(),
            name: text.into(),
            custom: true,
            inputs: Value {
                nodes: vec![
                    Node::Object(vec![(key.into(), 1), ("plain".into(), 2)]),
                    Node::Text(text.into()),
                    Node::Text(secret.into()),
                ],
            },
            options: options(),
        };
        let registered = super::monitor_v0_3::register_request(request("echoed")).unwrap();
        let shown = format!("{registered:?}");
        assert!(!shown.contains(secret), "a registration: {shown}");
        let refused = super::monitor_v0_3::register_request(request(text)).unwrap_err();
        let shown = format!("{refused:?}");
        assert!(
            !shown.contains(secret)
                && shown.contains("a property name holding the value of a secret"),
            "a registration: {shown}"
        );
    }
}

//! The sandbox every guest instance runs in: a WASI context that grants nothing unasked, captured
//! stdout and stderr, a memory limit and a per-call deadline; and the account of how a call went
//! wrong when it did, with what the sandbox refused the guest during it.
//!
//! Its submodules are the sandbox's parts: the limits and the epoch deadline, bounded waits,
//! stdio, the environment, sockets and HTTP under their grants, TLS done by the host over a
//! granted connection, and the denials a call met.

pub(crate) mod denial;
pub(crate) mod env;
pub(crate) mod epoch;
pub(crate) mod http;
pub(crate) mod limits;
pub(crate) mod link;
pub(crate) mod net;
pub(crate) mod stdio;
pub(crate) mod tls;
pub(crate) mod wait;

use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use plinth_engine::provider::ProviderError;
use plinth_engine::shown::escape_controls;
use wasmtime::component::ResourceTable;
use wasmtime::{Engine, Store, Trap, UpdateDeadline};
use wasmtime_wasi::sockets::WasiSocketsCtxView;
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView};

use crate::access::advice::{GrantAdvice, PlainAdvice};
use crate::access::grants::{DirGrant, Grants};
use crate::sandbox::denial::{Denials, Owner};
use crate::sandbox::env::WatchedEnv;
use crate::sandbox::http::HttpGuard;
use crate::sandbox::limits::{Limits, MAX_TRANSFER_BYTES, MemoryLimiter};
use crate::sandbox::net::{GuardedLookup, NetPolicy};
use crate::sandbox::stdio::{LineSink, OutputPipe};
use crate::sandbox::wait::BoundedPoll;

/// Where a program run by a prebuilt language runtime (TypeScript, Python) finds its own code:
/// the bundle or modules plinth built from its sources, preopened read-only. Nothing else is
/// there, and the program's grants are unchanged (it has none).
pub const CODE_DIR: &str = "/.plinth-code";

/// Where a prebuilt language runtime that reads library files at run time finds them (the
/// Python runtime: the interpreter's standard library), preopened read-only.
pub const LIBRARY_DIR: &str = "/.plinth-library";

/// A program's code, for a component that loads it at run time (a prebuilt TypeScript or
/// Python runtime): the directory holding it, preopened read-only at
/// [`CODE_DIR`], the runtime's own library files where it reads some at run
/// time (Python's standard library), preopened read-only at
/// [`LIBRARY_DIR`], and the program's name in messages.
#[derive(Debug, Clone)]
pub struct ProgramCode {
    pub dir: PathBuf,
    pub library: Option<PathBuf>,
    pub name: String,
}

/// The state of one guest instance that the host keeps for it.
pub(crate) struct Sandbox {
    wasi: WasiCtx,
    table: ResourceTable,
    http: WasiHttpCtx,
    http_guard: HttpGuard,
    net: Arc<NetPolicy>,
    denials: Arc<Denials>,
    /// The environment variables granted, to explain failures.
    env: Vec<String>,
    /// The plugin's name and granted directories, to explain file-system failures (`None`
    /// for a program, which has no grants).
    dirs: Option<(String, Vec<DirGrant>)>,
    limiter: MemoryLimiter,
    /// The guest's name, to mark each line it wrote to stderr as its own in a failure.
    guest: Arc<str>,
    stderr: OutputPipe,
    timeout: Duration,
    /// When the current call must be done.
    deadline: Instant,
    /// The current call ran past its deadline.
    timed_out: bool,
}

impl Sandbox {
    /// A sandbox for the program named `guest`, whose stdout lines go to `stdout`. Programs
    /// are granted nothing; a program run by a prebuilt language runtime sees its own code
    /// read-only at [`CODE_DIR`], and the runtime's library, if any, read-only at
    /// [`LIBRARY_DIR`] (the error says which could not be opened, and why).
    pub(crate) fn new(
        guest: Arc<str>,
        stdout: LineSink,
        limits: Limits,
        code: Option<&ProgramCode>,
    ) -> Result<Sandbox, String> {
        let owner = Owner::Program(guest.to_string());
        let mut wasi = WasiCtxBuilder::new();
        if let Some(code) = code {
            preopen_read_only(&mut wasi, &code.dir, CODE_DIR, "its code")?;
            if let Some(library) = &code.library {
                preopen_read_only(&mut wasi, library, LIBRARY_DIR, "its runtime's library")?;
            }
        }
        Ok(Sandbox::build(
            wasi,
            owner,
            guest,
            stdout,
            limits,
            &Grants::default(),
            Arc::new(PlainAdvice),
        ))
    }

    /// A sandbox for the policy pack named `guest`, granted nothing: no directory, network,
    /// environment variable or argument, whatever the project grants its plugins.
    pub(crate) fn for_policy_pack(guest: Arc<str>, stdout: LineSink, limits: Limits) -> Sandbox {
        let owner = Owner::PolicyPack(guest.to_string());
        Sandbox::build(
            WasiCtxBuilder::new(),
            owner,
            guest,
            stdout,
            limits,
            &Grants::default(),
            Arc::new(PlainAdvice),
        )
    }

    /// A sandbox for the plugin named `guest`, with what `grants` grants; the error says which
    /// grant failed.
    pub(crate) fn granted(
        guest: Arc<str>,
        stdout: LineSink,
        limits: Limits,
        grants: &Grants,
        advice: Arc<dyn GrantAdvice>,
    ) -> Result<Sandbox, String> {
        let mut wasi = WasiCtxBuilder::new();
        grants.preopen(&mut wasi)?;
        crate::sandbox::env::pass_granted(&grants.env, &mut wasi, &guest);
        let owner = Owner::Plugin(guest.to_string());
        Ok(Sandbox::build(
            wasi, owner, guest, stdout, limits, grants, advice,
        ))
    }

    fn build(
        mut wasi: WasiCtxBuilder,
        owner: Owner,
        guest: Arc<str>,
        stdout: LineSink,
        limits: Limits,
        grants: &Grants,
        advice: Arc<dyn GrantAdvice>,
    ) -> Sandbox {
        let stderr = OutputPipe::new(guest.clone(), |guest, line| {
            tracing::debug!(target: "plinth::guest", guest, "stderr: {line}");
        });
        let dirs = match &owner {
            Owner::Plugin(name) => Some((name.clone(), grants.dirs.clone())),
            Owner::Program(_) | Owner::PolicyPack(_) => None,
        };
        let denials = Arc::new(Denials::new(owner, advice));
        let net = NetPolicy::new(grants, denials.clone());
        // Deny by default: no arguments and no stdin; only the granted environment variables,
        // directories, network endpoints and HTTP authorities. Clocks and randomness are
        // harmless.
        net.install(&mut wasi);
        let wasi = wasi
            .stdout(OutputPipe::new(guest.clone(), stdout))
            .stderr(stderr.clone())
            .build();
        Sandbox {
            wasi,
            table: ResourceTable::new(),
            http: WasiHttpCtx::new(),
            http_guard: HttpGuard::new(grants.http.clone(), denials.clone()),
            net,
            denials,
            env: grants.env.clone(),
            dirs,
            limiter: MemoryLimiter::new(limits.memory_bytes),
            guest,
            stderr,
            timeout: limits.call_timeout,
            deadline: Instant::now() + limits.call_timeout,
            timed_out: false,
        }
    }

    /// The view `wasi:http` works on.
    pub(crate) fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            ctx: &mut self.http,
            table: &mut self.table,
            hooks: &mut self.http_guard,
        }
    }

    /// The view the guarded `wasi:sockets/ip-name-lookup` works on.
    pub(crate) fn guarded_lookup(&mut self) -> GuardedLookup<'_> {
        GuardedLookup {
            sockets: WasiSocketsCtxView {
                ctx: self.wasi.sockets(),
                table: &mut self.table,
            },
            policy: &self.net,
        }
    }

    /// The view the deadline-bounded `wasi:io/poll` works on.
    pub(crate) fn bounded_poll(&mut self) -> BoundedPoll<'_> {
        BoundedPoll {
            table: &mut self.table,
            deadline: self.deadline,
            timed_out: &mut self.timed_out,
        }
    }

    /// The view `plinth:tls/client` works on.
    pub(crate) fn tls_client(&mut self) -> crate::sandbox::tls::TlsClient<'_> {
        crate::sandbox::tls::TlsClient {
            table: &mut self.table,
            net: &self.net,
            deadline: self.deadline,
            timed_out: &mut self.timed_out,
        }
    }

    /// The view the watched `wasi:cli/environment` works on.
    pub(crate) fn watched_env(&mut self) -> WatchedEnv<'_> {
        WatchedEnv {
            cli: wasmtime_wasi::cli::WasiCliCtxView {
                ctx: self.wasi.cli(),
                table: &mut self.table,
            },
            denials: &self.denials,
        }
    }

    /// What the sandbox refused the guest during the current call, as far as it explains a
    /// failure the guest described with `message`.
    pub(crate) fn denials(&self, message: &str) -> Option<String> {
        let refused = self.denials.explain(message, &self.env);
        let dirs = (self.dirs.as_ref()).and_then(|(plugin, dirs)| {
            crate::access::dir_advice::advise(plugin, dirs, message, self.denials.advice())
        });
        match (refused, dirs) {
            (Some(refused), Some(dirs)) => Some(format!("{refused}\n{dirs}")),
            (refused, dirs) => refused.or(dirs),
        }
    }

    /// Called at each epoch tick while the guest runs: lets other tasks run, or ends the call
    /// once its deadline has passed.
    fn on_epoch(&mut self) -> wasmtime::Result<UpdateDeadline> {
        if Instant::now() < self.deadline {
            Ok(UpdateDeadline::Yield(1))
        } else {
            self.timed_out = true;
            Err(wasmtime::Error::msg("the call ran out of time"))
        }
    }

    /// Describes how the call `op` failed with `error`, with what the guest last wrote to
    /// stderr (a Rust guest's panic message, for instance).
    pub(crate) fn failure(&self, op: &str, error: &wasmtime::Error) -> String {
        let stderr: Vec<String> = self
            .stderr
            .recent_lines()
            .into_iter()
            .filter(|line| {
                !line.trim().is_empty() && !line.starts_with("note: run with `RUST_BACKTRACE")
            })
            .collect();
        let what = if self.timed_out {
            format!("`{op}` timed out after {:?}", self.timeout)
        } else if let Some((limit, desired)) = self.limiter.exceeded() {
            format!(
                "`{op}` ran out of memory: it needed {} MiB, the limit is {} MiB",
                desired.div_ceil(1 << 20),
                limit >> 20
            )
        } else if stderr.iter().any(|line| line.contains("panicked at")) {
            format!("`{op}` panicked")
        } else if let Some(trap) = error.downcast_ref::<Trap>() {
            format!("`{op}` trapped: {trap}")
        } else if transfer_refused(error) {
            format!(
                "`{op}` tried to pass the host more than {} MiB in one call, the limit",
                MAX_TRANSFER_BYTES >> 20
            )
        } else {
            // A host function failed the call, or wasmtime did: the root cause says why.
            format!("`{op}` failed: {}", error.root_cause())
        };
        tracing::debug!(target: "plinth::guest", "{what}: {error:?}");
        let mut message = what;
        if !stderr.is_empty() {
            message.push(':');
        }
        // Each line marked as the guest's and escaped onto it, so that none reads as plinth's
        // own output (an indented `error:` or `+ created`).
        let guest = escape_controls(&self.guest);
        for line in &stderr {
            write!(message, "\n  {guest} stderr| {}", escape_controls(line))
                .expect("writing to a String");
        }
        let said = format!("{message}\n{}", error.root_cause());
        if let Some(denials) = self.denials(&said) {
            message = format!("{message}\n{denials}");
        }
        message
    }
}

/// Whether wasmtime refused to lift more than [`MAX_TRANSFER_BYTES`] out of the guest. Its error
/// type is private: it is known by its message (the adversarial e2e tests pin it).
/// Preopens the host directory `dir` read-only as `guest_path`; the error names it as `what`.
fn preopen_read_only(
    wasi: &mut WasiCtxBuilder,
    dir: &Path,
    guest_path: &str,
    what: &str,
) -> Result<(), String> {
    wasi.preopened_dir(dir, guest_path, FsPerms::ReadOnly)
        .map(|_| ())
        .map_err(|e| format!("cannot open {what} `{}`: {e:#}", dir.display()))
}

fn transfer_refused(error: &wasmtime::Error) -> bool {
    error
        .chain()
        .any(|cause| cause.to_string().contains("fuel allocated for hostcalls"))
}

impl WasiView for Sandbox {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

/// Adds to `error`, which a guest returned from a call in `sandbox`, what the sandbox refused
/// the guest during that call, if that may be why it failed.
pub(crate) fn explain_refusals(sandbox: &Sandbox, error: ProviderError) -> ProviderError {
    match error {
        ProviderError::Failed(message) => match sandbox.denials(&message) {
            Some(denials) => ProviderError::Failed(format!("{message}\n{denials}")),
            None => ProviderError::Failed(message),
        },
        ProviderError::PartiallyCreated(mut partial) => {
            if let Some(denials) = sandbox.denials(&partial.reasons.join("\n")) {
                partial.reasons.push(denials);
            }
            ProviderError::PartiallyCreated(partial)
        }
        other => other,
    }
}

/// Store data that contains a [`Sandbox`].
pub(crate) trait Sandboxed: WasiView + Sized + 'static {
    fn sandbox(&mut self) -> &mut Sandbox;
}

impl Sandboxed for Sandbox {
    fn sandbox(&mut self) -> &mut Sandbox {
        self
    }
}

/// A store whose memory and deadlines the sandbox in `data` governs.
pub(crate) fn new_store<T: Sandboxed>(engine: &Engine, data: T) -> Store<T> {
    let mut store = Store::new(engine, data);
    store.limiter(|data| &mut data.sandbox().limiter);
    store.set_hostcall_fuel(MAX_TRANSFER_BYTES);
    store.epoch_deadline_callback(|mut store| store.data_mut().sandbox().on_epoch());
    store
}

/// How long past its deadline a call may go on before the host abandons it. The epoch check
/// and the bounded poll end a call at its deadline; this catches a guest blocked in a host call
/// neither sees (a blocking stream read, say). Abandoning drops the instance with the call.
const BACKSTOP_GRACE: Duration = Duration::from_millis(500);

/// When the host gives up on the call `store` is about to make.
pub(crate) fn backstop<T: Sandboxed>(store: &mut Store<T>) -> tokio::time::Instant {
    (store.data_mut().sandbox().deadline + BACKSTOP_GRACE).into()
}

/// The error of a call the host abandoned at its backstop, reported as a timeout.
pub(crate) fn overran<T: Sandboxed>(store: &mut Store<T>) -> wasmtime::Error {
    store.data_mut().sandbox().timed_out = true;
    wasmtime::Error::msg("the call ran out of time, blocked in the host")
}

/// Prepares `store` for a call: a new deadline, and no stderr or memory denial from before.
pub(crate) fn begin_call<T: Sandboxed>(store: &mut Store<T>) {
    let sandbox = store.data_mut().sandbox();
    sandbox.deadline = Instant::now() + sandbox.timeout;
    sandbox.timed_out = false;
    sandbox.limiter.reset();
    sandbox.stderr.clear();
    sandbox.denials.clear();
    // The epoch callback runs at the next tick, and checks the deadline then.
    store.set_epoch_deadline(1);
}

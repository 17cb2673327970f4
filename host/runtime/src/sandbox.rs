//! The sandbox every guest instance runs in: a WASI context that grants nothing unasked, captured
//! stdout and stderr, a memory limit and a per-call deadline; and the account of how a call went
//! wrong when it did.

use std::sync::Arc;
use std::time::{Duration, Instant};

use wasmtime::component::ResourceTable;
use wasmtime::{Engine, Store, Trap, UpdateDeadline};
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

use crate::grants::Grants;
use crate::limits::{Limits, MemoryLimiter};
use crate::stdio::{LineSink, OutputPipe};

/// The state of one guest instance that the host keeps for it.
pub(crate) struct Sandbox {
    wasi: WasiCtx,
    table: ResourceTable,
    limiter: MemoryLimiter,
    stderr: OutputPipe,
    timeout: Duration,
    /// When the current call must be done.
    deadline: Instant,
    /// The current call ran past its deadline.
    timed_out: bool,
}

impl Sandbox {
    /// A sandbox for the guest named `guest`, whose stdout lines go to `stdout`.
    pub(crate) fn new(guest: Arc<str>, stdout: LineSink, limits: Limits) -> Sandbox {
        Sandbox::build(WasiCtxBuilder::new(), guest, stdout, limits)
    }

    /// A sandbox that also has what `grants` grants; the error says which grant failed.
    pub(crate) fn granted(
        guest: Arc<str>,
        stdout: LineSink,
        limits: Limits,
        grants: &Grants,
    ) -> Result<Sandbox, String> {
        let mut wasi = WasiCtxBuilder::new();
        grants.preopen(&mut wasi)?;
        Ok(Sandbox::build(wasi, guest, stdout, limits))
    }

    fn build(
        mut wasi: WasiCtxBuilder,
        guest: Arc<str>,
        stdout: LineSink,
        limits: Limits,
    ) -> Sandbox {
        let stderr = OutputPipe::new(guest.clone(), |guest, line| {
            tracing::debug!(target: "plinth::guest", guest, "stderr: {line}");
        });
        // Deny by default: no environment, no arguments, no stdin, no sockets and no name
        // lookups, and no directories but granted ones. Clocks and randomness are harmless.
        let wasi = wasi
            .stdout(OutputPipe::new(guest, stdout))
            .stderr(stderr.clone())
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false)
            .build();
        Sandbox {
            wasi,
            table: ResourceTable::new(),
            limiter: MemoryLimiter::new(limits.memory_bytes),
            stderr,
            timeout: limits.call_timeout,
            deadline: Instant::now() + limits.call_timeout,
            timed_out: false,
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
        } else {
            // A host function failed the call, or wasmtime did: the root cause says why.
            format!("`{op}` failed: {}", error.root_cause())
        };
        tracing::debug!(target: "plinth::guest", "{what}: {error:?}");
        if stderr.is_empty() {
            what
        } else {
            format!("{what}:\n  {}", stderr.join("\n  "))
        }
    }
}

impl WasiView for Sandbox {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
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
    store.epoch_deadline_callback(|mut store| store.data_mut().sandbox().on_epoch());
    store
}

/// Prepares `store` for a call: a new deadline, and no stderr or memory denial from before.
pub(crate) fn begin_call<T: Sandboxed>(store: &mut Store<T>) {
    let sandbox = store.data_mut().sandbox();
    sandbox.deadline = Instant::now() + sandbox.timeout;
    sandbox.timed_out = false;
    sandbox.limiter.reset();
    sandbox.stderr.clear();
    // The epoch callback runs at the next tick, and checks the deadline then.
    store.set_epoch_deadline(1);
}

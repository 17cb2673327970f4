//! The sandbox's WASI in a linker: wasmtime-wasi's, with name lookups, environment reads,
//! blocking waits and `wasi:http` going through the sandbox's parts ([`net`](super::net),
//! [`env`](super::env), [`wait`](super::wait), [`http`](super::http)) instead, and
//! `plinth:tls` ([`tls`](super::tls), TLS over a guest's granted connection). Apart from those
//! parts, so that none of them names the sandbox that holds them.

use wasmtime::component::Linker;
use wasmtime_wasi::p2::bindings::cli::environment;
use wasmtime_wasi::p2::bindings::io::poll;
use wasmtime_wasi::p2::bindings::sockets::ip_name_lookup;
use wasmtime_wasi_http::WasiHttp;
use wasmtime_wasi_http::p2::bindings::{LinkOptions, http as wit};

use crate::sandbox::Sandboxed;
use crate::sandbox::env::WatchedEnvData;
use crate::sandbox::net::GuardedLookupData;
use crate::sandbox::tls::{TlsClientData, client as tls_client};
use crate::sandbox::wait::BoundedPollData;

/// Adds WASI 0.2 and `wasi:http` to `linker`, with name lookups, environment reads and blocking
/// waits going through the sandbox's checks instead of wasmtime-wasi's own.
pub(crate) fn link_sandboxed_wasi<T: Sandboxed>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
    wasmtime_wasi::p2::add_to_linker_async(linker)?;
    link_guarded_lookup(linker)?;
    link_watched_environment(linker)?;
    link_bounded_poll(linker)?;
    link_tls(linker)?;
    link_http(linker)
}

/// Adds `plinth:tls/client`: TLS done by the host over a connection the guest opened.
fn link_tls<T: Sandboxed>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
    tls_client::add_to_linker::<T, TlsClientData>(linker, |t| t.sandbox().tls_client())
}

/// Replaces wasmtime-wasi's `wasi:sockets/ip-name-lookup` in `linker` (which must already
/// have it) by one that resolves granted names only and remembers what they resolved to.
fn link_guarded_lookup<T: Sandboxed>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let linked = ip_name_lookup::add_to_linker::<T, GuardedLookupData>(linker, |t| {
        t.sandbox().guarded_lookup()
    });
    linker.allow_shadowing(false);
    linked
}

/// Replaces wasmtime-wasi's `wasi:cli/environment` in `linker` (which must already have it) by
/// the same one that also notes each read.
fn link_watched_environment<T: Sandboxed>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let linked =
        environment::add_to_linker::<T, WatchedEnvData>(linker, |t| t.sandbox().watched_env());
    linker.allow_shadowing(false);
    linked
}

/// Replaces `wasi:io/poll` in `linker` (which must already have it) by wasmtime-wasi's, bounded
/// by the deadline.
fn link_bounded_poll<T: Sandboxed>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let linked = poll::add_to_linker::<T, BoundedPollData>(linker, |t| t.sandbox().bounded_poll());
    linker.allow_shadowing(false);
    linked
}

/// Adds `wasi:http`'s outgoing handler and types to `linker`, governed by each sandbox's
/// [`HttpGuard`](super::http::HttpGuard).
fn link_http<T: Sandboxed>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
    wit::outgoing_handler::add_to_linker::<T, WasiHttp>(linker, |t| t.sandbox().http())?;
    wit::types::add_to_linker::<T, WasiHttp>(linker, &LinkOptions::default().into(), |t| {
        t.sandbox().http()
    })
}

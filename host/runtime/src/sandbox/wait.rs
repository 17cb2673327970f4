//! Blocking waits under the call's deadline. The epoch deadline stops a guest only while it runs
//! WebAssembly: a guest blocked in `wasi:io/poll` (a socket read, a sleep) waits in the host,
//! where no epoch check happens. So `poll` and `pollable.block` wait at most until the deadline,
//! and end the call then, as the epoch check would.

use std::time::Instant;

use wasmtime::component::{HasData, Resource, ResourceTable};
use wasmtime_wasi::p2::DynPollable;
use wasmtime_wasi::p2::bindings::io::poll::{Host, HostPollable};

/// What `wasi:io/poll` is linked with: the sandbox's [`BoundedPoll`].
pub(crate) struct BoundedPollData;

impl HasData for BoundedPollData {
    type Data<'a> = BoundedPoll<'a>;
}

/// wasmtime-wasi's `wasi:io/poll` (implemented on the resource table), with a deadline.
pub(crate) struct BoundedPoll<'a> {
    pub(crate) table: &'a mut ResourceTable,
    pub(crate) deadline: Instant,
    /// Set when a wait ran into the deadline.
    pub(crate) timed_out: &'a mut bool,
}

impl BoundedPoll<'_> {
    async fn until_deadline<R>(
        deadline: Instant,
        timed_out: &mut bool,
        wait: impl Future<Output = wasmtime::Result<R>>,
    ) -> wasmtime::Result<R> {
        match tokio::time::timeout_at(deadline.into(), wait).await {
            Ok(result) => result,
            Err(_) => {
                *timed_out = true;
                Err(wasmtime::Error::msg("the call ran out of time"))
            }
        }
    }
}

impl Host for BoundedPoll<'_> {
    async fn poll(&mut self, pollables: Vec<Resource<DynPollable>>) -> wasmtime::Result<Vec<u32>> {
        let wait = Host::poll(&mut *self.table, pollables);
        Self::until_deadline(self.deadline, self.timed_out, wait).await
    }
}

impl HostPollable for BoundedPoll<'_> {
    async fn block(&mut self, pollable: Resource<DynPollable>) -> wasmtime::Result<()> {
        let wait = HostPollable::block(&mut *self.table, pollable);
        Self::until_deadline(self.deadline, self.timed_out, wait).await
    }

    async fn ready(&mut self, pollable: Resource<DynPollable>) -> wasmtime::Result<bool> {
        HostPollable::ready(&mut *self.table, pollable).await
    }

    fn drop(&mut self, pollable: Resource<DynPollable>) -> wasmtime::Result<()> {
        HostPollable::drop(&mut *self.table, pollable)
    }
}

//! The runtime's integration tests, one binary: each file under `tests/` was a binary of its own
//! that linked wasmtime and built its guests again; one links once and builds each guest once.

mod adversary;
mod grants;
mod loading;
mod program;
mod provider;
mod reach;
// Where the benches find it too.
#[path = "../support/mod.rs"]
mod support;
mod versions;

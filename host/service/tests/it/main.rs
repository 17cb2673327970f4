//! The service's integration tests, in one binary: one link of the service's stack and one
//! PostgreSQL server for them all, where a binary per file linked and started each twelve times.

// Beside this folder, where a test file of its own (`mod common;`) also finds it.
#[path = "../common/mod.rs"]
mod common;

mod access;
mod backend;
mod client;
mod console;
mod events;
mod fuzz;
mod gzip;
mod leases;
mod oidc;
mod operations;
mod policy_packs;
mod protocol;
mod secrets;
mod state;

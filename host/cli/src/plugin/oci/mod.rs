//! Plugins in OCI registries: references (`reference`), the standard Wasm artifact layout
//! (`artifact`), registry credentials (`auth`) and the distribution API client (`client`), and signatures beside
//! artifacts (`signature`).

pub mod artifact;
mod auth;
pub mod client;
pub mod reference;
pub mod signature;

pub use client::Client;
pub use reference::Reference;

//! Plugins in OCI registries: references (`reference`), the standard Wasm artifact layout
//! (`artifact`), registry credentials (`auth`) and the distribution API client (`client`).

pub mod artifact;
mod auth;
pub mod client;
pub mod reference;

pub use client::Client;
pub use reference::Reference;

//! Plugins in OCI registries: references (`reference`), the standard Wasm artifact layout
//! (`artifact`), registry credentials (`auth`) and the distribution API client (`client`),
//! OCI image-layout directories (`layout`), both behind one `Endpoint`, and signatures beside
//! artifacts (`signature`).

pub mod artifact;
mod auth;
pub mod client;
mod endpoint;
pub mod layout;
pub mod reference;
pub mod signature;

pub use client::Client;
pub use endpoint::Endpoint;
pub use layout::Layout;
pub use reference::Reference;

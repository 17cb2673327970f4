//! `plinth serve`: the team backend. Every fact lives in PostgreSQL, so any number of replicas
//! behind one database behave as one. Between requests a replica keeps only the journal batches
//! it parsed, a shortcut the fold checks against the database (`parsed`).

mod api;
mod auth;
mod db;
mod error;
mod events;
mod journal;
mod parsed;
mod secrets;
mod tokens;
mod updates;
mod versions;

pub use api::{Options, router};
pub use auth::{Level, Scope};
pub use db::connect;
pub use secrets::{MasterKey, MasterKeys, Rotated, rotate};
pub use tokens::{Revoke, TokenInfo, create_token, list_tokens, revoke_tokens};

//! `plinth serve`: the team backend. Every fact lives in PostgreSQL, so any number of replicas
//! behind one database behave as one. Between requests a replica keeps only the journal batches
//! it parsed, a shortcut the fold checks against the database (`parsed`).

mod access;
mod admission;
mod answers;
mod api;
mod audit;
mod auth;
mod body;
mod checkpoints;
mod checks;
mod config_keys;
mod console;
mod database_url;
mod db;
mod error;
mod events;
mod health;
mod journal;
mod metrics;
mod oidc;
mod open_creates;
mod parsed;
mod policy_packs;
mod release;
mod removed;
mod rename;
mod repair;
mod replays;
mod request_log;
mod secrets;
mod tags;
mod tokens;
mod updates;
mod versions;

pub use api::{Options, router};
pub use audit::{Entry as AuditEntry, Filter as AuditFilter, list as list_audit, parse_since};
pub use auth::{Level, Scope};
pub use database_url::{DatabaseUrlError, has_password, read_database_file, readable_by_others};
pub use db::connect;
pub use metrics::{Metrics, router as metrics_router};
pub use oidc::{ConfigError as OidcConfigError, OidcConfig};
pub use policy_packs::{
    MAX_PACK_BYTES, NewPack, PackError, StoredPack, add as add_policy_pack,
    list as list_policy_packs, remove as remove_policy_pack,
};
pub use removed::{RemovedStack, list_stacks, purge_periodically, purge_removed, restore};
pub use repair::{Repaired, repair};
pub use secrets::{MasterKey, MasterKeys, Rotated, rotate};
pub use tokens::{Revoke, TokenError, TokenInfo, create_token, list_tokens, revoke_tokens};

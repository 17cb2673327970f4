//! The resources `--target`, `--replace` and `--import-pending-create` name: a whole URN (which
//! may name a resource the program has yet to create), or a name or `type::name` of a resource in
//! the state.

use std::collections::HashSet;

use anyhow::{Result, anyhow};
use plinth_engine::snapshot::Snapshot;
use plinth_engine::urn::Urn;

/// The URNs of `queries`, or `None` when there are none (everything is targeted).
pub fn resolve(snapshot: &Snapshot, queries: &[String]) -> Result<Option<HashSet<Urn>>> {
    if queries.is_empty() {
        return Ok(None);
    }
    let urns = queries
        .iter()
        .map(|q| resolve_one(snapshot, q))
        .collect::<Result<_>>()?;
    Ok(Some(urns))
}

pub fn resolve_one(snapshot: &Snapshot, query: &str) -> Result<Urn> {
    if query.starts_with("urn:") {
        return Urn::parse(query).map_err(|e| anyhow!(e));
    }
    snapshot.resolve(query).map_err(|e| anyhow!("{e}"))
}

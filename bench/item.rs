//! What a `bench:Item` is, shared by the Wasm provider and its native gRPC twin so that both do
//! the same work: an id derived from the URN (stable across updates, so chains through ids do
//! not cascade) and a `result` derived from the payload.

/// The resource type both providers manage.
pub const TOKEN: &str = "bench:Item";

/// The id of the item `urn`.
pub fn id(urn: &str) -> String {
    format!("item-{:016x}", fnv1a(urn.as_bytes()))
}

/// The `result` output for `payload`.
pub fn result(payload: &str) -> String {
    format!("{:016x}", fnv1a(payload.as_bytes()))
}

/// FNV-1a, 64 bits: cheap, deterministic and dependency-free.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

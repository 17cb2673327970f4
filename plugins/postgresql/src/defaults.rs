//! The serde defaults that inputs of several types share.

pub(crate) fn yes() -> bool {
    true
}

/// No limit on connections, as PostgreSQL says it.
pub(crate) fn no_limit() -> i32 {
    -1
}

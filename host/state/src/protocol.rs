//! The service protocol's shared vocabulary: the limits client and service must agree on, and
//! the typed bodies of its requests and answers, written once for both.

/// The most journal entries one batch carries (the service refuses more).
pub const JOURNAL_BATCH: usize = 100;
/// The most events one batch carries (the service refuses more).
pub const EVENTS_BATCH: usize = 50;
/// The most event batches a client has in flight at once: the service stores a batch only once
/// every batch up to this many before it is stored.
pub const EVENTS_IN_FLIGHT: usize = 3;
/// The most history entries one page carries.
pub const HISTORY_PAGE: usize = 500;

//! Catalog writes that race. PostgreSQL rewrites a catalog row (a database's or a schema's ACL,
//! a table's, a row of default privileges) without locking it first, so two sessions granting
//! on the same object at once make one of them fail with "tuple concurrently updated"
//! (SQLSTATE XX000): the anchor provider's chronic bug at any parallelism above one. The engine
//! runs steps in parallel on several instances of this provider, which share no memory, so
//! the lock is the server's: each write first takes a transaction-scoped advisory lock of the
//! database it runs in, and the writes of one database run one at a time, each seeing the last
//! one's result. Writes made by others, which take no such lock, can still collide: those are
//! retried, the whole transaction again.

use std::time::Duration;

use plinth_sdk::ProviderError;

use crate::server::Session;
use crate::wire::DbError;

/// The first key of the advisory lock ("plnt"): other applications' advisory locks on the
/// same database are unlikely to use it. Advisory locks are scoped by database already.
const LOCK_CLASS: i32 = 0x706c_6e74;

/// Attempts of a write that collides with someone else's; the waits between them double from
/// [`FIRST_WAIT`], 2.5 s in all.
const ATTEMPTS: u32 = 8;
const FIRST_WAIT: Duration = Duration::from_millis(20);

/// Runs `sql` (statements that may run in a transaction) as one transaction holding the
/// database's catalog lock; a failure says it happened while `doing`.
pub(crate) fn write(session: &mut Session, doing: &str, sql: &str) -> Result<(), ProviderError> {
    // A simple query of several statements is one implicit transaction: the lock is held
    // until it commits, so the next writer reads the committed rows.
    let locked = format!("SELECT pg_advisory_xact_lock({LOCK_CLASS}, 0);{sql}");
    let mut wait = FIRST_WAIT;
    for attempt in 1.. {
        match session.execute(&locked) {
            Ok(()) => return Ok(()),
            Err(e) if attempt < ATTEMPTS && collided(&e) => {
                std::thread::sleep(wait);
                wait *= 2;
            }
            Err(e) => return Err(ProviderError::Failed(format!("{doing}: {e}"))),
        }
    }
    unreachable!("the last attempt returns")
}

/// Whether `error` is a collision with a concurrent transaction, which the same statements
/// run again would not meet.
fn collided(error: &DbError) -> bool {
    match error {
        DbError::Server { code, message } => match code.as_str() {
            // internal_error: the catalog row changed under the statement.
            "XX000" => {
                message.contains("tuple concurrently updated")
                    || message.contains("tuple concurrently deleted")
            }
            // serialization_failure, deadlock_detected
            "40001" | "40P01" => true,
            _ => false,
        },
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(code: &str, message: &str) -> DbError {
        DbError::Server {
            code: code.to_owned(),
            message: message.to_owned(),
        }
    }

    #[test]
    fn only_collisions_are_retried() {
        assert!(collided(&server("XX000", "tuple concurrently updated")));
        assert!(collided(&server("40P01", "deadlock detected")));
        assert!(!collided(&server(
            "XX000",
            "cache lookup failed for role 1"
        )));
        assert!(!collided(&server("42704", "role \"x\" does not exist")));
    }
}

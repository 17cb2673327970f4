//! The database: a connection pool, migrated on start by the migrations embedded in the
//! binary (no database is needed to build it).

use std::time::Duration;

use sqlx::Connection;
use sqlx::postgres::{PgPool, PgPoolOptions};

/// How long a connection may sit in the pool before it is pinged again when taken.
const PING_IDLE_AFTER: Duration = Duration::from_secs(1);
/// How long a request waits for a connection: while the database is down, requests are
/// answered 503 (which clients retry) within seconds, not after sqlx's default 30 s.
const ACQUIRE_WITHIN: Duration = Duration::from_secs(3);
/// How long the first connection, made at start, may take.
const FIRST_CONNECTION_WITHIN: Duration = Duration::from_secs(10);

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

/// The schema this binary migrates databases to: its latest migration.
pub(crate) fn schema_version() -> i64 {
    MIGRATOR.iter().map(|m| m.version).max().unwrap_or(0)
}

/// Connects to `url` and brings its schema up to date. A database that cannot be reached is
/// an error at once, saying why (the pool would go on trying until its timeout).
pub async fn connect(url: &str) -> anyhow::Result<PgPool> {
    use anyhow::Context;
    let cannot = || format!("cannot connect to the database at {}", redacted(url));
    let first = tokio::time::timeout(FIRST_CONNECTION_WITHIN, sqlx::PgConnection::connect(url))
        .await
        .map_err(|_| {
            anyhow::anyhow!(
                "it did not answer within {} s",
                FIRST_CONNECTION_WITHIN.as_secs()
            )
        })
        .with_context(cannot)?
        .with_context(cannot)?;
    first.close().await.ok();
    let pool = PgPoolOptions::new()
        .max_connections(16)
        .acquire_timeout(ACQUIRE_WITHIN)
        // sqlx pings every connection it takes from the pool (and every one given back): a
        // round trip more per request, while an update sends several a millisecond. A
        // connection given back passed its ping then; one idle for longer is pinged again
        // before use (the database may have restarted meanwhile). One that died in between
        // fails its request with 503, which the client retries, and is closed.
        .test_before_acquire(false)
        .before_acquire(|conn, meta| {
            Box::pin(async move {
                if meta.idle_for > PING_IDLE_AFTER {
                    conn.ping().await?;
                }
                Ok(true)
            })
        })
        .connect(url)
        .await
        .with_context(cannot)?;
    MIGRATOR
        .run(&pool)
        .await
        .context("cannot migrate the database")?;
    Ok(pool)
}

/// The URL without its password, for messages.
fn redacted(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let credentials = &url[scheme + 3..at];
            let user = credentials.split(':').next().unwrap_or_default();
            format!("{}{user}:***{}", &url[..scheme + 3], &url[at..])
        }
        _ => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn passwords_never_reach_messages() {
        assert_eq!(
            super::redacted("postgres://plinth:hunter2@127.0.0.1:5432/db"),
            "postgres://plinth:***@127.0.0.1:5432/db"
        );
        assert_eq!(
            super::redacted("postgres://127.0.0.1/db"),
            "postgres://127.0.0.1/db"
        );
    }
}

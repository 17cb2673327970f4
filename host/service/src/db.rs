//! The database: a connection pool, migrated on start by the migrations embedded in the
//! binary (no database is needed to build it).

use std::ops::{Deref, DerefMut};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use sqlx::Connection;
use sqlx::postgres::{PgConnection, PgPool, PgPoolOptions};

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

/// Connections kept apart from the pool for the statement an update sends several of a
/// millisecond, storing a journal batch: the pool pings every connection given back to it (sqlx
/// 0.8 cannot be told not to), a round trip more to the database, and a wakeup of both sides,
/// for each batch. A connection taken here goes back without one, once its statement was
/// answered; one whose statement failed or was never answered (its request gone) is closed.
/// Like the pool's, one idle for longer than [`PING_IDLE_AFTER`] is pinged before use.
pub(crate) struct HotConnections {
    pool: PgPool,
    idle: Mutex<Vec<(PgConnection, Instant)>>,
}

/// The most connections kept apart: as many batches as an update has under way, for a few
/// updates at once.
const HOT_CONNECTIONS: usize = 4;

impl HotConnections {
    pub(crate) fn new(pool: PgPool) -> HotConnections {
        HotConnections {
            pool,
            idle: Mutex::default(),
        }
    }

    fn idle(&self) -> MutexGuard<'_, Vec<(PgConnection, Instant)>> {
        self.idle.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A connection kept apart, or one taken from the pool (its place there is freed).
    pub(crate) async fn take(&self) -> Result<HotConnection<'_>, sqlx::Error> {
        let idle = self.idle().pop();
        let conn = match idle {
            Some((mut conn, since)) if since.elapsed() > PING_IDLE_AFTER => {
                match conn.ping().await {
                    Ok(()) => conn,
                    Err(_) => self.pool.acquire().await?.detach(),
                }
            }
            Some((conn, _)) => conn,
            None => self.pool.acquire().await?.detach(),
        };
        Ok(HotConnection {
            conn: Some(conn),
            home: self,
        })
    }
}

/// A connection taken from [`HotConnections`]: [`HotConnection::answered`] gives it back.
pub(crate) struct HotConnection<'a> {
    conn: Option<PgConnection>,
    home: &'a HotConnections,
}

impl HotConnection<'_> {
    /// Gives the connection back, its statement answered: nothing of it is left to read.
    pub(crate) fn answered(mut self) {
        let conn = self.conn.take().expect("held until given back or dropped");
        let mut idle = self.home.idle();
        if idle.len() < HOT_CONNECTIONS {
            idle.push((conn, Instant::now()));
        } else {
            drop(idle);
            close(conn);
        }
    }
}

impl Deref for HotConnection<'_> {
    type Target = PgConnection;
    fn deref(&self) -> &PgConnection {
        self.conn
            .as_ref()
            .expect("held until given back or dropped")
    }
}

impl DerefMut for HotConnection<'_> {
    fn deref_mut(&mut self) -> &mut PgConnection {
        self.conn
            .as_mut()
            .expect("held until given back or dropped")
    }
}

impl Drop for HotConnection<'_> {
    /// Not given back: its statement failed, or was left halfway. It may have more to read.
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            close(conn);
        }
    }
}

/// Closes `conn` off the request's path.
fn close(conn: PgConnection) {
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        runtime.spawn(async move { conn.close().await.ok() });
    }
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
    use super::*;

    async fn backend(conn: &mut PgConnection) -> i32 {
        sqlx::query_scalar("SELECT pg_backend_pid()")
            .fetch_one(conn)
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn a_hot_connection_goes_back_once_answered_and_never_otherwise() {
        let server = plinth_test_postgres::Postgres::shared().unwrap();
        server.create_database("hot_connections").unwrap();
        let pool = PgPoolOptions::new()
            .max_connections(1)
            .connect(&server.url("hot_connections"))
            .await
            .unwrap();
        let hot = HotConnections::new(pool.clone());

        let mut taken = hot.take().await.unwrap();
        let first = backend(&mut taken).await;
        // Taken apart: the pool's one place is free for others meanwhile.
        let mut pooled = pool.acquire().await.unwrap();
        assert_ne!(backend(&mut pooled).await, first);
        drop(pooled);
        taken.answered();
        let mut again = hot.take().await.unwrap();
        assert_eq!(
            backend(&mut again).await,
            first,
            "given back, it is taken again"
        );
        // Dropped without its answer read: it may have more to read, and is not used again.
        drop(again);
        let mut next = hot.take().await.unwrap();
        assert_ne!(backend(&mut next).await, first);
        next.answered();

        // No more are kept than a few updates' batches under way need.
        let mut many = Vec::new();
        for _ in 0..HOT_CONNECTIONS + 2 {
            many.push(hot.take().await.unwrap());
        }
        many.into_iter().for_each(HotConnection::answered);
        assert_eq!(hot.idle().len(), HOT_CONNECTIONS);
    }

    #[test]
    fn passwords_never_reach_messages() {
        assert_eq!(
            redacted("postgres://plinth:hunter2@127.0.0.1:5432/db"),
            "postgres://plinth:***@127.0.0.1:5432/db"
        );
        assert_eq!(
            redacted("postgres://127.0.0.1/db"),
            "postgres://127.0.0.1/db"
        );
    }
}

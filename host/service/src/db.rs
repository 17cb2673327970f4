//! The database: a connection pool, migrated on start by the migrations embedded in the
//! binary (no database is needed to build it).

use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use sqlx::Connection;
use sqlx::pool::PoolConnection;
use sqlx::postgres::{PgConnection, PgPool, PgPoolOptions, Postgres};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

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
    // The database sees these and at most `HOT_CONNECTIONS` more.
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
/// Like the pool's, one idle for longer than [`PING_IDLE_AFTER`] is pinged before use. At most
/// [`HOT_CONNECTIONS`] are apart at once, in use or idle; beyond them a request takes a
/// connection from the pool as any other does.
pub(crate) struct HotConnections {
    pool: PgPool,
    /// One per connection apart, held as long as it is open.
    places: Arc<Semaphore>,
    idle: Mutex<Vec<(Apart, Instant)>>,
}

/// A connection kept apart, and its place.
struct Apart {
    conn: PgConnection,
    _place: OwnedSemaphorePermit,
}

/// The most connections kept apart: the batches under way of a few updates at once. The
/// database sees at most this many beside the pool's.
const HOT_CONNECTIONS: usize = 8;

impl HotConnections {
    pub(crate) fn new(pool: PgPool) -> HotConnections {
        HotConnections {
            pool,
            places: Arc::new(Semaphore::new(HOT_CONNECTIONS)),
            idle: Mutex::default(),
        }
    }

    fn idle(&self) -> MutexGuard<'_, Vec<(Apart, Instant)>> {
        self.idle.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A connection kept apart, or one taken from the pool into a free place; a pooled one if
    /// every place is taken.
    pub(crate) async fn take(&self) -> Result<HotConnection<'_>, sqlx::Error> {
        let idle = self.idle().pop();
        let apart = match idle {
            Some((mut apart, since)) if since.elapsed() > PING_IDLE_AFTER => {
                match apart.conn.ping().await {
                    Ok(()) => Some(apart),
                    Err(_) => {
                        // Gone: its place is free for another.
                        drop(apart);
                        self.open().await?
                    }
                }
            }
            Some((apart, _)) => Some(apart),
            None => self.open().await?,
        };
        let conn = match apart {
            Some(apart) => Taken::Apart(apart),
            None => Taken::Pooled(self.pool.acquire().await?),
        };
        Ok(HotConnection {
            conn: Some(conn),
            home: self,
        })
    }

    /// A connection taken from the pool into a free place, if there is one.
    async fn open(&self) -> Result<Option<Apart>, sqlx::Error> {
        let Ok(place) = self.places.clone().try_acquire_owned() else {
            return Ok(None);
        };
        let conn = self.pool.acquire().await?.detach();
        Ok(Some(Apart {
            conn,
            _place: place,
        }))
    }
}

/// A connection taken from [`HotConnections`]: [`HotConnection::answered`] gives it back.
pub(crate) struct HotConnection<'a> {
    conn: Option<Taken>,
    home: &'a HotConnections,
}

enum Taken {
    Apart(Apart),
    /// Every place was taken: it goes back to the pool as any other.
    Pooled(PoolConnection<Postgres>),
}

impl HotConnection<'_> {
    /// Gives the connection back, its statement answered: nothing of it is left to read.
    pub(crate) fn answered(mut self) {
        if let Some(Taken::Apart(apart)) = self.conn.take() {
            self.home.idle().push((apart, Instant::now()));
        }
    }
}

impl Deref for HotConnection<'_> {
    type Target = PgConnection;
    fn deref(&self) -> &PgConnection {
        match self
            .conn
            .as_ref()
            .expect("held until given back or dropped")
        {
            Taken::Apart(apart) => &apart.conn,
            Taken::Pooled(conn) => conn,
        }
    }
}

impl DerefMut for HotConnection<'_> {
    fn deref_mut(&mut self) -> &mut PgConnection {
        match self
            .conn
            .as_mut()
            .expect("held until given back or dropped")
        {
            Taken::Apart(apart) => &mut apart.conn,
            Taken::Pooled(conn) => conn,
        }
    }
}

impl Drop for HotConnection<'_> {
    /// Not given back: its statement failed, or was left halfway. It may have more to read: one
    /// kept apart is closed (its place freed once it is), a pooled one goes back to the pool,
    /// which pings it.
    fn drop(&mut self) {
        if let Some(Taken::Apart(apart)) = self.conn.take() {
            close(apart);
        }
    }
}

/// Closes a connection kept apart off the request's path, then frees its place.
fn close(Apart { conn, _place }: Apart) {
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        runtime.spawn(async move {
            conn.close().await.ok();
            drop(_place);
        });
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
            .max_connections(2)
            .connect(&server.url("hot_connections"))
            .await
            .unwrap();
        let hot = HotConnections::new(pool.clone());

        let mut taken = hot.take().await.unwrap();
        let first = backend(&mut taken).await;
        // Taken apart: the pool's places are free for others meanwhile.
        let mut pooled = [pool.acquire().await.unwrap(), pool.acquire().await.unwrap()];
        assert_ne!(backend(&mut pooled[0]).await, first);
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

        // No more are apart than their places: beyond them, the pool's connections are used.
        let mut many = Vec::new();
        for _ in 0..HOT_CONNECTIONS + 2 {
            many.push(hot.take().await.unwrap());
        }
        let apart = |c: &HotConnection| matches!(c.conn, Some(Taken::Apart(_)));
        assert!(many[..HOT_CONNECTIONS].iter().all(apart));
        assert!(!many[HOT_CONNECTIONS..].iter().any(apart));
        many.into_iter().for_each(HotConnection::answered);
        assert_eq!(hot.idle().len(), HOT_CONNECTIONS);
        assert_eq!(
            hot.places.available_permits(),
            0,
            "the idle ones keep their places"
        );
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

//! The database: a connection pool, migrated on start by the migrations embedded in the
//! binary (no database is needed to build it).

use sqlx::postgres::{PgPool, PgPoolOptions};

/// Connects to `url` and brings its schema up to date.
pub async fn connect(url: &str) -> anyhow::Result<PgPool> {
    use anyhow::Context;
    let pool = PgPoolOptions::new()
        .max_connections(16)
        .connect(url)
        .await
        .with_context(|| format!("cannot connect to the database at {}", redacted(url)))?;
    sqlx::migrate!("./migrations")
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

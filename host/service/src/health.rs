//! Readiness: whether this replica can do its work, its database reachable and migrated to the
//! schema this binary expects, answered within seconds even while the database is down.

use std::time::Duration;

use axum::Json;
use axum::extract::State;
use sqlx::PgPool;

use plinth_state::protocol::Health;

use crate::error::ApiError;

/// The longest a readiness check waits for the database.
const CHECK_WITHIN: Duration = Duration::from_secs(2);

/// 200 when the database answers and holds this binary's schema; 503 otherwise, saying why.
pub(crate) async fn ready(State(pool): State<PgPool>) -> Result<Json<Health>, ApiError> {
    let expected = crate::db::schema_version();
    let query = sqlx::query_as::<_, (Option<i64>,)>(
        "SELECT max(version) FROM _sqlx_migrations WHERE success",
    )
    .fetch_one(&pool);
    let (found,) = match tokio::time::timeout(CHECK_WITHIN, query).await {
        Ok(Ok(found)) => found,
        Ok(Err(e)) => {
            return Err(ApiError::Unavailable(format!(
                "not ready: the database does not answer ({e})"
            )));
        }
        Err(_) => {
            return Err(ApiError::Unavailable(format!(
                "not ready: the database did not answer within {} s",
                CHECK_WITHIN.as_secs()
            )));
        }
    };
    if found != Some(expected) {
        return Err(ApiError::Unavailable(format!(
            "not ready: the database's schema is at migration {}, this replica's at {expected}: \
             restart it, or the replicas of the other version",
            found.map_or("none".to_owned(), |v| v.to_string())
        )));
    }
    Ok(Json(Health {
        schema: Some(expected),
        status: "ready".to_owned(),
    }))
}

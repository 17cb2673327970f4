//! Updates and their leases. Whether a stack is free is decided by the database alone (the
//! partial unique index on running updates), in one transaction per request.

use serde::Serialize;
use sqlx::PgPool;
use uuid::Uuid;

use crate::auth::{User, digest, new_token};
use crate::error::ApiError;

/// A begun update, as its client gets it.
#[derive(Debug, Serialize)]
pub(crate) struct Begun {
    pub update_id: Uuid,
    /// Shown once: the client acts on the update with it.
    pub lease_token: String,
    /// Seconds since the Unix epoch.
    pub lease_expires: i64,
    /// How long a lease lasts; the client renews at half of it.
    pub lease_seconds: f64,
}

/// Takes the stack for a new update of `kind`, unless another holds it. A running update whose
/// lease expired gives the stack up first.
pub(crate) async fn begin(
    pool: &PgPool,
    user: &User,
    stack_id: i64,
    stack: &str,
    kind: &str,
    lease_seconds: f64,
) -> Result<Begun, ApiError> {
    let mut tx = pool.begin().await?;
    sqlx::query(
        "UPDATE updates SET status = 'expired', ended = now()
         WHERE stack_id = $1 AND status = 'running' AND lease_expires < now()",
    )
    .bind(stack_id)
    .execute(&mut *tx)
    .await?;
    let update_id = Uuid::new_v4();
    let lease_token = new_token();
    let inserted: Option<(i64,)> = sqlx::query_as(
        "INSERT INTO updates (id, stack_id, user_id, kind, status, lease_digest, lease_expires)
         VALUES ($1, $2, $3, $4, 'running', $5, now() + make_interval(secs => $6))
         ON CONFLICT (stack_id) WHERE status = 'running' DO NOTHING
         RETURNING EXTRACT(EPOCH FROM lease_expires)::BIGINT",
    )
    .bind(update_id)
    .bind(stack_id)
    .bind(user.id)
    .bind(kind)
    .bind(digest(&lease_token))
    .bind(lease_seconds)
    .fetch_optional(&mut *tx)
    .await?;
    let Some((lease_expires,)) = inserted else {
        tx.rollback().await?;
        return Err(holder(pool, stack_id, stack).await);
    };
    tx.commit().await?;
    Ok(Begun {
        update_id,
        lease_token,
        lease_expires,
        lease_seconds,
    })
}

/// The error naming who holds the stack.
async fn holder(pool: &PgPool, stack_id: i64, stack: &str) -> ApiError {
    let holder: Result<Option<(String, String, i64, i64)>, _> = sqlx::query_as(
        "SELECT usr.name, upd.kind, EXTRACT(EPOCH FROM upd.started)::BIGINT,
                EXTRACT(EPOCH FROM upd.lease_expires)::BIGINT
         FROM updates upd JOIN users usr ON usr.id = upd.user_id
         WHERE upd.stack_id = $1 AND upd.status = 'running'",
    )
    .bind(stack_id)
    .fetch_optional(pool)
    .await;
    match holder {
        Ok(Some((user, kind, started, lease_expires))) => ApiError::Busy {
            stack: stack.to_owned(),
            user,
            kind,
            started,
            lease_expires,
        },
        // It ended between the two queries: the caller may try again at once.
        Ok(None) => ApiError::Conflict(format!(
            "stack `{stack}` was being updated a moment ago; try again"
        )),
        Err(e) => e.into(),
    }
}

/// Why a request with `lease` on update `id` may not act on it: an unknown update, a token of
/// another update (401), or a lease that is gone (403).
pub(crate) async fn refused(pool: &PgPool, id: Uuid, lease: &str) -> ApiError {
    let row: Result<Option<(Vec<u8>, String)>, _> =
        sqlx::query_as("SELECT lease_digest, status FROM updates WHERE id = $1")
            .bind(id)
            .fetch_optional(pool)
            .await;
    match row {
        Err(e) => e.into(),
        Ok(None) => ApiError::NotFound(format!("there is no update {id}")),
        Ok(Some((expected, _))) if expected != digest(lease) => ApiError::Unauthorized(format!(
            "the lease token is not the one of update {id}: one update's token acts on no other"
        )),
        Ok(Some((_, status))) => ApiError::LeaseLost(format!(
            "update {id} no longer holds its stack (it is {status}): it was cancelled, or its \
             lease expired and another update may have taken the stack"
        )),
    }
}

/// Extends the lease of a running update; returns the new expiry.
pub(crate) async fn renew(
    pool: &PgPool,
    id: Uuid,
    lease: &str,
    lease_seconds: f64,
) -> Result<i64, ApiError> {
    let renewed: Option<(i64,)> = sqlx::query_as(
        "UPDATE updates SET lease_expires = now() + make_interval(secs => $3)
         WHERE id = $1 AND lease_digest = $2 AND status = 'running' AND lease_expires >= now()
         RETURNING EXTRACT(EPOCH FROM lease_expires)::BIGINT",
    )
    .bind(id)
    .bind(digest(lease))
    .bind(lease_seconds)
    .fetch_optional(pool)
    .await?;
    match renewed {
        Some((expires,)) => Ok(expires),
        None => Err(refused(pool, id, lease).await),
    }
}

/// Ends an update with `result`. Idempotent: completing it again the same way succeeds, so a
/// client whose first answer was lost may retry.
pub(crate) async fn complete(
    pool: &PgPool,
    id: Uuid,
    lease: &str,
    result: &str,
) -> Result<(), ApiError> {
    if !matches!(result, "succeeded" | "failed") {
        return Err(ApiError::BadRequest(format!(
            "an update ends `succeeded` or `failed`, not `{result}`"
        )));
    }
    let ended = sqlx::query(
        "UPDATE updates SET status = $3, ended = now()
         WHERE id = $1 AND lease_digest = $2 AND status = 'running' AND lease_expires >= now()",
    )
    .bind(id)
    .bind(digest(lease))
    .bind(result)
    .execute(pool)
    .await?;
    if ended.rows_affected() == 1 {
        return Ok(());
    }
    let already: Option<(String,)> =
        sqlx::query_as("SELECT status FROM updates WHERE id = $1 AND lease_digest = $2")
            .bind(id)
            .bind(digest(lease))
            .fetch_optional(pool)
            .await?;
    match already {
        Some((status,)) if status == result => Ok(()),
        _ => Err(refused(pool, id, lease).await),
    }
}

/// Ends the stack's running update at once (`plinth cancel`); returns it, if there was one.
pub(crate) async fn cancel(pool: &PgPool, stack_id: i64) -> Result<Option<Uuid>, ApiError> {
    let cancelled: Option<(Uuid,)> = sqlx::query_as(
        "UPDATE updates SET status = 'cancelled', ended = now()
         WHERE stack_id = $1 AND status = 'running' RETURNING id",
    )
    .bind(stack_id)
    .fetch_optional(pool)
    .await?;
    Ok(cancelled.map(|(id,)| id))
}

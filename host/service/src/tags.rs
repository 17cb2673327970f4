//! Stack tags (`GET stacks/P/S/tags`, `PUT` and `DELETE stacks/P/S/tags/NAME`), checked before
//! they are stored.

use plinth_state::tags::{self, StackTags, TAGS_MAX, TagError};
use sqlx::PgPool;

use crate::error::ApiError;

fn refused(error: TagError) -> ApiError {
    ApiError::BadRequest(error.to_string())
}

/// The tags of stack `stack_id`.
pub(crate) async fn list(pool: &PgPool, stack_id: i64) -> Result<StackTags, ApiError> {
    let rows: Vec<(String, String)> =
        sqlx::query_as("SELECT name, value FROM stack_tags WHERE stack_id = $1")
            .bind(stack_id)
            .fetch_all(pool)
            .await?;
    Ok(rows.into_iter().collect())
}

/// The tags of each of `stack_ids`, by stack id.
pub(crate) async fn of_stacks(
    pool: &PgPool,
    stack_ids: &[i64],
) -> Result<std::collections::HashMap<i64, StackTags>, ApiError> {
    let rows: Vec<(i64, String, String)> =
        sqlx::query_as("SELECT stack_id, name, value FROM stack_tags WHERE stack_id = ANY($1)")
            .bind(stack_ids)
            .fetch_all(pool)
            .await?;
    let mut tags = std::collections::HashMap::<i64, StackTags>::new();
    for (id, name, value) in rows {
        tags.entry(id).or_default().insert(name, value);
    }
    Ok(tags)
}

/// Sets tag `name` of stack `stack_id` to `value`.
pub(crate) async fn set(
    pool: &PgPool,
    stack_id: i64,
    name: &str,
    value: &str,
) -> Result<(), ApiError> {
    tags::check_name(name).map_err(refused)?;
    tags::check_value(name, value).map_err(refused)?;
    let mut tx = pool.begin().await?;
    // Locking the stack's row counts its tags without a race with another request's.
    sqlx::query("SELECT id FROM stacks WHERE id = $1 FOR UPDATE")
        .bind(stack_id)
        .execute(&mut *tx)
        .await?;
    let (others,): (i64,) =
        sqlx::query_as("SELECT count(*) FROM stack_tags WHERE stack_id = $1 AND name <> $2")
            .bind(stack_id)
            .bind(name)
            .fetch_one(&mut *tx)
            .await?;
    if others as usize >= TAGS_MAX {
        return Err(refused(TagError::TooMany));
    }
    sqlx::query(
        "INSERT INTO stack_tags (stack_id, name, value) VALUES ($1, $2, $3)
         ON CONFLICT (stack_id, name) DO UPDATE SET value = EXCLUDED.value",
    )
    .bind(stack_id)
    .bind(name)
    .bind(value)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(())
}

/// Removes tag `name` of stack `stack_id`; whether it had it.
pub(crate) async fn remove(pool: &PgPool, stack_id: i64, name: &str) -> Result<bool, ApiError> {
    tags::check_name(name).map_err(refused)?;
    let removed = sqlx::query("DELETE FROM stack_tags WHERE stack_id = $1 AND name = $2")
        .bind(stack_id)
        .bind(name)
        .execute(pool)
        .await?;
    Ok(removed.rows_affected() > 0)
}

//! Renaming a stack (`POST stacks/P/S/rename`): its row takes the new name, so its history,
//! logs, keys and tags follow it; its latest checkpoint is rewritten with every URN in the new
//! stack (secrets stay sealed: the service holds no key); tokens scoped to the stack follow it,
//! so that none comes to cover a new stack given the old name. Older versions keep the name
//! they were written under: `stack rollback` renames the state it reads back.

use std::path::PathBuf;

use plinth_engine::names::StackName;
use sqlx::PgPool;

use crate::audit::{self, Action, Actor};
use crate::checks;
use crate::error::ApiError;
use crate::policy_packs;
use crate::versions::{StackKey, latest};

/// Renames `stack` to `to`, refusing while an update holds it or left it unfinished, and if
/// a stack of the project is named `to`.
pub(crate) async fn rename(
    pool: &PgPool,
    actor: &Actor,
    stack: &StackKey,
    to: &str,
) -> Result<(), ApiError> {
    checks::name("stack", to)?;
    let bad = |name: &str, e: plinth_engine::names::NameError| {
        ApiError::BadRequest(format!("stack `{}`: {e}", checks::shown(name)))
    };
    let from_name = StackName::new(&stack.name).map_err(|e| bad(&stack.name, e))?;
    let to_name = StackName::new(to).map_err(|e| bad(to, e))?;
    if from_name == to_name {
        return Err(ApiError::BadRequest(format!(
            "stack `{to}` has that name already"
        )));
    }
    let mut tx = pool.begin().await?;
    // Locking the stack's row makes an update that begins meanwhile wait for the outcome.
    let live: Option<(i64,)> =
        sqlx::query_as("SELECT id FROM stacks WHERE id = $1 AND removed IS NULL FOR UPDATE")
            .bind(stack.id)
            .fetch_optional(&mut *tx)
            .await?;
    if live.is_none() {
        return Err(ApiError::NotFound(format!(
            "stack `{}` does not exist",
            stack.name
        )));
    }
    // An update left running has a journal in the old stack's URNs, which the next update
    // would fold into the renamed state: it must end first, lease expired or not.
    let running: Option<(String, String, bool)> = sqlx::query_as(
        "SELECT usr.name, u.kind, u.lease_expires < now() FROM updates u
         JOIN users usr ON usr.id = u.user_id
         WHERE u.stack_id = $1 AND u.status = 'running'",
    )
    .bind(stack.id)
    .fetch_optional(&mut *tx)
    .await?;
    if let Some((user, kind, expired)) = running {
        let how = match expired {
            true => "left unfinished by",
            false => "being updated by",
        };
        return Err(ApiError::Conflict(format!(
            "stack `{}` is {how} {user} ({kind}); wait for it, or `plinth cancel` it, then \
             rename it",
            stack.name
        )));
    }
    let taken: Option<(i64,)> = sqlx::query_as(
        "SELECT id FROM stacks WHERE project = $1 AND name = $2 AND removed IS NULL",
    )
    .bind(&stack.project)
    .bind(to)
    .fetch_optional(&mut *tx)
    .await?;
    if taken.is_some() {
        return Err(ApiError::Conflict(format!("stack `{to}` already exists")));
    }
    // Packs apply by name: a rename must not take the stack out of one's reach.
    let before = policy_packs::applying(&mut tx, &stack.project, &stack.name).await?;
    let after = policy_packs::applying(&mut tx, &stack.project, to).await?;
    let lost: Vec<String> = (before.iter())
        .filter(|p| {
            !after
                .iter()
                .any(|a| a.name == p.name && a.digest == p.digest)
        })
        .map(|p| format!("`{}`", checks::shown(&p.name)))
        .collect();
    if !lost.is_empty() {
        return Err(ApiError::Conflict(format!(
            "renaming stack `{project}/{from}` to `{project}/{to}` would take it out of the \
             policy pack(s) {lost} the service enforces on it; an administrator adds the pack \
             for the new name first (`plinth serve policy add PACK --stacks {project}/{to}`), \
             then rename it",
            project = stack.project,
            from = stack.name,
            lost = lost.join(", "),
        )));
    }
    let (version, checkpoint) = latest(&mut tx, stack.id).await?;
    if let Some(bytes) = checkpoint {
        let origin = PathBuf::from(format!("service:{}/{}", stack.project, stack.name));
        let renamed = tokio::task::spawn_blocking(move || {
            plinth_state::renamed_checkpoint(&bytes, &from_name, &to_name, &origin)
        })
        .await
        .map_err(|e| ApiError::Internal(format!("renaming the state: {e}")))?
        .map_err(|e| ApiError::Unrebuildable(e.to_string()))?;
        // The latest version holds the renamed checkpoint itself, whichever held it before.
        sqlx::query(
            "UPDATE versions SET checkpoint = $3, checkpoint_of = NULL
             WHERE stack_id = $1 AND version = $2",
        )
        .bind(stack.id)
        .bind(version)
        .bind(renamed)
        .execute(&mut *tx)
        .await?;
    }
    sqlx::query("UPDATE stacks SET name = $2 WHERE id = $1")
        .bind(stack.id)
        .bind(to)
        .execute(&mut *tx)
        .await?;
    sqlx::query("UPDATE tokens SET stack = $3 WHERE project = $1 AND stack = $2")
        .bind(&stack.project)
        .bind(&stack.name)
        .bind(to)
        .execute(&mut *tx)
        .await?;
    let on = Some((stack.project.as_str(), stack.name.as_str()));
    let detail = format!("renamed to `{to}`");
    audit::record(&mut tx, actor, Action::StackRenamed, on, &detail).await?;
    tx.commit().await?;
    Ok(())
}

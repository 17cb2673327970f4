//! `plinth serve stack repair`: frees a stack an update holds and cannot end, whatever its
//! journal holds. The update is ended as failed, what its journal rebuilds becomes a version (as
//! far as it rebuilds), and every batch is kept for inspection.

use anyhow::{Context, bail};
use sqlx::PgPool;
use uuid::Uuid;

use crate::audit::{self, Action, Actor};
use crate::versions::{self, Ended, StackKey};

/// What a repair did.
#[derive(Debug)]
pub struct Repaired {
    /// The update it ended, if one held the stack.
    pub ended: Option<Uuid>,
    /// Whether a journal could not be rebuilt whole (its version holds what could be).
    pub salvaged: bool,
}

/// Ends the update holding stack `project/stack` (if any) as failed and folds what it, and any
/// update that ended without being folded, journaled.
pub async fn repair(pool: &PgPool, project: &str, stack: &str) -> anyhow::Result<Repaired> {
    crate::checks::name("project", project).map_err(|e| anyhow::anyhow!("{e}"))?;
    crate::checks::name("stack", stack).map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut tx = pool.begin().await?;
    // Locked, so that no update begins meanwhile.
    let found: Option<(i64,)> = sqlx::query_as(
        "SELECT id FROM stacks WHERE project = $1 AND name = $2 AND removed IS NULL FOR UPDATE",
    )
    .bind(project)
    .bind(stack)
    .fetch_optional(&mut *tx)
    .await?;
    let Some((id,)) = found else {
        bail!("there is no stack {project}/{stack} in this database");
    };
    let key = StackKey {
        id,
        project: project.to_owned(),
        name: stack.to_owned(),
    };
    let running: Option<(Uuid, String, i64)> = sqlx::query_as(
        "UPDATE updates SET status = 'failed', ended = now()
         WHERE stack_id = $1 AND status = 'running'
         RETURNING id, kind, EXTRACT(EPOCH FROM started)::BIGINT",
    )
    .bind(id)
    .fetch_optional(&mut *tx)
    .await?;
    let mut salvaged = false;
    if let Some((update, kind, started)) = &running {
        let ended = Ended {
            kind,
            started: *started,
            note: "ended by `plinth serve stack repair`",
        };
        salvaged = versions::fold_ending(&mut tx, &key, *update, ended)
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))
            .with_context(|| format!("recording what update {update} journaled"))?;
    }
    versions::fold_abandoned(&mut tx, &key)
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))
        .context("recording what earlier updates journaled")?;
    let detail = match &running {
        Some((update, kind, _)) if salvaged => {
            format!("ended update {update} ({kind}) as failed; its journal rebuilt in part")
        }
        Some((update, kind, _)) => format!("ended update {update} ({kind}) as failed"),
        None => "no update held it".to_owned(),
    };
    let on = Some((project, stack));
    audit::record(&mut tx, &Actor::cli(), Action::StackRepaired, on, &detail)
        .await
        .context("recording the repair in the audit log")?;
    tx.commit().await?;
    Ok(Repaired {
        ended: running.map(|(update, ..)| update),
        salvaged,
    })
}

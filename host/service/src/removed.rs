//! Removed stacks: `stack rm` only marks a stack removed, so that a mistaken removal can be
//! undone. A removed stack keeps its versions, journal, events and data key, is invisible to the
//! API, and gives its name up to a new stack; an administrator lists and restores it
//! (`plinth serve stack ls --removed`, `plinth serve stack restore`) until the service purges
//! it, once it has been removed for longer than the retention period.

use std::time::Duration;

use anyhow::{Context, bail};
use sqlx::PgPool;

use crate::audit::{self, Action, Actor};

/// A stack, as `plinth serve stack ls [--removed]` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemovedStack {
    /// What tells apart stacks of one name removed at different times (`restore --id`).
    pub id: i64,
    pub project: String,
    pub name: String,
    /// When it was removed, in UTC; empty for a live stack.
    pub removed: String,
    /// Who removed it (the user of the token), if that user still exists.
    pub removed_by: Option<String>,
    /// How many versions it holds.
    pub versions: i64,
}

type Row = (i64, String, String, String, Option<String>, i64);

const COLUMNS: &str = "s.id, s.project, s.name, \
     COALESCE(to_char(s.removed AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS'), ''), u.name, \
     (SELECT count(*) FROM versions v WHERE v.stack_id = s.id)";

fn from_row((id, project, name, removed, removed_by, versions): Row) -> RemovedStack {
    RemovedStack {
        id,
        project,
        name,
        removed,
        removed_by,
        versions,
    }
}

fn check_names(project: &str, stack: Option<&str>) -> anyhow::Result<()> {
    crate::checks::name("project", project).map_err(|e| anyhow::anyhow!("{e}"))?;
    if let Some(stack) = stack {
        crate::checks::name("stack", stack).map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    Ok(())
}

/// The removed stacks not purged yet (`removed`), oldest removal first, or else the live ones
/// by name (their `removed` empty); of `project` only, if given.
pub async fn list_stacks(
    pool: &PgPool,
    project: Option<&str>,
    removed: bool,
) -> anyhow::Result<Vec<RemovedStack>> {
    if let Some(project) = project {
        check_names(project, None)?;
    }
    let rows: Vec<Row> = sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM stacks s LEFT JOIN users u ON u.id = s.removed_by
         WHERE (s.removed IS NOT NULL) = $2 AND ($1::text IS NULL OR s.project = $1)
         ORDER BY s.removed, s.project, s.name, s.id"
    ))
    .bind(project)
    .bind(removed)
    .fetch_all(pool)
    .await
    .context("cannot list the removed stacks")?;
    Ok(rows.into_iter().map(from_row).collect())
}

/// Brings removed stack `project/stack` back (the one with `id`, if several of that name were
/// removed). Refused while a live stack holds its name: restoring it would take that name.
pub async fn restore(
    pool: &PgPool,
    project: &str,
    stack: &str,
    id: Option<i64>,
) -> anyhow::Result<RemovedStack> {
    check_names(project, Some(stack))?;
    let mut tx = pool.begin().await?;
    let found: Vec<Row> = sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM stacks s LEFT JOIN users u ON u.id = s.removed_by
         WHERE s.removed IS NOT NULL AND s.project = $1 AND s.name = $2
           AND ($3::bigint IS NULL OR s.id = $3)
         ORDER BY s.removed, s.id FOR UPDATE OF s"
    ))
    .bind(project)
    .bind(stack)
    .bind(id)
    .fetch_all(&mut *tx)
    .await?;
    let chosen = match (found.len(), id) {
        (0, Some(id)) => bail!(
            "there is no removed stack {project}/{stack} with id {id}: \
             `plinth serve stack ls --removed` lists them"
        ),
        (0, None) => bail!(
            "there is no removed stack {project}/{stack} (a removed stack is kept for the \
             retention period, then purged): `plinth serve stack ls --removed` lists them"
        ),
        (1, _) => from_row(found.into_iter().next().expect("one row")),
        _ => {
            let ids: Vec<String> = (found.into_iter().map(from_row))
                .map(|s| format!("{} (removed {})", s.id, s.removed))
                .collect();
            bail!(
                "several removed stacks are named {project}/{stack}: choose one with --id \
                 ({})",
                ids.join(", ")
            )
        }
    };
    let live: Option<(i64,)> = sqlx::query_as(
        "SELECT id FROM stacks WHERE project = $1 AND name = $2 AND removed IS NULL FOR UPDATE",
    )
    .bind(project)
    .bind(stack)
    .fetch_optional(&mut *tx)
    .await?;
    if live.is_some() {
        bail!(
            "a stack {project}/{stack} exists (created after this one was removed), and two \
             stacks cannot share a name: remove it first (`plinth stack rm {stack}`; it is kept \
             and restorable too), then restore this one"
        );
    }
    // The unique index of live names settles a stack created meanwhile: this fails, whole.
    sqlx::query("UPDATE stacks SET removed = NULL, removed_by = NULL WHERE id = $1")
        .bind(chosen.id)
        .execute(&mut *tx)
        .await
        .with_context(|| format!("cannot restore {project}/{stack}: its name was taken"))?;
    let detail = format!("stack id {}, removed {}", chosen.id, chosen.removed);
    let on = Some((project, stack));
    audit::record(&mut tx, &Actor::cli(), Action::StackRestored, on, &detail)
        .await
        .context("recording the restore in the audit log")?;
    tx.commit().await?;
    Ok(chosen)
}

/// Deletes, for good, the stacks removed longer than `retention` ago, with everything they
/// held; returns how many.
pub async fn purge_removed(pool: &PgPool, retention: Duration) -> anyhow::Result<u64> {
    let mut tx = pool.begin().await?;
    let purged: Vec<(i64, String, String)> = sqlx::query_as(
        "DELETE FROM stacks
         WHERE removed IS NOT NULL AND removed <= now() - make_interval(secs => $1)
         RETURNING id, project, name",
    )
    .bind(retention.as_secs_f64())
    .fetch_all(&mut *tx)
    .await
    .context("cannot purge the removed stacks")?;
    for (id, project, stack) in &purged {
        let on = Some((project.as_str(), stack.as_str()));
        let detail = format!("stack id {id}, removed longer ago than the retention");
        audit::record(&mut tx, &Actor::cli(), Action::StackPurged, on, &detail)
            .await
            .context("recording the purge in the audit log")?;
    }
    tx.commit().await?;
    Ok(purged.len() as u64)
}

/// Purges every `every` for as long as the service runs; a failure is logged and tried again
/// at the next tick.
pub async fn purge_periodically(pool: PgPool, retention: Duration, every: Duration) {
    let mut ticks = tokio::time::interval(every);
    // The first tick is at once: the purge at start, which `serve` ran already.
    ticks.tick().await;
    loop {
        ticks.tick().await;
        match purge_removed(&pool, retention).await {
            Ok(0) => {}
            Ok(n) => tracing::info!("purged {n} stacks removed more than {retention:?} ago"),
            Err(e) => tracing::warn!("{e:#}"),
        }
    }
}

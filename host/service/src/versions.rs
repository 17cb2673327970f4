//! The versions of a stack's state. A new version is rebuilt from the latest one and the
//! journal batches an update sent since its last phase, by the backend crate's replay (the same
//! code the file backend recovers with), so the service and the CLI cannot disagree about what
//! a journal means. The service holds no key: secrets pass through replay sealed.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use plinth_engine::events::ChangeSummary;
use plinth_engine::names::{ProjectName, StackName};
use plinth_state::protocol::Version;
use plinth_state::{
    HistoryEntry, JournalBatch, ParsedBatch, PluginUse, Rebuilt, Replay, UpdateKind, UpdateResult,
};
use serde_json::Value;
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use crate::checkpoints::CHECKPOINTS;
use crate::error::ApiError;
use crate::parsed::PARSED;
use crate::replays::REPLAYS;

/// A stack as versions are made for it.
pub(crate) struct StackKey {
    pub id: i64,
    pub project: String,
    pub name: String,
}

/// `versions v`, each with the version holding its checkpoint (`held`): itself, or the one a
/// version that kept its base as it was names.
const WITH_CHECKPOINT: &str = "versions v LEFT JOIN versions held
    ON held.stack_id = v.stack_id AND held.version = v.checkpoint_of";
/// The checkpoint of `v` in [`WITH_CHECKPOINT`].
const CHECKPOINT: &str = "COALESCE(v.checkpoint, held.checkpoint)";

/// What identifies the checkpoint of a stack's latest version, across replicas: its number,
/// and the row holding its checkpoint (see [`Holder`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BaseIdentity {
    pub version: i64,
    /// None before the first version.
    pub holder: Option<Holder>,
}

/// The version whose row holds a checkpoint (itself, or the one a version that kept its base as
/// it was names), and that row's own version (`xmin`): a rename rewrites checkpoints in place,
/// which gives the row another.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Holder {
    pub version: i64,
    pub row: String,
}

/// The [`Holder`] of `v`'s checkpoint in [`WITH_CHECKPOINT`].
const HOLDER: &str = "COALESCE(held.version, v.version), COALESCE(held.xmin, v.xmin)::text";

/// The identity of a stack's latest version; version 0 before the first.
pub(crate) async fn latest_identity(
    conn: &mut PgConnection,
    stack_id: i64,
) -> Result<BaseIdentity, ApiError> {
    let row: Option<(i64, i64, String)> = sqlx::query_as(&format!(
        "SELECT v.version, {HOLDER} FROM {WITH_CHECKPOINT} WHERE v.stack_id = $1
         ORDER BY v.version DESC LIMIT 1"
    ))
    .bind(stack_id)
    .fetch_optional(conn)
    .await?;
    Ok(identity(row))
}

/// [`latest`], with its identity.
async fn latest_identified(
    conn: &mut PgConnection,
    stack_id: i64,
) -> Result<(BaseIdentity, Option<Vec<u8>>), ApiError> {
    let row: Option<(i64, i64, String, Vec<u8>)> = sqlx::query_as(&format!(
        "SELECT v.version, {HOLDER}, {CHECKPOINT} FROM {WITH_CHECKPOINT} WHERE v.stack_id = $1
         ORDER BY v.version DESC LIMIT 1"
    ))
    .bind(stack_id)
    .fetch_optional(conn)
    .await?;
    Ok(match row {
        Some((version, held, row, checkpoint)) => {
            (identity(Some((version, held, row))), Some(checkpoint))
        }
        None => (identity(None), None),
    })
}

fn identity(row: Option<(i64, i64, String)>) -> BaseIdentity {
    match row {
        Some((version, held, row)) => BaseIdentity {
            version,
            holder: Some(Holder { version: held, row }),
        },
        None => BaseIdentity {
            version: 0,
            holder: None,
        },
    }
}

/// [`latest`] with its identity, the checkpoint kept by this replica if it holds the one the
/// database names (see [`CHECKPOINTS`]).
pub(crate) async fn latest_kept(
    conn: &mut PgConnection,
    stack_id: i64,
) -> Result<(BaseIdentity, Option<Arc<Vec<u8>>>), ApiError> {
    let identity = latest_identity(&mut *conn, stack_id).await?;
    let Some(holder) = &identity.holder else {
        return Ok((identity, None));
    };
    if let Some(kept) = CHECKPOINTS.get(stack_id, holder) {
        return Ok((identity, Some(kept)));
    }
    let (identity, checkpoint) = latest_identified(conn, stack_id).await?;
    let checkpoint = checkpoint.map(Arc::new);
    if let (Some(holder), Some(checkpoint)) = (&identity.holder, &checkpoint) {
        CHECKPOINTS.keep(stack_id, holder.clone(), checkpoint.clone());
    }
    Ok((identity, checkpoint))
}

/// The latest version of a stack and its checkpoint; version 0 (no checkpoint) before the first.
pub(crate) async fn latest(
    conn: &mut PgConnection,
    stack_id: i64,
) -> Result<(i64, Option<Vec<u8>>), ApiError> {
    let row: Option<(i64, Vec<u8>)> = sqlx::query_as(&format!(
        "SELECT v.version, {CHECKPOINT} FROM {WITH_CHECKPOINT} WHERE v.stack_id = $1
         ORDER BY v.version DESC LIMIT 1"
    ))
    .bind(stack_id)
    .fetch_optional(conn)
    .await?;
    Ok(match row {
        Some((version, checkpoint)) => (version, Some(checkpoint)),
        None => (0, None),
    })
}

/// The latest version of a stack, if rebuilding its checkpoint from no journal entries, to
/// record `plugins` (`None`: whatever it records), would write it as it is. Its head (schema
/// version and plugins) is read first, the megabytes of its snapshot only if the head does not
/// say (a checkpoint plinth did not write).
async fn kept_as_is(
    conn: &mut PgConnection,
    stack_id: i64,
    plugins: Option<&[PluginUse]>,
) -> Result<Option<i64>, ApiError> {
    let head: Option<(i64, Vec<u8>)> = sqlx::query_as(&format!(
        "SELECT v.version, substring({CHECKPOINT} FROM 1 FOR $2) FROM {WITH_CHECKPOINT}
         WHERE v.stack_id = $1 ORDER BY v.version DESC LIMIT 1"
    ))
    .bind(stack_id)
    .bind(plinth_state::CHECKPOINT_HEAD as i32)
    .fetch_optional(&mut *conn)
    .await?;
    let Some((version, head)) = head else {
        return Ok(None);
    };
    let as_is = match plinth_state::rebuilt_as_is_by_head(&head, plugins) {
        Some(as_is) => as_is,
        None => (latest(&mut *conn, stack_id).await?.1)
            .is_some_and(|base| plinth_state::rebuilt_as_is(&base, plugins)),
    };
    Ok(as_is.then_some(version))
}

/// What a new version is made of: the journal batches not folded yet, or a whole checkpoint
/// (an import, an edit by hand) replacing the state.
pub(crate) enum Source {
    /// With the plugins the phase used, for its checkpoint to record (the base's if `None`).
    Journal {
        plugins: Option<Vec<PluginUse>>,
    },
    Checkpoint(Vec<u8>),
}

/// The history entry of a new version: the client's, or one the service writes for an update
/// that ended without recording its own, counting the changes its journal recorded.
pub(crate) enum Entry<'a> {
    Sent(&'a Value),
    Ended(Ended<'a>),
}

/// An update the service ended, or whose client ended it without an entry.
#[derive(Clone, Copy)]
pub(crate) struct Ended<'a> {
    pub kind: &'a str,
    /// Unix time.
    pub started: i64,
    pub note: &'a str,
}

impl Entry<'_> {
    fn written(&self, changes: ChangeSummary) -> Value {
        match self {
            Entry::Sent(entry) => (*entry).clone(),
            Entry::Ended(ended) => failed_entry(ended.kind, ended.started, ended.note, changes),
        }
    }
}

/// Makes the next version of `stack` in `tx` from update `update`'s batches after those already
/// folded (or from `source`'s checkpoint), recording `entry`; returns the version.
pub(crate) async fn fold(
    conn: &mut PgConnection,
    stack: &StackKey,
    update: Uuid,
    phase: Option<i32>,
    entry: Entry<'_>,
    source: Source,
) -> Result<i64, ApiError> {
    let started = Instant::now();
    let (folded,): (i64,) = sqlx::query_as("SELECT folded_seq FROM updates WHERE id = $1")
        .bind(update)
        .fetch_one(&mut *conn)
        .await?;
    let stored = stored_batches(&mut *conn, update, folded).await?;
    let through = stored.last().map_or(folded, |(seq, _)| *seq);
    // Nothing journaled: the state is the base's, kept as it is, in the base's row (a no-op
    // update of a large stack would parse and write it again for nothing, and store a copy).
    if let Source::Journal { plugins } = &source
        && stored.is_empty()
        && let Some(version) = kept_as_is(&mut *conn, stack.id, plugins.as_deref()).await?
    {
        let read = started.elapsed();
        let made = version + 1;
        let resources = count_of_latest(&mut *conn, stack.id).await?;
        let entry = entry.written(ChangeSummary::default());
        let at = (update, phase);
        insert_as_is(&mut *conn, stack, (made, resources), at, version, &entry).await?;
        mark_folded(&mut *conn, update, through).await?;
        made_in(stack, made, 0, started, read);
        return Ok(made);
    }
    // Replayed on this replica as the batches came, if it was.
    let replayed = match &source {
        Source::Journal { plugins } if !stored.is_empty() => {
            let base = latest_identity(&mut *conn, stack.id).await?;
            let plugins = plugins.clone();
            let rebuilt = REPLAYS
                .finish(update, &base, folded, &stored, plugins)
                .await;
            rebuilt.map(|rebuilt| (base.version, rebuilt))
        }
        _ => None,
    };
    let (version, read, rebuilt) = match replayed {
        Some((version, rebuilt)) => {
            tracing::debug!("update {update}'s batches were replayed as they came");
            (version, started.elapsed(), rebuilt)
        }
        None => {
            let batches = journal_batches(&mut *conn, update, stored).await?;
            let (version, base) = latest(&mut *conn, stack.id).await?;
            let read = started.elapsed();
            let rebuilt = match source {
                Source::Journal { plugins } => {
                    rebuild(stack, base, batches, plugins, Replay::Checked).await?
                }
                // A replacement is checked as the file backend checks an import: parsed,
                // verified and written back in its canonical form.
                Source::Checkpoint(bytes) => {
                    rebuild(stack, Some(bytes), Vec::new(), None, Replay::Checked).await?
                }
            };
            (version, read, rebuilt)
        }
    };
    let made = version + 1;
    let Rebuilt {
        checkpoint,
        changes,
        resources,
    } = rebuilt;
    let entry = entry.written(changes);
    let at = (update, phase);
    let holder = insert(
        &mut *conn,
        stack,
        (made, resources as i64),
        at,
        &checkpoint,
        &entry,
    )
    .await?;
    mark_folded(&mut *conn, update, through).await?;
    made_in(stack, made, checkpoint.len(), started, read);
    // The next update begins from it. (Kept under the identity of a row not committed yet: it
    // is taken only under the one the database names then.)
    CHECKPOINTS.keep(stack.id, holder, Arc::new(checkpoint));
    Ok(made)
}

/// Records that update `update`'s journal batches through `through` are folded.
async fn mark_folded(conn: &mut PgConnection, update: Uuid, through: i64) -> Result<(), ApiError> {
    sqlx::query("UPDATE updates SET folded_seq = $2 WHERE id = $1")
        .bind(update)
        .bind(through)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// Logs that `version` of `stack`, storing a checkpoint of `bytes` (0: its base's, kept), was
/// made since `started`, `read` of it reading.
fn made_in(stack: &StackKey, version: i64, bytes: usize, started: Instant, read: Duration) {
    tracing::debug!(
        "version {version} of {}/{} ({bytes} bytes stored) made in {:.1} ms, {:.1} ms of it \
         reading",
        stack.project,
        stack.name,
        started.elapsed().as_secs_f64() * 1e3,
        read.as_secs_f64() * 1e3,
    );
}

/// Stores version `version` of `stack` (of `resources` resources), made by `update` (its
/// `phase`), as holding the checkpoint of version `base`: no copy of it is stored.
async fn insert_as_is(
    conn: &mut PgConnection,
    stack: &StackKey,
    (version, resources): (i64, i64),
    (update, phase): (Uuid, Option<i32>),
    base: i64,
    entry: &Value,
) -> Result<(), ApiError> {
    sqlx::query(
        "INSERT INTO versions (stack_id, version, update_id, phase, checkpoint_of, entry,
                               resources)
         SELECT $1, $2, $3, $4, COALESCE(checkpoint_of, version), $5, $6 FROM versions
         WHERE stack_id = $1 AND version = $7",
    )
    .bind(stack.id)
    .bind(version)
    .bind(update)
    .bind(phase)
    .bind(sqlx::types::Json(entry))
    .bind(resources)
    .bind(base)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Stores `checkpoint` (of `resources` resources, as `stack ls` counts them) as version
/// `version` of `stack`, made by `update` (its `phase`); returns the row holding it.
async fn insert(
    conn: &mut PgConnection,
    stack: &StackKey,
    (version, resources): (i64, i64),
    (update, phase): (Uuid, Option<i32>),
    checkpoint: &[u8],
    entry: &Value,
) -> Result<Holder, ApiError> {
    let (row,): (String,) = sqlx::query_as(
        "INSERT INTO versions (stack_id, version, update_id, phase, checkpoint, entry, resources)
         VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING xmin::text",
    )
    .bind(stack.id)
    .bind(version)
    .bind(update)
    .bind(phase)
    .bind(checkpoint)
    .bind(sqlx::types::Json(entry))
    .bind(resources)
    .fetch_one(&mut *conn)
    .await?;
    Ok(Holder { version, row })
}

/// Folds what update `update` journaled and left unfolded into a version recording `ended`,
/// whatever its journal holds: one that cannot be rebuilt (stored before batches were checked
/// against the journal they extend, or by a bug) must not hold its stack for good. The version
/// then holds what the longest rebuildable run of its batches makes, its entry says where the
/// rest failed, and every batch stays stored for inspection. Says whether it had to salvage.
pub(crate) async fn fold_ending(
    conn: &mut PgConnection,
    stack: &StackKey,
    update: Uuid,
    ended: Ended<'_>,
) -> Result<bool, ApiError> {
    let source = Source::Journal { plugins: None };
    let reason = match fold(&mut *conn, stack, update, None, Entry::Ended(ended), source).await {
        Ok(_) => return Ok(false),
        Err(ApiError::Unrebuildable(reason)) => reason,
        Err(e) => return Err(e),
    };
    tracing::error!(
        "the journal of update {update} of {}/{} cannot be rebuilt ({reason}); recording what \
         it can",
        stack.project,
        stack.name
    );
    let (folded,): (i64,) = sqlx::query_as("SELECT folded_seq FROM updates WHERE id = $1")
        .bind(update)
        .fetch_one(&mut *conn)
        .await?;
    let texts: Vec<(i64, String)> = sqlx::query_as(
        "SELECT seq, entries::text FROM journal_batches WHERE update_id = $1 AND seq > $2
         ORDER BY seq",
    )
    .bind(update)
    .bind(folded)
    .fetch_all(&mut *conn)
    .await?;
    let through = texts.last().map_or(folded, |(seq, _)| *seq);
    let (version, base) = latest(&mut *conn, stack.id).await?;
    let prefix = |count: usize| -> Vec<JournalBatch> {
        (texts[..count].iter())
            .map(|(_, text)| JournalBatch::Text(text.clone()))
            .collect()
    };
    // A journal an older plinth wrote may record a state no plinth records (an id with a
    // control character): kept whole, as the file backend keeps its journal, so that `stack
    // export` shows it and `plinth state delete` repairs it (every other command's load says so).
    let whole = rebuild(
        stack,
        base.clone(),
        prefix(texts.len()),
        None,
        Replay::Unchecked,
    )
    .await;
    let (rebuilt, note) = match whole {
        Ok(ok) => {
            let note = format!(
                "{}; its journal records a state no plinth records ({}), kept as recorded: \
                 `plinth stack export` shows it, and `plinth state delete` removes it",
                ended.note,
                crate::checks::shown_up_to(&reason, 300),
            );
            (Ok(ok), note)
        }
        Err(_) => {
            // The longest run of batches that rebuilds: none (the base as it was) at worst.
            let (mut good, mut bad) = (0, texts.len());
            let mut rebuilt = rebuild(stack, base.clone(), Vec::new(), None, Replay::Checked).await;
            while bad - good > 1 {
                let middle = (good + bad) / 2;
                match rebuild(stack, base.clone(), prefix(middle), None, Replay::Checked).await {
                    Ok(ok) => {
                        good = middle;
                        rebuilt = Ok(ok);
                    }
                    Err(_) => bad = middle,
                }
            }
            let note = format!(
                "{}; its journal could not be rebuilt past batch {good} of {} ({}), so this \
                 version holds what the batches before made; the journal is kept (GET \
                 /api/v1/updates/{update}/journal)",
                ended.note,
                texts.len(),
                crate::checks::shown_up_to(&reason, 300),
            );
            (rebuilt, note)
        }
    };
    let ended = Ended {
        note: &note,
        ..ended
    };
    match rebuilt {
        Ok(Rebuilt {
            checkpoint,
            changes,
            resources,
        }) => {
            let entry = Entry::Ended(ended).written(changes);
            insert(
                &mut *conn,
                stack,
                (version + 1, resources as i64),
                (update, None),
                &checkpoint,
                &entry,
            )
            .await?;
        }
        // Not even the base rebuilds: nothing can be recorded; the stack is freed all the same.
        Err(e) => tracing::error!(
            "the latest version of {}/{} cannot be rebuilt either: {e}",
            stack.project,
            stack.name
        ),
    }
    sqlx::query("UPDATE updates SET folded_seq = $2 WHERE id = $1")
        .bind(update)
        .bind(through)
        .execute(&mut *conn)
        .await?;
    Ok(true)
}

/// The numbers and digests of update `update`'s journal batches after batch `folded`, in order.
async fn stored_batches(
    conn: &mut PgConnection,
    update: Uuid,
    folded: i64,
) -> Result<Vec<(i64, Vec<u8>)>, ApiError> {
    Ok(sqlx::query_as(
        "SELECT seq, digest FROM journal_batches WHERE update_id = $1 AND seq > $2 ORDER BY seq",
    )
    .bind(update)
    .bind(folded)
    .fetch_all(&mut *conn)
    .await?)
}

/// Update `update`'s journal batches `stored` (numbers and digests), in order: those this
/// replica parsed when they arrived, if stored as it parsed them, and the text of the others.
async fn journal_batches(
    conn: &mut PgConnection,
    update: Uuid,
    stored: Vec<(i64, Vec<u8>)>,
) -> Result<Vec<JournalBatch>, ApiError> {
    let parsed: Vec<(i64, Option<ParsedBatch>)> = (stored.into_iter())
        .map(|(seq, digest)| (seq, PARSED.take(update, seq, &digest)))
        .collect();
    let missing: Vec<i64> = (parsed.iter())
        .filter(|(_, batch)| batch.is_none())
        .map(|(seq, _)| *seq)
        .collect();
    // As text: the rebuild parses each batch once, straight into journal entries.
    let texts: Vec<(i64, String)> = match missing.is_empty() {
        true => Vec::new(),
        false => {
            sqlx::query_as(
                "SELECT seq, entries::text FROM journal_batches
                 WHERE update_id = $1 AND seq = ANY($2) ORDER BY seq",
            )
            .bind(update)
            .bind(&missing)
            .fetch_all(&mut *conn)
            .await?
        }
    };
    let mut texts = texts.into_iter();
    (parsed.into_iter())
        .map(|(seq, batch)| match batch {
            Some(batch) => Ok(JournalBatch::Parsed(batch)),
            // A batch is removed only with its stack (which a running update keeps): each
            // missing one was read, in order.
            None => match texts.next() {
                Some((read, text)) if read == seq => Ok(JournalBatch::Text(text)),
                _ => Err(ApiError::Internal(format!(
                    "journal batch {seq} of update {update} is gone"
                ))),
            },
        })
        .collect()
}

/// Replays the journal `batches` over `base` off the async workers: it is CPU work,
/// proportional to the state.
async fn rebuild(
    stack: &StackKey,
    base: Option<Vec<u8>>,
    batches: Vec<JournalBatch>,
    plugins: Option<Vec<PluginUse>>,
    replay: Replay,
) -> Result<Rebuilt, ApiError> {
    let project = ProjectName::new(&stack.project)
        .map_err(|e| ApiError::BadRequest(format!("project `{}`: {e}", stack.project)))?;
    let name = StackName::new(&stack.name)
        .map_err(|e| ApiError::BadRequest(format!("stack `{}`: {e}", stack.name)))?;
    let origin = PathBuf::from(format!("service:{}/{}", stack.project, stack.name));
    tokio::task::spawn_blocking(move || {
        let started = Instant::now();
        let count = batches.len();
        let rebuilt = plinth_state::rebuild_parsed(
            &project,
            &name,
            base.as_deref(),
            batches,
            plugins,
            &origin,
            replay,
        );
        tracing::debug!(
            "rebuilt {} from {count} journal batches in {:.1} ms",
            origin.display(),
            started.elapsed().as_secs_f64() * 1e3
        );
        rebuilt.map_err(|e| ApiError::Unrebuildable(e.to_string()))
    })
    .await
    .map_err(|e| ApiError::Internal(format!("rebuilding the state: {e}")))?
}

/// The resource count of the latest version of stack `stack_id`: as stored, or counted in its
/// checkpoint for a version stored before counts were.
async fn count_of_latest(conn: &mut PgConnection, stack_id: i64) -> Result<i64, ApiError> {
    let stored: Option<(Option<i64>,)> = sqlx::query_as(
        "SELECT resources FROM versions WHERE stack_id = $1 ORDER BY version DESC LIMIT 1",
    )
    .bind(stack_id)
    .fetch_optional(&mut *conn)
    .await?;
    if let Some((Some(resources),)) = stored {
        return Ok(resources);
    }
    // A version stored before its count was: counted in its checkpoint.
    let Some(checkpoint) = latest(&mut *conn, stack_id).await?.1 else {
        return Ok(0);
    };
    let counted = tokio::task::spawn_blocking(move || listed_resources(&checkpoint))
        .await
        .map_err(|e| ApiError::Internal(format!("counting resources: {e}")))??;
    Ok(counted as i64)
}

/// Folds what updates of `stack` that ended without completing (their lease expired, or they
/// were cancelled) journaled and left unfolded, so that the next update starts from it with the
/// interrupted operations pending, as with the file backend. Says whether there was any.
pub(crate) async fn fold_abandoned(
    conn: &mut PgConnection,
    stack: &StackKey,
) -> Result<bool, ApiError> {
    let abandoned: Vec<(Uuid, String, i64)> = sqlx::query_as(
        "SELECT u.id, u.kind, EXTRACT(EPOCH FROM u.started)::BIGINT FROM updates u
         WHERE u.stack_id = $1 AND u.status IN ('expired', 'cancelled')
           AND EXISTS (SELECT 1 FROM journal_batches b
                       WHERE b.update_id = u.id AND b.seq > u.folded_seq)
         ORDER BY u.started",
    )
    .bind(stack.id)
    .fetch_all(&mut *conn)
    .await?;
    let folded = !abandoned.is_empty();
    for (id, kind, started) in abandoned {
        let ended = Ended {
            kind: &kind,
            started,
            note: "interrupted: its lease expired or it was cancelled",
        };
        fold_ending(&mut *conn, stack, id, ended).await?;
    }
    Ok(folded)
}

/// The history entry of an update of `kind` begun at Unix time `started` that ended now
/// without recording one of its own, as `note` says.
pub(crate) fn failed_entry(kind: &str, started: i64, note: &str, changes: ChangeSummary) -> Value {
    let kind: UpdateKind =
        serde_json::from_value(Value::String(kind.to_owned())).unwrap_or(UpdateKind::Update);
    // The database rounds the start to the nearest second: never after now, when it ends.
    let started = (SystemTime::UNIX_EPOCH + Duration::from_secs(started.max(0) as u64))
        .min(SystemTime::now());
    let entry =
        HistoryEntry::ended_now(kind, started, UpdateResult::Failed, changes).with_note(note);
    serde_json::to_value(entry).expect("a history entry serializes")
}

/// A page of the stack's versions, newest first.
pub(crate) async fn history(
    pool: &PgPool,
    stack_id: i64,
    page: i64,
    per_page: i64,
) -> Result<(Vec<Version<Value>>, i64), ApiError> {
    #[derive(sqlx::FromRow)]
    struct Row {
        version: i64,
        update_id: Option<Uuid>,
        user: Option<String>,
        entry: sqlx::types::Json<Value>,
    }
    let rows: Vec<Row> = sqlx::query_as(
        "SELECT v.version, v.update_id, usr.name AS user, v.entry FROM versions v
         LEFT JOIN updates u ON u.id = v.update_id
         LEFT JOIN users usr ON usr.id = u.user_id
         WHERE v.stack_id = $1 ORDER BY v.version DESC LIMIT $2 OFFSET $3",
    )
    .bind(stack_id)
    .bind(per_page)
    .bind((page - 1) * per_page)
    .fetch_all(pool)
    .await?;
    let (total,): (i64,) = sqlx::query_as("SELECT count(*) FROM versions WHERE stack_id = $1")
        .bind(stack_id)
        .fetch_one(pool)
        .await?;
    let listed = (rows.into_iter())
        .map(|row| Version {
            entry: row.entry.0,
            update_id: row.update_id,
            user: row.user,
            version: row.version,
        })
        .collect();
    Ok((listed, total))
}

/// The checkpoint of `version` (the latest if `None`); the empty state's for version 0.
pub(crate) async fn export(
    pool: &PgPool,
    stack: &StackKey,
    version: Option<i64>,
) -> Result<Vec<u8>, ApiError> {
    let mut conn = pool.acquire().await?;
    let (latest_version, latest) = latest(&mut conn, stack.id).await?;
    let wanted = version.unwrap_or(latest_version);
    if wanted == latest_version {
        return match latest {
            Some(bytes) => Ok(bytes),
            None => Ok(rebuild(stack, None, Vec::new(), None, Replay::Checked)
                .await?
                .checkpoint),
        };
    }
    let row: Option<(Vec<u8>,)> = sqlx::query_as(&format!(
        "SELECT {CHECKPOINT} FROM {WITH_CHECKPOINT} WHERE v.stack_id = $1 AND v.version = $2"
    ))
    .bind(stack.id)
    .bind(wanted)
    .fetch_optional(&mut *conn)
    .await?;
    row.map(|(bytes,)| bytes).ok_or_else(|| {
        ApiError::NotFound(format!(
            "stack `{}` has no version {wanted}: its versions are 1 to {latest_version}",
            stack.name
        ))
    })
}

/// Removes `stack` for user `by`, refusing while an update holds it or, unless `force`, while
/// its latest version has resources (its root alone is an empty stack). The stack is only marked
/// removed, `force` or not: it is kept, invisible, until purged (see [`crate::removed`]).
pub(crate) async fn remove(
    pool: &PgPool,
    actor: &crate::audit::Actor,
    stack: &StackKey,
    by: i64,
    force: bool,
) -> Result<(), ApiError> {
    let mut tx = pool.begin().await?;
    // Locking the stack's row makes an update that begins meanwhile wait for the outcome.
    let live: Option<(i64,)> =
        sqlx::query_as("SELECT id FROM stacks WHERE id = $1 AND removed IS NULL FOR UPDATE")
            .bind(stack.id)
            .fetch_optional(&mut *tx)
            .await?;
    if live.is_none() {
        return Err(ApiError::NotFound(format!(
            "stack `{}` was removed already",
            stack.name
        )));
    }
    let running: Option<(String, String)> = sqlx::query_as(
        "SELECT usr.name, u.kind FROM updates u JOIN users usr ON usr.id = u.user_id
         WHERE u.stack_id = $1 AND u.status = 'running' AND u.lease_expires >= now()",
    )
    .bind(stack.id)
    .fetch_optional(&mut *tx)
    .await?;
    if let Some((user, kind)) = running {
        return Err(ApiError::Conflict(format!(
            "stack `{}` is being updated by {user} ({kind}); wait for it, or `plinth cancel` it",
            stack.name
        )));
    }
    if !force {
        let (_, latest) = latest(&mut tx, stack.id).await?;
        let count = latest.as_deref().map_or(Ok(0), resource_count)?;
        if count > 0 {
            return Err(ApiError::Conflict(format!(
                "stack `{}` still has {count} resources; destroy them first with `plinth \
                 destroy`, or remove the stack and forget them with `--force`",
                stack.name
            )));
        }
    }
    sqlx::query("UPDATE stacks SET removed = now(), removed_by = $2 WHERE id = $1")
        .bind(stack.id)
        .bind(by)
        .execute(&mut *tx)
        .await?;
    let on = Some((stack.project.as_str(), stack.name.as_str()));
    let detail = if force { "forced" } else { "" };
    let action = crate::audit::Action::StackRemoved;
    crate::audit::record(&mut tx, actor, action, on, detail).await?;
    tx.commit().await?;
    Ok(())
}

/// The resources a checkpoint records, its stack's root aside.
fn resource_count(checkpoint: &[u8]) -> Result<usize, ApiError> {
    count_resources(checkpoint, |ty| !plinth_engine::urn::is_stack_type(ty))
}

/// The resources of a stack's latest version: `counted` as stored, or else counted in its
/// checkpoint `uncounted` (a version stored before counts were); 0 before the first version.
pub(crate) fn resources(counted: Option<i64>, uncounted: Option<&[u8]>) -> Result<usize, ApiError> {
    match (counted, uncounted) {
        (Some(counted), _) => Ok(counted.max(0) as usize),
        (None, Some(checkpoint)) => listed_resources(checkpoint),
        (None, None) => Ok(0),
    }
}

/// The resources a checkpoint records as `plinth stack ls` counts them: its providers and its
/// stack's root aside.
pub(crate) fn listed_resources(checkpoint: &[u8]) -> Result<usize, ApiError> {
    count_resources(checkpoint, plinth_engine::urn::is_counted)
}

fn count_resources(checkpoint: &[u8], counted: fn(&str) -> bool) -> Result<usize, ApiError> {
    #[derive(serde::Deserialize)]
    struct Resource {
        #[serde(rename = "type")]
        ty: String,
    }
    #[derive(serde::Deserialize)]
    struct Snapshot {
        #[serde(default)]
        resources: Vec<Resource>,
    }
    #[derive(serde::Deserialize)]
    struct Checkpoint {
        snapshot: Snapshot,
    }
    let checkpoint: Checkpoint = serde_json::from_slice(checkpoint)
        .map_err(|e| ApiError::Internal(format!("a stored checkpoint does not parse: {e}")))?;
    Ok((checkpoint.snapshot.resources.iter())
        .filter(|r| counted(&r.ty))
        .count())
}

//! Updates and their leases. Whether a stack is free is decided by the database alone (the
//! partial unique index on running updates), in one transaction per request.

use std::sync::Arc;

use plinth_state::protocol::{
    Begun, Checkpoint, EVENTS_BATCH_MAX, Holder, JOURNAL_BATCH_MAX, JOURNAL_IN_FLIGHT,
};
use sqlx::PgPool;
use uuid::Uuid;

use crate::audit::{self, Action, Actor};
use crate::auth::{User, digest, new_token};
use crate::error::ApiError;
use crate::metrics::Metrics;
use crate::open_creates::OPEN;
use crate::policy_packs;
use crate::replays::REPLAYS;
use crate::versions::{self, Ended, Entry, Source, StackKey};

/// What this service takes in journal batches beyond whole entries; the rebuild completes them.
const JOURNAL_EXTENSIONS: &[&str] = &[plinth_state::CREATED_AS_BEGUN];

/// What a client asks to begin: the kind of update, its request's id (a retry's is the
/// same), and the configuration keys it runs with (checked).
pub(crate) struct Beginning<'a> {
    pub kind: &'a str,
    pub request_id: Option<Uuid>,
    pub config: Option<&'a serde_json::Value>,
}

/// Takes the stack for a new update of `kind`, unless another holds it, and returns the state to
/// start from. A running update whose lease expired gives the stack up first, and what it
/// journaled becomes the base, its interrupted operations pending. A begin retried under the
/// same `request_id` (its answer was lost) gets the update it began back, under a new lease
/// token: the first one never reached the client.
pub(crate) async fn begin(
    pool: &PgPool,
    metrics: &Metrics,
    user: &User,
    key: &StackKey,
    Beginning {
        kind,
        request_id,
        config,
    }: Beginning<'_>,
    lease_seconds: f64,
) -> Result<Begun, ApiError> {
    let (stack_id, stack) = (key.id, key.name.as_str());
    let mut tx = pool.begin().await?;
    // Shared with other updates' begins, exclusive with a removal: a stack removed meanwhile
    // begins nothing.
    let live: Option<(i64,)> =
        sqlx::query_as("SELECT id FROM stacks WHERE id = $1 AND removed IS NULL FOR SHARE")
            .bind(stack_id)
            .fetch_optional(&mut *tx)
            .await?;
    if live.is_none() {
        return Err(ApiError::NotFound(format!(
            "stack `{stack}` was removed; create it again with `plinth stack init {stack}`"
        )));
    }
    let taken: Vec<(Uuid, String)> = sqlx::query_as(
        "UPDATE updates u SET status = 'expired', ended = now() FROM users usr
         WHERE u.stack_id = $1 AND u.status = 'running' AND u.lease_expires < now()
           AND usr.id = u.user_id
         RETURNING u.id, usr.name",
    )
    .bind(stack_id)
    .fetch_all(&mut *tx)
    .await?;
    let expired = taken.len() as u64;
    if let Some(request_id) = request_id
        && let Some(again) = begun_again(&mut tx, user, key, request_id, lease_seconds).await?
    {
        tx.commit().await?;
        metrics.leases_expired.inc_by(expired);
        return Ok(again);
    }
    let update_id = Uuid::new_v4();
    let lease_token = new_token();
    // No conflict target: a stack already held and a request id already used both insert
    // nothing.
    let inserted: Option<(i64,)> = sqlx::query_as(
        "INSERT INTO updates (id, stack_id, user_id, kind, status, lease_digest, lease_expires,
                              request_id, config)
         VALUES ($1, $2, $3, $4, 'running', $5, now() + make_interval(secs => $6), $7, $8)
         ON CONFLICT DO NOTHING
         RETURNING EXTRACT(EPOCH FROM lease_expires)::BIGINT",
    )
    .bind(update_id)
    .bind(stack_id)
    .bind(user.id)
    .bind(kind)
    .bind(digest(&lease_token))
    .bind(lease_seconds)
    .bind(request_id)
    .bind(config)
    .fetch_optional(&mut *tx)
    .await?;
    let Some((lease_expires,)) = inserted else {
        tx.rollback().await?;
        // The same request, sent twice at once, may have begun the update meanwhile.
        if let Some(request_id) = request_id {
            let mut tx = pool.begin().await?;
            if let Some(again) = begun_again(&mut tx, user, key, request_id, lease_seconds).await? {
                tx.commit().await?;
                return Ok(again);
            }
        }
        return Err(holder(pool, stack_id, stack).await);
    };
    let actor = user.actor();
    let on = Some((key.project.as_str(), stack));
    for (taken, holder) in &taken {
        let detail = format!("update {taken} of {holder}, its lease expired");
        audit::record(&mut tx, &actor, Action::UpdateTakenOver, on, &detail).await?;
    }
    let detail = format!("update {update_id} ({kind})");
    audit::record(&mut tx, &actor, Action::UpdateBegun, on, &detail).await?;
    // The new update holds the stack: nothing else folds or versions it meanwhile.
    let recovered = versions::fold_abandoned(&mut tx, key).await?;
    let (base, checkpoint) = versions::latest_kept(&mut tx, stack_id).await?;
    let (base_version, base) = (base.version, checkpoint.map(Arc::unwrap_or_clone));
    // The packs the update is told to run, kept with it: what it claims to have run is
    // checked against them.
    let policy_packs = policy_packs::applying(&mut tx, &key.project, stack).await?;
    let told: Vec<serde_json::Value> = (policy_packs.iter())
        .map(|p| serde_json::json!({ "name": p.name, "digest": p.digest }))
        .collect();
    sqlx::query("UPDATE updates SET folded_seq = 0, policy_packs = $2 WHERE id = $1")
        .bind(update_id)
        .bind(serde_json::Value::Array(told))
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    metrics.leases_expired.inc_by(expired);
    Ok(Begun {
        update_id: update_id.to_string(),
        lease_token,
        lease_expires,
        lease_seconds,
        base_version,
        base_checkpoint: utf8_checkpoint(base, stack)?.map(Checkpoint::Quoted),
        recovered,
        journal_extensions: journal_extensions(),
        policy_packs,
        journal_batch: JOURNAL_BATCH_MAX,
        events_batch: EVENTS_BATCH_MAX,
        journal_in_flight: JOURNAL_IN_FLIGHT,
    })
}

/// What journal batches may carry beyond whole entries, as a begun update is told.
fn journal_extensions() -> Vec<String> {
    JOURNAL_EXTENSIONS.iter().map(|e| (*e).to_owned()).collect()
}

/// A Unix time as the protocol carries it; the database's are never before the epoch.
fn unix(seconds: i64) -> u64 {
    u64::try_from(seconds).unwrap_or(0)
}

fn utf8_checkpoint(base: Option<Vec<u8>>, stack: &str) -> Result<Option<String>, ApiError> {
    base.map(|bytes| {
        String::from_utf8(bytes).map_err(|_| {
            ApiError::Internal(format!("the checkpoint of stack `{stack}` is not UTF-8"))
        })
    })
    .transpose()
}

/// The update `user` began on `key` with request `request_id`, answered again under a new lease
/// token, if there is one; an error if it has ended since.
async fn begun_again(
    tx: &mut sqlx::PgConnection,
    user: &User,
    key: &StackKey,
    request_id: Uuid,
    lease_seconds: f64,
) -> Result<Option<Begun>, ApiError> {
    let found: Option<(Uuid, String)> = sqlx::query_as(
        "SELECT id, status FROM updates WHERE stack_id = $1 AND request_id = $2 AND user_id = $3
         FOR UPDATE",
    )
    .bind(key.id)
    .bind(request_id)
    .bind(user.id)
    .fetch_optional(&mut *tx)
    .await?;
    let Some((update_id, status)) = found else {
        return Ok(None);
    };
    if status != "running" {
        return Err(ApiError::Conflict(format!(
            "update {update_id}, begun by request {request_id}, has already ended ({status}); \
             begin a new update"
        )));
    }
    let lease_token = new_token();
    let (lease_expires,): (i64,) = sqlx::query_as(
        "UPDATE updates SET lease_digest = $2, lease_expires = now() + make_interval(secs => $3)
         WHERE id = $1 RETURNING EXTRACT(EPOCH FROM lease_expires)::BIGINT",
    )
    .bind(update_id)
    .bind(digest(&lease_token))
    .bind(lease_seconds)
    .fetch_one(&mut *tx)
    .await?;
    // The client never acted on the update (the answer that would have let it was lost), so
    // the latest version is still the one it began from.
    let (base_version, base) = versions::latest(&mut *tx, key.id).await?;
    // Abandoned updates were folded in the transaction that began this one: at its start time.
    let (recovered,): (bool,) = sqlx::query_as(
        "SELECT EXISTS (SELECT 1 FROM versions v JOIN updates a ON a.id = v.update_id
                        JOIN updates u ON u.id = $2
                        WHERE v.stack_id = $1 AND a.id <> u.id AND v.created = u.started
                          AND a.status IN ('expired', 'cancelled'))",
    )
    .bind(key.id)
    .bind(update_id)
    .fetch_one(&mut *tx)
    .await?;
    Ok(Some(Begun {
        update_id: update_id.to_string(),
        lease_token,
        lease_expires,
        lease_seconds,
        base_version,
        base_checkpoint: utf8_checkpoint(base, &key.name)?.map(Checkpoint::Quoted),
        recovered,
        journal_extensions: journal_extensions(),
        policy_packs: policy_packs::applying(&mut *tx, &key.project, &key.name).await?,
        journal_batch: JOURNAL_BATCH_MAX,
        events_batch: EVENTS_BATCH_MAX,
        journal_in_flight: JOURNAL_IN_FLIGHT,
    }))
}

/// The project and name of the stack update `id` is of.
pub(crate) async fn stack_of(pool: &PgPool, id: Uuid) -> Result<(String, String), ApiError> {
    let found: Option<(String, String)> = sqlx::query_as(
        "SELECT s.project, s.name FROM updates u JOIN stacks s ON s.id = u.stack_id
         WHERE u.id = $1 AND s.removed IS NULL",
    )
    .bind(id)
    .fetch_optional(pool)
    .await?;
    found.ok_or_else(|| ApiError::NotFound(format!("there is no update {id}")))
}

/// The update running on the stack, if any.
pub(crate) async fn running(pool: &PgPool, stack_id: i64) -> Result<Option<Holder>, ApiError> {
    let row: Option<(String, String, i64, i64, bool)> = sqlx::query_as(
        "SELECT usr.name, upd.kind, EXTRACT(EPOCH FROM upd.started)::BIGINT,
                EXTRACT(EPOCH FROM upd.lease_expires)::BIGINT, upd.lease_expires < now()
         FROM updates upd JOIN users usr ON usr.id = upd.user_id
         WHERE upd.stack_id = $1 AND upd.status = 'running'",
    )
    .bind(stack_id)
    .fetch_optional(pool)
    .await?;
    Ok(
        row.map(|(user, kind, started, lease_expires, expired)| Holder {
            user,
            kind,
            started: unix(started),
            lease_expires: unix(lease_expires),
            expired,
        }),
    )
}

/// The error naming who holds the stack.
async fn holder(pool: &PgPool, stack_id: i64, stack: &str) -> ApiError {
    match running(pool, stack_id).await {
        Ok(Some(holder)) => ApiError::Busy {
            stack: stack.to_owned(),
            user: holder.user,
            kind: holder.kind,
            started: holder.started,
            lease_expires: holder.lease_expires,
        },
        // It ended between the two queries: the caller may try again at once.
        Ok(None) => ApiError::Conflict(format!(
            "stack `{stack}` was being updated a moment ago; try again"
        )),
        Err(e) => e,
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

/// Ends an update with `result`. Journal batches not folded into a version by a phase yet are
/// folded now, recorded with `entry` (or, without one, as a failed update of its kind).
/// Idempotent: completing it again the same way succeeds, so a client whose first answer was
/// lost may retry.
pub(crate) async fn complete(
    pool: &PgPool,
    actor: &Actor,
    id: Uuid,
    lease: &str,
    result: &str,
    entry: Option<&serde_json::Value>,
) -> Result<(), ApiError> {
    if !matches!(result, "succeeded" | "failed") {
        return Err(ApiError::BadRequest(format!(
            "an update ends `succeeded` or `failed`, not `{}`",
            crate::checks::shown(result)
        )));
    }
    let mut tx = pool.begin().await?;
    let Some(key) = held(&mut tx, id, lease).await? else {
        tx.rollback().await?;
        let already: Option<(String,)> =
            sqlx::query_as("SELECT status FROM updates WHERE id = $1 AND lease_digest = $2")
                .bind(id)
                .bind(digest(lease))
                .fetch_optional(pool)
                .await?;
        return match already {
            Some((status,)) if status == result => Ok(()),
            _ => Err(refused(pool, id, lease).await),
        };
    };
    let unfolded: (bool,) = sqlx::query_as(
        "SELECT EXISTS (SELECT 1 FROM journal_batches b JOIN updates u ON u.id = b.update_id
                        WHERE u.id = $1 AND b.seq > u.folded_seq)",
    )
    .bind(id)
    .fetch_one(&mut *tx)
    .await?;
    let mut result = result;
    if unfolded.0 {
        let ended = Ended {
            kind: &key.kind,
            started: key.started,
            note: "ended without a phase recorded",
        };
        let source = Source::Journal { plugins: None };
        let salvaged = match entry {
            Some(entry) => {
                let on = (key.stack.project.as_str(), key.stack.name.as_str());
                policy_packs::record_unclaimed(&mut tx, actor, on, id, entry).await?;
                match versions::fold(&mut tx, &key.stack, id, None, Entry::Sent(entry), source)
                    .await
                {
                    Ok(_) => false,
                    // Recorded as far as it rebuilds, and failed: the stack is not kept.
                    Err(ApiError::Unrebuildable(_)) => {
                        versions::fold_ending(&mut tx, &key.stack, id, ended).await?
                    }
                    Err(e) => return Err(e),
                }
            }
            None => versions::fold_ending(&mut tx, &key.stack, id, ended).await?,
        };
        if salvaged {
            result = "failed";
        }
    }
    sqlx::query("UPDATE updates SET status = $2, ended = now() WHERE id = $1")
        .bind(id)
        .bind(result)
        .execute(&mut *tx)
        .await?;
    let on = Some((key.stack.project.as_str(), key.stack.name.as_str()));
    let detail = format!("update {id} ({}) {result}", key.kind);
    audit::record(&mut tx, actor, Action::UpdateCompleted, on, &detail).await?;
    tx.commit().await?;
    OPEN.forget(id);
    REPLAYS.forget(id);
    Ok(())
}

/// The stack and kind of update `id`, locked for this transaction, if `lease` still holds it.
pub(crate) struct Held {
    pub stack: StackKey,
    pub kind: String,
    /// Unix time.
    pub started: i64,
}

pub(crate) async fn held(
    conn: &mut sqlx::PgConnection,
    id: Uuid,
    lease: &str,
) -> Result<Option<Held>, ApiError> {
    let row: Option<(i64, String, String, String, i64)> = sqlx::query_as(
        "SELECT s.id, s.project, s.name, u.kind, EXTRACT(EPOCH FROM u.started)::BIGINT
         FROM updates u JOIN stacks s ON s.id = u.stack_id
         WHERE u.id = $1 AND u.lease_digest = $2 AND u.status = 'running'
           AND u.lease_expires >= now() AND s.removed IS NULL
         FOR UPDATE OF u",
    )
    .bind(id)
    .bind(digest(lease))
    .fetch_optional(conn)
    .await?;
    Ok(row.map(|(id, project, name, kind, started)| Held {
        stack: StackKey { id, project, name },
        kind,
        started,
    }))
}

/// Records a phase of update `id` (a refresh, then the update) as a new version made from
/// `source`: the journal batches since the last phase, or a checkpoint replacing the state. A
/// retried phase (same number) answers the version it made.
pub(crate) async fn phase(
    pool: &PgPool,
    actor: &Actor,
    id: Uuid,
    lease: &str,
    phase: i32,
    entry: &serde_json::Value,
    source: Source,
) -> Result<i64, ApiError> {
    let mut tx = pool.begin().await?;
    let Some(held) = held(&mut tx, id, lease).await? else {
        tx.rollback().await?;
        return Err(refused(pool, id, lease).await);
    };
    let done: Option<(i64,)> =
        sqlx::query_as("SELECT version FROM versions WHERE update_id = $1 AND phase = $2")
            .bind(id)
            .bind(phase)
            .fetch_optional(&mut *tx)
            .await?;
    if let Some((version,)) = done {
        return Ok(version);
    }
    // A checkpoint replacing the state is a change of its own (an import, an edit by hand);
    // a phase rebuilt from the journal is the update's, which begun and completed record.
    let replaced = match &source {
        Source::Checkpoint(bytes) => Some(bytes.len()),
        Source::Journal { .. } => None,
    };
    let on = (held.stack.project.as_str(), held.stack.name.as_str());
    policy_packs::record_unclaimed(&mut tx, actor, on, id, entry).await?;
    let entry = Entry::Sent(entry);
    let version = versions::fold(&mut tx, &held.stack, id, Some(phase), entry, source).await?;
    if let Some(bytes) = replaced {
        let action = match held.kind.as_str() {
            "import" => Action::StackImported,
            _ => Action::StateEdited,
        };
        let on = Some((held.stack.project.as_str(), held.stack.name.as_str()));
        let detail = format!(
            "update {id} ({}), phase {phase}: version {version}, a checkpoint of {bytes} bytes",
            held.kind
        );
        audit::record(&mut tx, actor, action, on, &detail).await?;
    }
    tx.commit().await?;
    Ok(version)
}

/// Ends the stack's running update at once (`plinth cancel`); returns it, if there was one. What
/// it journaled becomes a version, its interrupted operations pending.
pub(crate) async fn cancel(
    pool: &PgPool,
    actor: &Actor,
    key: &StackKey,
) -> Result<Option<Uuid>, ApiError> {
    let mut tx = pool.begin().await?;
    let cancelled: Option<(Uuid, String, String)> = sqlx::query_as(
        "UPDATE updates u SET status = 'cancelled', ended = now() FROM users usr
         WHERE u.stack_id = $1 AND u.status = 'running' AND usr.id = u.user_id
         RETURNING u.id, u.kind, usr.name",
    )
    .bind(key.id)
    .fetch_optional(&mut *tx)
    .await?;
    if let Some((update, kind, holder)) = &cancelled {
        let on = Some((key.project.as_str(), key.name.as_str()));
        let detail = format!("update {update} ({kind}) of {holder}");
        audit::record(&mut tx, actor, Action::UpdateCancelled, on, &detail).await?;
    }
    versions::fold_abandoned(&mut tx, key).await?;
    tx.commit().await?;
    Ok(cancelled.map(|(id, ..)| id))
}

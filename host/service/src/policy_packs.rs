//! Policy packs the service enforces (`plinth serve policy add|ls|rm`): each a component, its
//! digest and the stacks it applies to, a glob on `PROJECT/STACK`. A run of a matching stack is
//! told to run it (`GET stacks/P/S/policy-packs`, and the begun update), fetches its component
//! (`GET policy-packs/DIGEST`) and checks the digest. The service cannot run a pack itself: it
//! can only tell the client which to run (see docs/policy.md).

use std::collections::HashSet;

use base64::Engine as _;
use globset::{GlobBuilder, GlobMatcher};
use plinth_state::protocol::policy::{PackComponent, PackLimits, RequiredPack};
use serde_json::Value;
use sha2::{Digest, Sha256};
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use crate::audit::{self, Action, Actor};
use crate::auth::{Level, User};
use crate::checks::shown;
use crate::error::ApiError;

/// The largest pack stored: a pack is a small component (the test pack is about 100 KiB);
/// every run of a matching stack fetches it.
pub const MAX_PACK_BYTES: usize = 16 << 20;

/// A stored pack, as `policy ls` shows it.
#[derive(Debug, sqlx::FromRow)]
pub struct StoredPack {
    pub name: String,
    pub version: String,
    pub digest: String,
    pub stacks: String,
    pub config: Option<Value>,
    pub memory_bytes: Option<i64>,
    pub call_timeout_ms: Option<i64>,
    pub added: String,
    pub added_by: String,
}

/// Why a pack was not stored.
#[derive(Debug, thiserror::Error)]
pub enum PackError {
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Database(#[from] sqlx::Error),
}

/// `pattern` as a matcher of `PROJECT/STACK` (`*` stays within a name).
fn matcher(pattern: &str) -> Result<GlobMatcher, String> {
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map(|glob| glob.compile_matcher())
        .map_err(|e| format!("`{}` is not a pattern: {e}", shown(pattern)))
}

/// Stores the pack `bytes` as `name` (replacing the one of that name for the same stacks), for
/// the stacks `stacks` matches; its digest.
/// A pack to store: its name, version, the stacks it applies to, its configuration and limits.
pub struct NewPack<'a> {
    pub name: &'a str,
    pub version: &'a str,
    pub stacks: &'a str,
    pub config: Option<Value>,
    pub limits: PackLimits,
}

/// The smallest memory limit: a guest needs at least 1 MiB.
const MIN_MEMORY: u64 = 1 << 20;
/// The longest call timeout: an hour (a pack judges inputs; it does not wait on anything).
const MAX_CALL_TIMEOUT_MS: u64 = 3_600_000;

pub async fn add(
    pool: &PgPool,
    NewPack {
        name,
        version,
        stacks,
        config,
        limits,
    }: NewPack<'_>,
    bytes: &[u8],
) -> Result<String, PackError> {
    let invalid = |m: String| Err(PackError::Invalid(m));
    if name.is_empty() || name.len() > 100 || name.chars().any(char::is_control) {
        return invalid(format!(
            "the pack name `{}` must be one line of 1 to 100 characters",
            shown(name)
        ));
    }
    if version.len() > 100 || version.chars().any(char::is_control) {
        return invalid(format!(
            "the version `{}` must be one line of at most 100 characters",
            shown(version)
        ));
    }
    if stacks.is_empty() || stacks.len() > 200 || !stacks.contains('/') {
        return invalid(format!(
            "`{}` is not a stacks pattern: give PROJECT/STACK globs, e.g. 'shop/*' or '*/prod'",
            shown(stacks)
        ));
    }
    matcher(stacks).map_err(PackError::Invalid)?;
    if let Some(config) = &config
        && !config.is_object()
    {
        return invalid(
            "the configuration must be a JSON object keyed by policy name, as \
             --policy-pack-config takes"
                .into(),
        );
    }
    if let Some(memory) = limits.memory_bytes
        && !(MIN_MEMORY..=i64::MAX as u64).contains(&memory)
    {
        return invalid(format!(
            "a memory limit of {memory} bytes is too small: a pack needs at least 1 MiB (e.g. \
             `--memory 64MiB`)"
        ));
    }
    if let Some(timeout) = limits.call_timeout_ms
        && !(1..=MAX_CALL_TIMEOUT_MS).contains(&timeout)
    {
        return invalid(format!(
            "a call timeout of {timeout} ms is out of range: give 1ms to 1h (e.g. \
             `--call-timeout 5s`)"
        ));
    }
    if bytes.len() > MAX_PACK_BYTES {
        return invalid(format!(
            "the pack is {} bytes, more than the {} MiB a pack may be",
            bytes.len(),
            MAX_PACK_BYTES >> 20
        ));
    }
    if !bytes.starts_with(b"\0asm") {
        return invalid("the pack is not a WebAssembly component (a built `.wasm` file)".into());
    }
    let digest = hex::encode(Sha256::digest(bytes));
    let mut tx = pool.begin().await?;
    sqlx::query(
        "INSERT INTO policy_packs (name, version, digest, stacks, config, bytes, memory_bytes,
                                   call_timeout_ms)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
         ON CONFLICT (name, stacks) DO UPDATE SET version = $2, digest = $3, config = $5,
             bytes = $6, memory_bytes = $7, call_timeout_ms = $8, added = now(),
             added_by = session_user",
    )
    .bind(name)
    .bind(version)
    .bind(&digest)
    .bind(stacks)
    .bind(&config)
    .bind(bytes)
    .bind(limits.memory_bytes.map(|m| m as i64))
    .bind(limits.call_timeout_ms.map(|t| t as i64))
    .execute(&mut *tx)
    .await?;
    let detail = format!("pack {name} {version} (sha256 {digest}) for {stacks}");
    audit::record(
        &mut tx,
        &Actor::cli(),
        Action::PolicyPackAdded,
        None,
        &detail,
    )
    .await?;
    tx.commit().await?;
    Ok(digest)
}

/// Every stored pack, by name.
pub async fn list(pool: &PgPool) -> Result<Vec<StoredPack>, sqlx::Error> {
    sqlx::query_as(
        "SELECT name, version, digest, stacks, config, memory_bytes, call_timeout_ms,
                to_char(added AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') AS added, added_by
         FROM policy_packs ORDER BY name, stacks",
    )
    .fetch_all(pool)
    .await
}

/// Removes the pack `name` (only for `stacks`, if given); how many were removed.
pub async fn remove(pool: &PgPool, name: &str, stacks: Option<&str>) -> Result<u64, sqlx::Error> {
    let mut tx = pool.begin().await?;
    let removed: Vec<(String, String)> = sqlx::query_as(
        "DELETE FROM policy_packs WHERE name = $1 AND ($2::TEXT IS NULL OR stacks = $2)
         RETURNING digest, stacks",
    )
    .bind(name)
    .bind(stacks)
    .fetch_all(&mut *tx)
    .await?;
    for (digest, stacks) in &removed {
        let detail = format!("pack {name} (sha256 {digest}) for {stacks}");
        audit::record(
            &mut tx,
            &Actor::cli(),
            Action::PolicyPackRemoved,
            None,
            &detail,
        )
        .await?;
    }
    tx.commit().await?;
    Ok(removed.len() as u64)
}

/// The packs that apply to stack `project/stack`, by name.
pub(crate) async fn applying(
    conn: &mut PgConnection,
    project: &str,
    stack: &str,
) -> Result<Vec<RequiredPack>, ApiError> {
    type Row = (
        String,
        String,
        String,
        String,
        Option<Value>,
        Option<i64>,
        Option<i64>,
    );
    let rows: Vec<Row> = sqlx::query_as(
        "SELECT name, version, digest, stacks, config, memory_bytes, call_timeout_ms
         FROM policy_packs ORDER BY name, stacks",
    )
    .fetch_all(conn)
    .await?;
    let full = format!("{project}/{stack}");
    let mut packs = Vec::new();
    for (name, version, digest, stacks, config, memory, timeout) in rows {
        // Checked when stored; a row that no longer compiles applies to nothing.
        if matcher(&stacks).is_ok_and(|m| m.is_match(&full)) {
            let path = format!("policy-packs/{digest}");
            let limits = PackLimits {
                memory_bytes: memory.map(|m| m as u64),
                call_timeout_ms: timeout.map(|t| t as u64),
            };
            packs.push(RequiredPack {
                name,
                version,
                digest,
                config,
                path,
                limits,
            });
        }
    }
    Ok(packs)
}

/// Records in the audit log each pack update `id` was told to run, as it began, that its
/// history entry `entry` (of an `update` phase) does not say it ran. The service cannot run a
/// pack: it can only compare what the client says with what it was told.
pub(crate) async fn record_unclaimed(
    conn: &mut PgConnection,
    actor: &Actor,
    on: (&str, &str),
    id: Uuid,
    entry: &Value,
) -> Result<(), ApiError> {
    if entry.get("kind").and_then(Value::as_str) != Some("update") {
        return Ok(());
    }
    let (told,): (Option<Value>,) =
        sqlx::query_as("SELECT policy_packs FROM updates WHERE id = $1")
            .bind(id)
            .fetch_one(&mut *conn)
            .await?;
    let claimed: HashSet<&str> = (entry.get("policy_packs").and_then(Value::as_array))
        .into_iter()
        .flatten()
        .filter_map(|p| p.get("digest")?.as_str())
        .collect();
    let told = told.unwrap_or_default();
    for pack in told.as_array().into_iter().flatten() {
        let (Some(name), Some(digest)) = (pack["name"].as_str(), pack["digest"].as_str()) else {
            continue;
        };
        if !claimed.contains(digest) {
            let detail = format!(
                "update {id} does not say it ran the policy pack {name} (sha256 {digest}) it \
                 was told to run"
            );
            audit::record(conn, actor, Action::PolicyPackUnclaimed, Some(on), &detail).await?;
        }
    }
    Ok(())
}

/// The component whose digest is `digest`, for `user` if its token covers a stack the pack
/// applies to (a pack's rules are the administrator's, not every token holder's to read), or
/// administers every stack.
pub(crate) async fn component(
    pool: &PgPool,
    user: &User,
    digest: &str,
) -> Result<PackComponent, ApiError> {
    if digest.len() != 64
        || !digest
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    {
        return Err(ApiError::BadRequest(format!(
            "`{}` is not a pack digest (64 lowercase hex digits)",
            shown(digest)
        )));
    }
    let globs: Vec<(String,)> = sqlx::query_as("SELECT stacks FROM policy_packs WHERE digest = $1")
        .bind(digest)
        .fetch_all(pool)
        .await?;
    let missing = || {
        ApiError::NotFound(format!(
            "no policy pack has the digest {digest}: it was removed or replaced; run again"
        ))
    };
    if globs.is_empty() {
        return Err(missing());
    }
    if !user.scope.everywhere(Level::Admin) && !covers_a_stack_of(pool, user, &globs).await? {
        return Err(ApiError::Forbidden(format!(
            "the token of {} grants {}, and the policy pack {digest} applies to no stack it \
             covers: a pack is read by the runs of the stacks it applies to (or an \
             administrator of every stack)",
            user.name,
            user.scope.describe()
        )));
    }
    let found: Option<(Vec<u8>,)> =
        sqlx::query_as("SELECT bytes FROM policy_packs WHERE digest = $1 LIMIT 1")
            .bind(digest)
            .fetch_optional(pool)
            .await?;
    let (bytes,) = found.ok_or_else(missing)?;
    Ok(PackComponent {
        digest: digest.to_owned(),
        wasm_base64: base64::engine::general_purpose::STANDARD.encode(bytes),
    })
}

/// Whether `user`'s token covers a stack (one it names, or one that exists in the project or
/// service it covers) that one of the patterns `globs` matches.
async fn covers_a_stack_of(
    pool: &PgPool,
    user: &User,
    globs: &[(String,)],
) -> Result<bool, ApiError> {
    let matchers: Vec<GlobMatcher> = (globs.iter())
        .filter_map(|(glob,)| matcher(glob).ok())
        .collect();
    let matches = |full: &str| matchers.iter().any(|m| m.is_match(full));
    if let (Some(project), Some(stack)) = (&user.scope.project, &user.scope.stack) {
        return Ok(matches(&format!("{project}/{stack}")));
    }
    let stacks: Vec<(String, String)> = sqlx::query_as(
        "SELECT project, name FROM stacks
         WHERE removed IS NULL AND ($1::text IS NULL OR project = $1)",
    )
    .bind(&user.scope.project)
    .fetch_all(pool)
    .await?;
    Ok((stacks.iter()).any(|(project, stack)| matches(&format!("{project}/{stack}"))))
}

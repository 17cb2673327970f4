//! The versioned HTTP protocol, `/api/v1/…`: JSON in and out, errors as `{ "message": … }`.

use axum::extract::{DefaultBodyLimit, FromRef, Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{Value, json};
use sqlx::PgPool;
use uuid::Uuid;

use crate::auth::{Lease, User};
use crate::error::ApiError;
use crate::{journal, updates};

/// How the service runs.
#[derive(Debug, Clone)]
pub struct Options {
    /// How long a lease lasts unless renewed.
    pub lease_seconds: f64,
    /// The largest request body accepted; larger ones are answered 413.
    pub body_limit: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            lease_seconds: 300.0,
            body_limit: 64 << 20,
        }
    }
}

#[derive(Clone)]
pub(crate) struct App {
    pub pool: PgPool,
    pub options: Options,
}

impl FromRef<App> for PgPool {
    fn from_ref(app: &App) -> PgPool {
        app.pool.clone()
    }
}

/// The service's routes over `pool`.
pub fn router(pool: PgPool, options: Options) -> Router {
    let limit = options.body_limit;
    Router::new()
        .route("/api/v1/health", get(|| async { "ok" }))
        .route("/api/v1/user", get(user))
        .route("/api/v1/stacks/{project}", get(list_stacks))
        .route(
            "/api/v1/stacks/{project}/{stack}",
            get(get_stack).post(create_stack),
        )
        .route(
            "/api/v1/stacks/{project}/{stack}/updates",
            post(begin_update),
        )
        .route("/api/v1/stacks/{project}/{stack}/cancel", post(cancel))
        .route("/api/v1/updates/{id}/renew", post(renew))
        .route(
            "/api/v1/updates/{id}/journal",
            get(journal_entries).post(append_journal),
        )
        .route("/api/v1/updates/{id}/complete", post(complete))
        .layer(DefaultBodyLimit::max(limit))
        .with_state(App { pool, options })
}

async fn user(user: User) -> Json<Value> {
    Json(json!({ "name": user.name }))
}

/// Project and stack names as the CLI validates them: 1 to 100 letters, digits, `-`, `_` or
/// `.`, not starting with `.`. (Checked here again, without the engine, so that the service
/// does not rebuild when the engine changes.)
fn check_name(what: &str, name: &str) -> Result<(), ApiError> {
    let valid = (1..=100).contains(&name.len())
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if valid {
        Ok(())
    } else {
        Err(ApiError::BadRequest(format!(
            "invalid {what} name `{name}`: use 1 to 100 letters, digits, `-`, `_` or `.`, not starting with `.`"
        )))
    }
}

async fn stack_id(pool: &PgPool, project: &str, stack: &str) -> Result<i64, ApiError> {
    let found: Option<(i64,)> =
        sqlx::query_as("SELECT id FROM stacks WHERE project = $1 AND name = $2")
            .bind(project)
            .bind(stack)
            .fetch_optional(pool)
            .await?;
    found.map(|(id,)| id).ok_or_else(|| {
        ApiError::NotFound(format!(
            "stack `{stack}` does not exist; create it with `plinth stack init {stack}`"
        ))
    })
}

async fn list_stacks(
    _: User,
    State(pool): State<PgPool>,
    Path(project): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let stacks: Vec<(String, bool)> = sqlx::query_as(
        "SELECT s.name, EXISTS (SELECT 1 FROM updates u WHERE u.stack_id = s.id
                                  AND u.status = 'running' AND u.lease_expires >= now())
         FROM stacks s WHERE s.project = $1 ORDER BY s.name",
    )
    .bind(project)
    .fetch_all(&pool)
    .await?;
    let stacks: Vec<Value> = (stacks.into_iter())
        .map(|(name, locked)| json!({ "name": name, "locked": locked }))
        .collect();
    Ok(Json(json!({ "stacks": stacks })))
}

async fn get_stack(
    _: User,
    State(pool): State<PgPool>,
    Path((project, stack)): Path<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    stack_id(&pool, &project, &stack).await?;
    Ok(Json(json!({ "project": project, "name": stack })))
}

async fn create_stack(
    _: User,
    State(pool): State<PgPool>,
    Path((project, stack)): Path<(String, String)>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    check_name("project", &project)?;
    check_name("stack", &stack)?;
    let created = sqlx::query(
        "INSERT INTO stacks (project, name) VALUES ($1, $2) ON CONFLICT (project, name) DO NOTHING",
    )
    .bind(&project)
    .bind(&stack)
    .execute(&pool)
    .await?;
    if created.rows_affected() == 0 {
        return Err(ApiError::Conflict(format!(
            "stack `{stack}` already exists"
        )));
    }
    Ok((
        StatusCode::CREATED,
        Json(json!({ "project": project, "name": stack })),
    ))
}

#[derive(Deserialize)]
struct BeginRequest {
    kind: String,
}

async fn begin_update(
    user: User,
    State(app): State<App>,
    Path((project, stack)): Path<(String, String)>,
    Json(request): Json<BeginRequest>,
) -> Result<Json<updates::Begun>, ApiError> {
    let id = stack_id(&app.pool, &project, &stack).await?;
    let begun = updates::begin(
        &app.pool,
        &user,
        id,
        &stack,
        &request.kind,
        app.options.lease_seconds,
    )
    .await?;
    Ok(Json(begun))
}

async fn cancel(
    _: User,
    State(pool): State<PgPool>,
    Path((project, stack)): Path<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    let id = stack_id(&pool, &project, &stack).await?;
    let cancelled = updates::cancel(&pool, id).await?;
    Ok(Json(json!({ "cancelled": cancelled })))
}

async fn renew(
    _: User,
    Lease(lease): Lease,
    State(app): State<App>,
    Path(id): Path<Uuid>,
) -> Result<Json<Value>, ApiError> {
    let expires = updates::renew(&app.pool, id, &lease, app.options.lease_seconds).await?;
    Ok(Json(json!({ "lease_expires": expires })))
}

#[derive(Deserialize)]
struct CompleteRequest {
    result: String,
}

async fn complete(
    _: User,
    Lease(lease): Lease,
    State(pool): State<PgPool>,
    Path(id): Path<Uuid>,
    Json(request): Json<CompleteRequest>,
) -> Result<Json<Value>, ApiError> {
    updates::complete(&pool, id, &lease, &request.result).await?;
    Ok(Json(json!({})))
}

#[derive(Deserialize)]
struct JournalBatch {
    seq: i64,
    entries: Vec<Value>,
}

async fn append_journal(
    _: User,
    Lease(lease): Lease,
    State(pool): State<PgPool>,
    Path(id): Path<Uuid>,
    Json(batch): Json<JournalBatch>,
) -> Result<Json<Value>, ApiError> {
    let stored = journal::append(&pool, id, &lease, batch.seq, &batch.entries).await?;
    Ok(Json(
        json!({ "seq": batch.seq, "retry": stored == journal::Stored::Retry }),
    ))
}

/// What an update recorded, for recovery after a crash: its journal entries in order.
async fn journal_entries(
    _: User,
    State(pool): State<PgPool>,
    Path(id): Path<Uuid>,
) -> Result<Json<Value>, ApiError> {
    Ok(Json(
        json!({ "entries": journal::entries(&pool, id).await? }),
    ))
}

//! The versioned HTTP protocol, `/api/v1/…`: JSON in and out (gzipped either way when the
//! client says so), errors as `{ "message": … }`.

use std::sync::Arc;

use axum::extract::{DefaultBodyLimit, FromRef, Path, Query, State};
use axum::http::StatusCode;
use axum::middleware::{from_fn, from_fn_with_state};
use axum::response::IntoResponse;
use axum::routing::{delete, get, post, put};
use axum::{Json, Router};
use plinth_state::protocol::policy::{PackComponent, RequiredPacks};
use plinth_state::protocol::{
    BeginRequest, Cancelled, Checkpoint, Ciphertexts, CompleteRequest, EventBatch, HistoryPage,
    JournalBatch, ListedStack, PhaseRequest, Plaintexts, Recorded, Removed, RenameRequest, Renewed,
    StackCreated, StackFound, StackList, Stored, TagList, TagValue, Whoami,
};
use plinth_state::protocol::{Completed, Health, JournalEntries};
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;
use sqlx::PgPool;
use tower_http::CompressionLevel;
use tower_http::compression::CompressionLayer;
use tower_http::decompression::RequestDecompressionLayer;
use uuid::Uuid;

use crate::admission::Budget;
use crate::auth::{AccessToken, Lease, Level, Screened, User};
use crate::body::Body;
use crate::db::HotConnections;
use crate::error::ApiError;
use crate::metrics::Metrics;
use crate::oidc::{self, OidcConfig};
use crate::secrets::MasterKeys;
use crate::versions::{Source, StackKey};
use crate::{
    access, admission, answers, audit, checks, events, health, journal, policy_packs, rename,
    request_log, secrets, tags, updates, versions,
};

/// How the service runs.
#[derive(Debug, Clone)]
pub struct Options {
    /// How long a lease lasts unless renewed.
    pub lease_seconds: f64,
    /// The largest request body accepted; larger ones are answered 413.
    pub body_limit: usize,
    /// Seal the stacks' data keys; without them, requests to seal or open secrets are refused.
    pub master_keys: Option<Arc<MasterKeys>>,
    /// The most request body bytes a replica holds at once; more are answered 503 until
    /// some are done. At least `body_limit`.
    pub bodies_in_flight: usize,
    /// Record the last address of `X-Forwarded-For` as a request's source in the audit log
    /// (behind a proxy that sets it); by default the peer's address, which a client cannot
    /// forge.
    pub trust_forwarded_for: bool,
    /// The issuers whose ID tokens are exchanged for access tokens; none without it.
    pub oidc: Option<Arc<OidcConfig>>,
    /// How long a removed stack is kept, restorable, before it is purged.
    pub removed_stack_retention: std::time::Duration,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            lease_seconds: 300.0,
            body_limit: 64 << 20,
            master_keys: None,
            bodies_in_flight: 128 << 20,
            trust_forwarded_for: false,
            oidc: None,
            removed_stack_retention: std::time::Duration::from_secs(30 * 86_400),
        }
    }
}

#[derive(Clone)]
pub(crate) struct App {
    pub pool: PgPool,
    /// Connections for storing journal batches.
    pub hot: Arc<HotConnections>,
    pub options: Options,
    pub screened: Arc<Screened>,
    pub budget: Budget,
    pub metrics: Arc<Metrics>,
    /// The console's sign-in attempts, by source address (this replica's).
    pub sign_ins: Arc<crate::console::SignInLimit>,
}

impl FromRef<App> for Arc<Metrics> {
    fn from_ref(app: &App) -> Arc<Metrics> {
        app.metrics.clone()
    }
}

impl FromRef<App> for Arc<HotConnections> {
    fn from_ref(app: &App) -> Arc<HotConnections> {
        app.hot.clone()
    }
}

impl FromRef<App> for PgPool {
    fn from_ref(app: &App) -> PgPool {
        app.pool.clone()
    }
}

/// The service's routes over `pool`, counted in `metrics`.
pub fn router(pool: PgPool, options: Options, metrics: Arc<Metrics>) -> Router {
    let limit = options.body_limit;
    let app = App {
        budget: Budget::new(options.bodies_in_flight.max(limit)),
        hot: Arc::new(HotConnections::new(pool.clone())),
        pool,
        options,
        screened: Arc::default(),
        metrics,
        sign_ins: Arc::default(),
    };
    // The one route without an access token (its caller has none yet): outside the admission,
    // which reads a body only for a token found valid, under a small limit of its own.
    let exchange = Router::new()
        .route("/api/v1/oidc/exchange", post(oidc::exchange))
        .layer(DefaultBodyLimit::max(oidc::BODY_LIMIT))
        .layer(RequestDecompressionLayer::new());
    Router::new()
        // Liveness (the process serves) and readiness (it can do its work: its database is
        // reachable and migrated to this binary's schema), for load balancers and orchestrators.
        .route(
            "/livez",
            get(|| async {
                Json(Health {
                    schema: None,
                    status: "live".to_owned(),
                })
            }),
        )
        .route("/readyz", get(health::ready))
        .route("/api/v1/health", get(health::ready))
        .route("/api/v1/version", get(crate::release::version))
        .route("/api/v1/user", get(user))
        .route("/api/v1/stacks/{project}", get(list_stacks))
        .route(
            "/api/v1/stacks/{project}/{stack}",
            get(get_stack).post(create_stack).delete(remove_stack),
        )
        .route(
            "/api/v1/stacks/{project}/{stack}/updates",
            post(begin_update),
        )
        .route(
            "/api/v1/stacks/{project}/{stack}/rename",
            post(rename_stack),
        )
        .route("/api/v1/stacks/{project}/{stack}/tags", get(stack_tags))
        .route(
            "/api/v1/stacks/{project}/{stack}/tags/{name}",
            put(set_tag).delete(remove_tag),
        )
        .route("/api/v1/stacks/{project}/{stack}/cancel", post(cancel))
        .route("/api/v1/stacks/{project}/{stack}/history", get(history))
        .route("/api/v1/stacks/{project}/{stack}/export", get(export))
        .route("/api/v1/stacks/{project}/{stack}/secrets/seal", post(seal))
        .route("/api/v1/stacks/{project}/{stack}/secrets/open", post(open))
        .route("/api/v1/stacks/{project}/{stack}/logs", get(logs))
        .route(
            "/api/v1/stacks/{project}/{stack}/policy-packs",
            get(required_policy_packs),
        )
        .route("/api/v1/policy-packs/{digest}", get(policy_pack_component))
        .route("/api/v1/audit", get(access::audit))
        .route(
            "/api/v1/tokens",
            get(access::list_tokens).post(access::create_token),
        )
        .route("/api/v1/tokens/{id}", delete(access::revoke_token))
        .route("/api/v1/updates/{id}/phases", post(record_phase))
        .route("/api/v1/updates/{id}/renew", post(renew))
        .route(
            "/api/v1/updates/{id}/journal",
            get(journal_entries).post(append_journal),
        )
        .route("/api/v1/updates/{id}/events", post(append_events))
        .route("/api/v1/updates/{id}/complete", post(complete))
        .fallback(answers::no_route)
        // The limit holds for a body as decompressed: a small gzip bomb is refused (413).
        .layer(DefaultBodyLimit::max(limit))
        .layer(from_fn_with_state(app.clone(), admission::admit))
        .layer(RequestDecompressionLayer::new())
        .merge(exchange)
        .layer(from_fn(answers::json_errors))
        // The web console's pages: HTML, its own errors and headers, no API token.
        .merge(crate::console::router())
        // The fastest level: a checkpoint of 10,000 resources is 5 MB of JSON, sent at the
        // start of every update; the default level spent a fifth of the service's CPU on it
        // for little gain (JSON compresses well at any level).
        .layer(CompressionLayer::new().quality(CompressionLevel::Fastest))
        // Outermost: it sees every answer as it leaves, refusals of the layers above included.
        .layer(from_fn_with_state(app.clone(), request_log::observe))
        .layer(from_fn(crate::release::stamp))
        .with_state(app)
}

async fn user(user: User) -> Json<Whoami> {
    Json(Whoami {
        grants: user.scope.describe(),
        name: user.name,
    })
}

/// The id of stack `project/stack`; the names are checked first, as every request naming a
/// stack does.
pub(crate) async fn stack_id(pool: &PgPool, project: &str, stack: &str) -> Result<i64, ApiError> {
    checks::name("project", project)?;
    checks::name("stack", stack)?;
    let found: Option<(i64,)> = sqlx::query_as(
        "SELECT id FROM stacks WHERE project = $1 AND name = $2 AND removed IS NULL",
    )
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

pub(crate) async fn stack_key(
    pool: &PgPool,
    project: &str,
    stack: &str,
) -> Result<StackKey, ApiError> {
    Ok(StackKey {
        id: stack_id(pool, project, stack).await?,
        project: project.to_owned(),
        name: stack.to_owned(),
    })
}

async fn list_stacks(
    user: User,
    State(pool): State<PgPool>,
    Path(project): Path<String>,
) -> Result<Json<StackList>, ApiError> {
    checks::name("project", &project)?;
    user.may(Level::ReadNoSecrets, &project, None)?;
    // Id, name, locked, resource count as stored, and the checkpoint of a version without one.
    type Listed = (i64, String, bool, Option<i64>, Option<Vec<u8>>);
    let stacks: Vec<Listed> = sqlx::query_as(
        "SELECT s.id, s.name,
                EXISTS (SELECT 1 FROM updates u WHERE u.stack_id = s.id
                          AND u.status = 'running' AND u.lease_expires >= now()),
                v.resources, v.uncounted
         FROM stacks s
         LEFT JOIN LATERAL (SELECT resources,
                                   CASE WHEN resources IS NULL THEN checkpoint END AS uncounted
                            FROM versions WHERE stack_id = s.id
                            ORDER BY version DESC LIMIT 1) v ON true
         WHERE s.project = $1 AND ($2::text IS NULL OR s.name = $2)
           AND s.removed IS NULL
         ORDER BY s.name",
    )
    .bind(project)
    // A token for one stack sees that stack only.
    .bind(user.scope.stack)
    .fetch_all(&pool)
    .await?;
    let ids: Vec<i64> = stacks.iter().map(|s| s.0).collect();
    let mut tags = tags::of_stacks(&pool, &ids).await?;
    // Counting a version stored before counts were parses its checkpoint: CPU work, off the
    // async workers.
    let stacks = tokio::task::spawn_blocking(move || {
        (stacks.into_iter())
            .map(|(id, name, locked, counted, uncounted)| {
                let resources = versions::resources(counted, uncounted.as_deref())?;
                Ok(ListedStack {
                    locked,
                    name,
                    resources,
                    tags: tags.remove(&id).unwrap_or_default(),
                })
            })
            .collect::<Result<Vec<ListedStack>, ApiError>>()
    })
    .await
    .map_err(|e| ApiError::Internal(format!("counting resources: {e}")))??;
    Ok(Json(StackList { stacks }))
}

/// The stack, and the update running on it if there is one.
async fn get_stack(
    user: User,
    State(pool): State<PgPool>,
    Path((project, stack)): Path<(String, String)>,
) -> Result<Json<StackFound>, ApiError> {
    user.may(Level::ReadNoSecrets, &project, Some(&stack))?;
    let id = stack_id(&pool, &project, &stack).await?;
    let holder = updates::running(&pool, id).await?;
    Ok(Json(StackFound {
        holder,
        name: stack,
        project,
    }))
}

async fn create_stack(
    user: User,
    State(pool): State<PgPool>,
    Path((project, stack)): Path<(String, String)>,
) -> Result<(StatusCode, Json<StackCreated>), ApiError> {
    checks::name("project", &project)?;
    checks::name("stack", &stack)?;
    user.may(Level::Write, &project, Some(&stack))?;
    let mut tx = pool.begin().await?;
    let created = sqlx::query(
        "INSERT INTO stacks (project, name) VALUES ($1, $2)
         ON CONFLICT (project, name) WHERE removed IS NULL DO NOTHING",
    )
    .bind(&project)
    .bind(&stack)
    .execute(&mut *tx)
    .await?;
    if created.rows_affected() == 0 {
        return Err(ApiError::Conflict(format!(
            "stack `{stack}` already exists"
        )));
    }
    let on = Some((project.as_str(), stack.as_str()));
    audit::record(&mut tx, &user.actor(), audit::Action::StackCreated, on, "").await?;
    tx.commit().await?;
    Ok((
        StatusCode::CREATED,
        Json(StackCreated {
            name: stack,
            project,
        }),
    ))
}

async fn begin_update(
    user: User,
    State(app): State<App>,
    Path((project, stack)): Path<(String, String)>,
    Body(request): Body<BeginRequest>,
) -> Result<impl IntoResponse, ApiError> {
    checks::kind(&request.kind)?;
    let config = crate::config_keys::checked(&request.config)?;
    user.may(Level::Write, &project, Some(&stack))?;
    let key = stack_key(&app.pool, &project, &stack).await?;
    let mut begun = updates::begin(
        &app.pool,
        &app.metrics,
        &user,
        &key,
        updates::Beginning {
            kind: &request.kind,
            request_id: request.request_id,
            config: config.as_ref(),
        },
        app.options.lease_seconds,
    )
    .await?;
    let base = begun.base_checkpoint.take().map(Checkpoint::into_text);
    Ok((
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        begun.answer(base, request.checkpoint_embedded),
    ))
}

/// The policy packs a run of the stack must run (a preview takes no update, so asks here).
async fn required_policy_packs(
    user: User,
    State(pool): State<PgPool>,
    Path((project, stack)): Path<(String, String)>,
) -> Result<Json<RequiredPacks>, ApiError> {
    user.may(Level::ReadNoSecrets, &project, Some(&stack))?;
    stack_id(&pool, &project, &stack).await?;
    let mut conn = pool.acquire().await?;
    let packs = policy_packs::applying(&mut conn, &project, &stack).await?;
    Ok(Json(RequiredPacks { packs }))
}

/// A pack's component, to any token: packs are rules, not secrets, and a run of any stack the
/// caller may read may need it.
async fn policy_pack_component(
    user: User,
    State(pool): State<PgPool>,
    Path(digest): Path<String>,
) -> Result<Json<PackComponent>, ApiError> {
    Ok(Json(policy_packs::component(&pool, &user, &digest).await?))
}

async fn cancel(
    user: User,
    State(pool): State<PgPool>,
    Path((project, stack)): Path<(String, String)>,
) -> Result<Json<Cancelled>, ApiError> {
    user.may(Level::Write, &project, Some(&stack))?;
    let key = stack_key(&pool, &project, &stack).await?;
    let cancelled = updates::cancel(&pool, &user.actor(), &key).await?;
    Ok(Json(Cancelled { cancelled }))
}

async fn renew(
    _: User,
    Lease(lease): Lease,
    State(app): State<App>,
    Path(id): Path<Uuid>,
) -> Result<Json<Renewed>, ApiError> {
    let expires = updates::renew(&app.pool, id, &lease, app.options.lease_seconds).await?;
    Ok(Json(Renewed {
        lease_expires: expires,
    }))
}

async fn complete(
    user: User,
    Lease(lease): Lease,
    State(pool): State<PgPool>,
    Path(id): Path<Uuid>,
    Body(request): Body<CompleteRequest>,
) -> Result<Json<Completed>, ApiError> {
    if let Some(entry) = &request.entry {
        checks::entry(entry)?;
    }
    let entry = request.entry.as_ref();
    updates::complete(&pool, &user.actor(), id, &lease, &request.result, entry).await?;
    Ok(Json(Completed {}))
}

async fn append_journal(
    AccessToken(token): AccessToken,
    Lease(lease): Lease,
    State(pool): State<PgPool>,
    State(hot): State<Arc<HotConnections>>,
    State(metrics): State<Arc<Metrics>>,
    Path(id): Path<Uuid>,
    Body(batch): Body<JournalBatch>,
) -> Result<Json<Stored>, ApiError> {
    checks::seq("journal batches", batch.seq)?;
    let waiting = &metrics.journal_waiting;
    let stored = journal::append(
        (&pool, &hot),
        &token,
        id,
        &lease,
        batch.seq,
        &batch.entries,
        waiting,
    )
    .await?;
    if stored != journal::Stored::Retry {
        metrics.journal_batches.inc();
        let bytes: usize = batch.entries.iter().map(|entry| entry.get().len()).sum();
        metrics.journal_bytes.inc_by(bytes as u64);
    }
    Ok(Json(Stored {
        retry: stored == journal::Stored::Retry,
        seq: batch.seq,
    }))
}

/// What an update recorded, for recovery after a crash: its journal entries in order.
async fn journal_entries(
    user: User,
    State(pool): State<PgPool>,
    Path(id): Path<Uuid>,
) -> Result<Json<JournalEntries>, ApiError> {
    let (project, stack) = updates::stack_of(&pool, id).await?;
    user.may(Level::ReadNoSecrets, &project, Some(&stack))?;
    Ok(Json(JournalEntries {
        entries: journal::entries(&pool, id).await?,
    }))
}

async fn append_events(
    AccessToken(token): AccessToken,
    Lease(lease): Lease,
    State(pool): State<PgPool>,
    Path(id): Path<Uuid>,
    // Each event parsed once, into what a log keeps.
    Body(batch): Body<EventBatch<Vec<Box<RawValue>>>>,
) -> Result<Json<Stored>, ApiError> {
    checks::seq("event batches", batch.seq)?;
    let stored = events::append(&pool, &token, id, &lease, batch.seq, &batch.events).await?;
    Ok(Json(Stored {
        retry: stored == journal::Stored::Retry,
        seq: batch.seq,
    }))
}

#[derive(Deserialize)]
struct LogsQuery {
    /// The update, as history counts them; the latest if absent.
    update: Option<i64>,
    /// The page after the one that answered this `next`.
    #[serde(default)]
    after: i64,
}

/// A page of the events of one of the stack's updates (the latest by default).
async fn logs(
    user: User,
    State(pool): State<PgPool>,
    Path((project, stack)): Path<(String, String)>,
    Query(query): Query<LogsQuery>,
) -> Result<impl IntoResponse, ApiError> {
    user.may(Level::ReadNoSecrets, &project, Some(&stack))?;
    let id = stack_id(&pool, &project, &stack).await?;
    match events::page_json(&pool, id, query.update, query.after).await? {
        Some(page) => Ok((
            [(axum::http::header::CONTENT_TYPE, "application/json")],
            page,
        )),
        None => Err(ApiError::NotFound(match query.update {
            None => format!("stack `{stack}` has no updates yet"),
            Some(number) => format!(
                "stack `{stack}` has no update {number}: `plinth stack history` lists its updates"
            ),
        })),
    }
}

async fn record_phase(
    user: User,
    Lease(lease): Lease,
    State(pool): State<PgPool>,
    Path(id): Path<Uuid>,
    Body(request): Body<PhaseRequest>,
) -> Result<Json<Recorded>, ApiError> {
    checks::entry(&request.entry)?;
    if request.phase < 1 {
        return Err(ApiError::BadRequest(format!(
            "phases are numbered from 1, not {}",
            request.phase
        )));
    }
    let source = match request.checkpoint {
        Some(text) => Source::Checkpoint(text.into_bytes()),
        None => Source::Journal {
            plugins: request.plugins,
        },
    };
    let actor = user.actor();
    let version = updates::phase(
        &pool,
        &actor,
        id,
        &lease,
        request.phase,
        &request.entry,
        source,
    )
    .await?;
    Ok(Json(Recorded { version }))
}

/// The most history entries a page carries, as the client asks for them.
const PER_PAGE: i64 = plinth_state::protocol::HISTORY_PAGE as i64;

#[derive(Deserialize)]
struct Page {
    #[serde(default = "first_page")]
    page: i64,
    #[serde(default = "page_size")]
    per_page: i64,
}

fn first_page() -> i64 {
    1
}

fn page_size() -> i64 {
    50
}

/// The stack's versions, newest first, a page at a time.
async fn history(
    user: User,
    State(pool): State<PgPool>,
    Path((project, stack)): Path<(String, String)>,
    Query(page): Query<Page>,
) -> Result<Json<HistoryPage<Value>>, ApiError> {
    user.may(Level::ReadNoSecrets, &project, Some(&stack))?;
    if !(1..=checks::MAX_SEQ).contains(&page.page) || !(1..=PER_PAGE).contains(&page.per_page) {
        return Err(ApiError::BadRequest(format!(
            "page {} of {} per page: pages count from 1, with 1 to {PER_PAGE} entries",
            page.page, page.per_page
        )));
    }
    let id = stack_id(&pool, &project, &stack).await?;
    let (listed, total) = versions::history(&pool, id, page.page, page.per_page).await?;
    Ok(Json(HistoryPage {
        total,
        versions: listed,
    }))
}

#[derive(Deserialize)]
struct ExportQuery {
    version: Option<i64>,
}

/// A version's checkpoint (the latest by default), secrets sealed as the client sealed them.
async fn export(
    user: User,
    State(pool): State<PgPool>,
    Path((project, stack)): Path<(String, String)>,
    Query(query): Query<ExportQuery>,
) -> Result<([(axum::http::HeaderName, &'static str); 1], Vec<u8>), ApiError> {
    user.may(Level::ReadNoSecrets, &project, Some(&stack))?;
    let key = stack_key(&pool, &project, &stack).await?;
    let bytes = versions::export(&pool, &key, query.version).await?;
    Ok((
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        bytes,
    ))
}

#[derive(Deserialize)]
struct RemoveQuery {
    #[serde(default)]
    force: bool,
}

/// Removes a stack with its versions and updates; one that still has resources only with
/// `force`, and never one being updated.
/// Removes a stack: it is kept, invisible, for the retention period, and the answer's `note`
/// says until when and how it is restored.
async fn remove_stack(
    user: User,
    State(app): State<App>,
    Path((project, stack)): Path<(String, String)>,
    Query(query): Query<RemoveQuery>,
) -> Result<Json<Removed>, ApiError> {
    user.may(Level::Admin, &project, Some(&stack))?;
    let key = stack_key(&app.pool, &project, &stack).await?;
    versions::remove(&app.pool, &user.actor(), &key, user.id, query.force).await?;
    let kept = humantime::format_duration(app.options.removed_stack_retention);
    let note = format!(
        "the service keeps it for {kept}: until then its administrator can restore it \
         (`plinth serve stack restore {project}/{stack}`)"
    );
    Ok(Json(Removed { note: Some(note) }))
}

/// Renames the stack; a token must be allowed to write both the stack and its new name.
async fn rename_stack(
    user: User,
    State(app): State<App>,
    Path((project, stack)): Path<(String, String)>,
    Body(request): Body<RenameRequest>,
) -> Result<Json<StackCreated>, ApiError> {
    checks::name("stack", &request.name)?;
    user.may(Level::Admin, &project, Some(&stack))?;
    user.may(Level::Admin, &project, Some(&request.name))?;
    let key = stack_key(&app.pool, &project, &stack).await?;
    rename::rename(&app.pool, &user.actor(), &key, &request.name).await?;
    Ok(Json(StackCreated {
        name: request.name,
        project,
    }))
}

async fn stack_tags(
    user: User,
    State(pool): State<PgPool>,
    Path((project, stack)): Path<(String, String)>,
) -> Result<Json<TagList>, ApiError> {
    user.may(Level::ReadNoSecrets, &project, Some(&stack))?;
    let id = stack_id(&pool, &project, &stack).await?;
    Ok(Json(TagList {
        tags: tags::list(&pool, id).await?,
    }))
}

async fn set_tag(
    user: User,
    State(pool): State<PgPool>,
    Path((project, stack, name)): Path<(String, String, String)>,
    Body(request): Body<TagValue>,
) -> Result<Json<TagList>, ApiError> {
    user.may(Level::Write, &project, Some(&stack))?;
    let id = stack_id(&pool, &project, &stack).await?;
    tags::set(&pool, id, &name, &request.value).await?;
    Ok(Json(TagList {
        tags: tags::list(&pool, id).await?,
    }))
}

async fn remove_tag(
    user: User,
    State(pool): State<PgPool>,
    Path((project, stack, name)): Path<(String, String, String)>,
) -> Result<Json<TagList>, ApiError> {
    user.may(Level::Write, &project, Some(&stack))?;
    let id = stack_id(&pool, &project, &stack).await?;
    if !tags::remove(&pool, id, &name).await? {
        return Err(ApiError::NotFound(format!(
            "stack `{stack}` has no tag `{}`",
            checks::shown(&name)
        )));
    }
    Ok(Json(TagList {
        tags: tags::list(&pool, id).await?,
    }))
}

/// Seals a batch of values with the stack's data key (made on first use).
async fn seal(
    user: User,
    State(app): State<App>,
    Path((project, stack)): Path<(String, String)>,
    Body(request): Body<Plaintexts>,
) -> Result<Json<Ciphertexts>, ApiError> {
    user.may(Level::Write, &project, Some(&stack))?;
    let id = stack_id(&app.pool, &project, &stack).await?;
    let master = app.options.master_keys.as_deref();
    let sealed = secrets::seal_values(&app.pool, master, id, &request.plaintexts).await?;
    Ok(Json(Ciphertexts {
        ciphertexts: sealed,
    }))
}

/// Opens a batch of values the stack's data key sealed; an empty batch checks that the stack's
/// secrets can be opened at all.
async fn open(
    user: User,
    State(app): State<App>,
    Path((project, stack)): Path<(String, String)>,
    Body(request): Body<Ciphertexts>,
) -> Result<Json<Plaintexts>, ApiError> {
    user.may_open(&project, &stack)?;
    let id = stack_id(&app.pool, &project, &stack).await?;
    let master = app.options.master_keys.as_deref();
    let opened = secrets::open_values(&app.pool, master, id, &stack, &request.ciphertexts).await?;
    Ok(Json(Plaintexts { plaintexts: opened }))
}

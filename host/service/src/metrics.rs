//! What a replica has done, in Prometheus's text format, for `GET /metrics` on the address
//! `--metrics-listen` names. The counters are this replica's (Prometheus sums replicas); what the
//! database knows (updates running) is read from it when scraped, so every replica says the same.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;
use axum::routing::get;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use sqlx::PgPool;

/// The longest a scrape waits for the database.
const QUERY_WITHIN: Duration = Duration::from_secs(2);

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Answered {
    method: String,
    /// The route's template (`/api/v1/stacks/{project}/{stack}`), never a request's path: names
    /// stay out of the metrics, and their number stays bounded.
    route: String,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Route {
    method: String,
    route: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Connections {
    state: &'static str,
}

type Latencies = Family<Route, Histogram, fn() -> Histogram>;

/// A replica's metrics.
pub struct Metrics {
    registry: Registry,
    requests: Family<Answered, Counter>,
    latency: Latencies,
    /// Running updates whose lease this replica found expired, giving their stack up.
    pub(crate) leases_expired: Counter,
    pub(crate) journal_batches: Counter,
    pub(crate) journal_bytes: Counter,
    /// Journal batches that came before the one ahead of them, waiting for it on this replica.
    pub(crate) journal_waiting: Gauge,
    updates_running: Gauge,
    database_up: Gauge,
    connections: Family<Connections, Gauge>,
    connections_max: Gauge,
}

fn latency_buckets() -> Histogram {
    // 1 ms to about 33 s.
    Histogram::new(exponential_buckets(0.001, 2.0, 16))
}

impl Metrics {
    pub fn new() -> Arc<Metrics> {
        let mut registry = Registry::with_prefix("plinth");
        let requests = Family::<Answered, Counter>::default();
        let latency: Latencies = Family::new_with_constructor(latency_buckets);
        let metrics = Metrics {
            requests: requests.clone(),
            latency: latency.clone(),
            leases_expired: Counter::default(),
            journal_batches: Counter::default(),
            journal_bytes: Counter::default(),
            journal_waiting: Gauge::default(),
            updates_running: Gauge::default(),
            database_up: Gauge::default(),
            connections: Family::default(),
            connections_max: Gauge::default(),
            registry: Registry::default(),
        };
        registry.register(
            "http_requests",
            "Requests answered, by method, route template and status",
            requests,
        );
        registry.register(
            "http_request_duration_seconds",
            "Time from a request's arrival to its answer's head, by method and route template",
            latency,
        );
        registry.register(
            "leases_expired",
            "Running updates whose lease this replica found expired when another update began",
            metrics.leases_expired.clone(),
        );
        registry.register(
            "journal_batches_received",
            "Journal batches stored (retries of a stored batch not counted again)",
            metrics.journal_batches.clone(),
        );
        registry.register(
            "journal_received_bytes",
            "Bytes of the journal batches stored, as their JSON entries",
            metrics.journal_bytes.clone(),
        );
        registry.register(
            "journal_batches_waiting",
            "Journal batches that came before the one ahead of them (sent while it committed), \
             waiting for it on this replica",
            metrics.journal_waiting.clone(),
        );
        registry.register(
            "updates_running",
            "Updates running on the database (every replica's), as of the scrape",
            metrics.updates_running.clone(),
        );
        registry.register(
            "database_up",
            "Whether the database answered the scrape (1) or not (0)",
            metrics.database_up.clone(),
        );
        registry.register(
            "database_connections",
            "This replica's database connections, idle or in use",
            metrics.connections.clone(),
        );
        registry.register(
            "database_connections_max",
            "The most database connections this replica opens",
            metrics.connections_max.clone(),
        );
        Arc::new(Metrics {
            registry,
            ..metrics
        })
    }

    /// Counts a request answered `status` after `took`.
    pub(crate) fn answered(&self, method: &str, route: &str, status: u16, took: Duration) {
        let (method, route) = (method.to_owned(), route.to_owned());
        self.latency
            .get_or_create(&Route {
                method: method.clone(),
                route: route.clone(),
            })
            .observe(took.as_secs_f64());
        self.requests
            .get_or_create(&Answered {
                method,
                route,
                status,
            })
            .inc();
    }

    /// Reads what the database and the pool know now.
    async fn refresh(&self, pool: &PgPool) {
        let running =
            sqlx::query_as::<_, (i64,)>("SELECT count(*) FROM updates WHERE status = 'running'")
                .fetch_one(pool);
        match tokio::time::timeout(QUERY_WITHIN, running).await {
            Ok(Ok((running,))) => {
                self.updates_running.set(running);
                self.database_up.set(1);
            }
            _ => {
                self.database_up.set(0);
            }
        }
        let (size, idle) = (i64::from(pool.size()), pool.num_idle() as i64);
        self.connections
            .get_or_create(&Connections { state: "idle" })
            .set(idle);
        self.connections
            .get_or_create(&Connections { state: "in_use" })
            .set(size - idle);
        self.connections_max
            .set(i64::from(pool.options().get_max_connections()));
    }
}

/// `GET /metrics` alone, for the metrics address.
pub fn router(pool: PgPool, metrics: Arc<Metrics>) -> Router {
    Router::new()
        .route("/metrics", get(scrape))
        .with_state((pool, metrics))
}

async fn scrape(State((pool, metrics)): State<(PgPool, Arc<Metrics>)>) -> impl IntoResponse {
    metrics.refresh(&pool).await;
    let mut text = String::new();
    // Writing to a String cannot fail.
    let _ = prometheus_client::encoding::text::encode(&mut text, &metrics.registry);
    (
        [(
            CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        text,
    )
}

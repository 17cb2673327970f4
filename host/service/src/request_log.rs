//! One log line and one count per request: its method, route template, status, duration and
//! who made it (the user, or the id of the token a journal or event batch carried). Never its
//! path (names would reach the log), never a body.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::Response;

use crate::api::App;
use crate::checks;

/// Who made a request, as its extractors learn it.
#[derive(Clone, Default)]
pub(crate) struct Caller(Arc<Mutex<Who>>);

#[derive(Default)]
struct Who {
    user: Option<String>,
    token: Option<String>,
}

impl Caller {
    pub(crate) fn user(&self, name: &str) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).user = Some(checks::shown(name));
    }

    /// The token's id, as `token list` shows it.
    pub(crate) fn token(&self, digest: &[u8]) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).token =
            Some(crate::tokens::token_id(digest));
    }
}

/// Logs and counts `request` once answered.
pub(crate) async fn observe(State(app): State<App>, mut request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = request.method().as_str().to_owned();
    // Outside a route (a path the protocol does not have) no template: the path is not shown.
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or("(none)", |path| path.as_str())
        .to_owned();
    let caller = Caller::default();
    request.extensions_mut().insert(caller.clone());
    let response = next.run(request).await;
    let took = started.elapsed();
    let status = response.status().as_u16();
    app.metrics.answered(&method, &route, status, took);
    let who = caller.0.lock().unwrap_or_else(|e| e.into_inner());
    tracing::info!(
        target: "plinth_service::request",
        method,
        route,
        status,
        duration_ms = took.as_secs_f64() * 1000.0,
        user = who.user.as_deref(),
        token = who.token.as_deref(),
        "answered"
    );
    response
}

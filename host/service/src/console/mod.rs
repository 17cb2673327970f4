//! The web console: server-rendered pages under `/` on the API's port, for people with a
//! browser. Every page is HTML built by maud (which escapes every value it is given), served
//! with a Content-Security-Policy that allows no inline script and no framing; every form
//! carries a CSRF token; a page shows what the signed-in token could read through the API, and
//! never a secret's plaintext (the console opens no secret).

mod actions;
mod admin;
mod assets;
mod errors;
mod headers;
mod history;
mod layout;
mod limit;
mod logs;
mod session;
mod stacks;
mod values;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::middleware::from_fn;
use axum::routing::{get, post};

use crate::api::App;
pub(crate) use limit::SignInLimit;

/// The largest form the console takes: a sign-in or an action, never data.
const FORM_LIMIT: usize = 16 << 10;

/// The console's routes.
pub(crate) fn router() -> Router<App> {
    Router::new()
        .route("/", get(stacks::list))
        .route("/signin", get(session::form).post(session::sign_in))
        .route("/signout", post(session::sign_out))
        .route("/tokens", get(admin::tokens).post(admin::create))
        .route("/tokens/revoke", post(admin::revoke))
        .route("/audit", get(admin::audit))
        .route("/assets/console.css", get(assets::css))
        .route("/assets/logs.js", get(assets::logs_js))
        .route("/stacks/{project}/{stack}", get(stacks::stack))
        .route("/stacks/{project}/{stack}/resource", get(stacks::resource))
        .route("/stacks/{project}/{stack}/cancel", post(actions::cancel))
        .route("/stacks/{project}/{stack}/history", get(history::list))
        .route("/stacks/{project}/{stack}/diff", get(history::diff))
        .route("/stacks/{project}/{stack}/logs", get(logs::page))
        .route("/stacks/{project}/{stack}/logs/live", get(logs::live))
        .layer(DefaultBodyLimit::max(FORM_LIMIT))
        .layer(from_fn(headers::secure))
}

//! The console's stylesheet and its one script, compiled into the binary: nothing is fetched
//! from elsewhere.

use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::response::IntoResponse;

const CSS: &str = include_str!("assets/console.css");
const LOGS_JS: &str = include_str!("assets/logs.js");

pub(super) async fn css() -> impl IntoResponse {
    (
        [
            (CONTENT_TYPE, "text/css; charset=utf-8"),
            (CACHE_CONTROL, "public, max-age=3600"),
        ],
        CSS,
    )
}

pub(super) async fn logs_js() -> impl IntoResponse {
    (
        [
            (CONTENT_TYPE, "text/javascript; charset=utf-8"),
            (CACHE_CONTROL, "public, max-age=3600"),
        ],
        LOGS_JS,
    )
}

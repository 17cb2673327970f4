//! The console's one stylesheet, compiled into the binary: nothing is fetched from elsewhere.

use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::response::IntoResponse;

const CSS: &str = include_str!("assets/console.css");

pub(super) async fn css() -> impl IntoResponse {
    (
        [
            (CONTENT_TYPE, "text/css; charset=utf-8"),
            (CACHE_CONTROL, "public, max-age=3600"),
        ],
        CSS,
    )
}

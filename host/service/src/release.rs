//! Which plinth this service is: `GET /api/v1/version` (no token needed: a client checks it
//! before it has one), and the version every answer names in a header, so that a client notices
//! a service too far from its own version on whatever request it makes first.

use axum::Json;
use axum::extract::Request;
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::Response;
use plinth_state::protocol::version::{ServiceVersion, VERSION_HEADER};

/// The service's version, the CLI's and the SDKs'.
const VERSION: &str = env!("CARGO_PKG_VERSION");

pub(crate) async fn version() -> Json<ServiceVersion> {
    Json(ServiceVersion {
        version: VERSION.to_owned(),
        commit: env!("PLINTH_COMMIT").to_owned(),
        api: "v1".to_owned(),
    })
}

/// Names the service's version on every answer, refusals included.
pub(crate) async fn stamp(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    (response.headers_mut()).insert(VERSION_HEADER, HeaderValue::from_static(VERSION));
    response
}

//! Every answer that is not a success is `{"message": …}` JSON, whoever made it: a handler, an
//! extractor refusing a body, path or query (axum answers those in plain text), a layer
//! (an encoding not supported), or the router (no such route, a method it does not take).

use axum::body::Body;
use axum::extract::Request;
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use plinth_state::protocol::Refusal;

use crate::checks::{shown, shown_up_to};
use crate::error::ApiError;

/// The most of a plain-text refusal quoted in its JSON form.
const QUOTED: usize = 4096;

/// Rewrites a refusal that is not JSON into `{"message"}`, saying what the request got wrong.
/// A refusal of a body's shape (422) is a 400, as every other malformed request.
pub(crate) async fn json_errors(request: Request, next: Next) -> Response {
    let route = format!("{} {}", request.method(), shown(request.uri().path()));
    let response = next.run(request).await;
    let status = response.status();
    let is_json = (response.headers().get(CONTENT_TYPE))
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if status.is_success() || status.is_informational() || status.is_redirection() || is_json {
        return response;
    }
    let (parts, body) = response.into_parts();
    let text = match axum::body::to_bytes(body, QUOTED).await {
        Ok(bytes) => String::from_utf8_lossy(&bytes).trim().to_owned(),
        Err(_) => String::new(),
    };
    let status = match status {
        StatusCode::UNPROCESSABLE_ENTITY => StatusCode::BAD_REQUEST,
        other => other,
    };
    let message = match (status, text.is_empty()) {
        (StatusCode::NOT_FOUND, _) => no_such_route(&route),
        (StatusCode::METHOD_NOT_ALLOWED, _) => {
            format!("{route} is not a request of the plinth service's protocol")
        }
        (StatusCode::UNSUPPORTED_MEDIA_TYPE, true) => {
            "the request body's encoding is not supported: send JSON, as it is or gzipped \
             (`Content-Encoding: gzip`)"
                .to_owned()
        }
        (_, false) => format!("{}: {}", shown_up_to(&text, 1000), hint(status)),
        (_, true) => format!(
            "{route}: {}",
            status.canonical_reason().unwrap_or("refused")
        ),
    };
    let mut response = (status, axum::Json(Refusal::saying(message))).into_response();
    for (name, value) in &parts.headers {
        if name != CONTENT_TYPE && name != axum::http::header::CONTENT_LENGTH {
            response.headers_mut().append(name, value.clone());
        }
    }
    response
}

/// What to do about a refusal of `status`.
fn hint(status: StatusCode) -> &'static str {
    match status {
        StatusCode::BAD_REQUEST => "correct the request (docs/service-protocol.md documents it)",
        StatusCode::PAYLOAD_TOO_LARGE => "the service's `--body-limit` is lower; send less at once",
        StatusCode::UNSUPPORTED_MEDIA_TYPE => "send JSON with `Content-Type: application/json`",
        _ => "the request was refused",
    }
}

/// The answer to a route the service does not have.
pub(crate) async fn no_route(request: Request) -> ApiError {
    let route = format!("{} {}", request.method(), shown(request.uri().path()));
    ApiError::NotFound(no_such_route(&route))
}

fn no_such_route(route: &str) -> String {
    format!(
        "there is no {route} in the plinth service's protocol: the backend URL is the service's \
         root (https://plinth.example.com, without a path), and this plinth may be newer or \
         older than the service"
    )
}

/// A JSON answer of `status` saying `message`, for the layers that answer before a handler.
pub(crate) fn refusal(status: StatusCode, message: impl Into<String>) -> Response {
    let mut response = Response::new(Body::from(
        serde_json::to_vec(&Refusal::saying(message)).expect("JSON serializes"),
    ));
    *response.status_mut() = status;
    (response.headers_mut()).insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

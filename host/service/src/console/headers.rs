//! The headers every console answer carries, and the refusal of a form posted from another
//! site.

use axum::extract::Request;
use axum::http::header::{
    CACHE_CONTROL, CONTENT_SECURITY_POLICY, HOST, ORIGIN, REFERRER_POLICY, X_CONTENT_TYPE_OPTIONS,
    X_FRAME_OPTIONS,
};
use axum::http::{HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::errors::page;

/// Scripts, styles and images from the console itself only, never inline; no framing; forms
/// post only to the console.
pub(crate) const POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; \
     frame-ancestors 'none'";

/// Adds the security headers to every answer; refuses a POST whose `Origin` is another site's
/// (the CSRF token refuses it too: this is the second lock).
pub(super) async fn secure(request: Request, next: Next) -> Response {
    let mut response = match request.method() == Method::POST && !same_origin(&request) {
        true => page(
            StatusCode::FORBIDDEN,
            "Refused",
            "this form was posted from another site: sign in and use the console's own forms",
        )
        .into_response(),
        false => next.run(request).await,
    };
    let headers = response.headers_mut();
    for (name, value) in [
        (CONTENT_SECURITY_POLICY, POLICY),
        (X_FRAME_OPTIONS, "DENY"),
        (X_CONTENT_TYPE_OPTIONS, "nosniff"),
        // Not `no-referrer`: under it a browser sends `Origin: null` with the console's own
        // forms, which the origin check must refuse.
        (REFERRER_POLICY, "same-origin"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    // Pages show live state and may be a user's only: never kept by a cache (the stylesheet
    // sets its own).
    headers
        .entry(CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-store"));
    response
}

/// Whether the request's `Origin`, if it has one, names the host it was sent to.
fn same_origin(request: &Request) -> bool {
    let Some(origin) = request.headers().get(ORIGIN) else {
        return true;
    };
    let host = request.headers().get(HOST).and_then(|h| h.to_str().ok());
    let origin_host = (origin.to_str().ok())
        .and_then(|o| o.split_once("://"))
        .map(|(_, host)| host);
    matches!((origin_host, host), (Some(o), Some(h)) if o.eq_ignore_ascii_case(h))
}

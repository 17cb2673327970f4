//! What a console request that fails answers: a page saying what went wrong and what to do,
//! or, without a session, the sign-in form.

use axum::http::StatusCode;
use axum::http::header::LOCATION;
use axum::response::{IntoResponse, Response};
use maud::html;

use super::layout;
use crate::error::ApiError;

#[derive(Debug, thiserror::Error)]
pub(super) enum ConsoleError {
    /// No session, or one that ended (signed out, expired, its token revoked or expired).
    #[error("sign in")]
    SignIn,
    /// A form without the session's CSRF token.
    #[error("the form's CSRF token is missing or stale")]
    Csrf,
    #[error(transparent)]
    Api(#[from] ApiError),
}

impl From<sqlx::Error> for ConsoleError {
    fn from(e: sqlx::Error) -> ConsoleError {
        ConsoleError::Api(ApiError::Database(e))
    }
}

impl IntoResponse for ConsoleError {
    fn into_response(self) -> Response {
        match self {
            ConsoleError::SignIn => {
                (StatusCode::SEE_OTHER, [(LOCATION, "/signin")]).into_response()
            }
            ConsoleError::Csrf => page(
                StatusCode::FORBIDDEN,
                "Refused",
                "this form's CSRF token is missing or not this session's: reload the page and \
                 submit it again",
            )
            .into_response(),
            ConsoleError::Api(e) => {
                // A database's or the service's own failure is logged, not shown.
                let message = match &e {
                    ApiError::Database(_) => {
                        "the service's database is unavailable; try again shortly".to_owned()
                    }
                    ApiError::Internal(_) => "the service failed; see its log".to_owned(),
                    other => other.to_string(),
                };
                let status = e.into_response().status();
                page(
                    status,
                    status.canonical_reason().unwrap_or("Error"),
                    &message,
                )
                .into_response()
            }
        }
    }
}

/// A page of `status` saying `message`.
pub(super) fn page(status: StatusCode, title: &str, message: &str) -> Response {
    let body = html! {
        h1 { (title) }
        p.error { (message) }
        p { a href="/" { "Stacks" } }
    };
    (status, layout::bare(title, body)).into_response()
}

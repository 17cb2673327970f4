//! Errors as the protocol answers them: a status and a JSON body whose `message` says what was
//! wrong and what to do.

use axum::Json;
use axum::http::header::RETRY_AFTER;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use plinth_state::protocol::{Refusal, Running};

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{0}")]
    Unauthorized(String),
    /// The update's lease is gone (expired and taken, or cancelled): its client must stop.
    #[error("{0}")]
    LeaseLost(String),
    /// The token does not grant what the request needs.
    #[error("{0}")]
    Forbidden(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Conflict(String),
    /// The stack is being updated: who holds it, for the caller to show.
    #[error(
        "stack `{stack}` is being updated by {user} ({kind}, started at unix time {started}, lease expires at unix time {lease_expires})"
    )]
    Busy {
        stack: String,
        user: String,
        kind: String,
        started: u64,
        lease_expires: u64,
    },
    #[error("{0}")]
    BadRequest(String),
    /// A journal the state cannot be rebuilt from (a phase's: the client's mistake).
    #[error("the state cannot be rebuilt: {0}")]
    Unrebuildable(String),
    /// A body that is not JSON.
    #[error("{0}")]
    Unsupported(String),
    #[error("{0}")]
    TooLarge(String),
    /// The service was not set up for the request (secrets without a master key).
    #[error("{0}")]
    NotConfigured(String),
    /// This replica cannot serve the request (a master key the database no longer uses): another
    /// replica may. Logged loudly, since only its operator can fix it.
    #[error("{0}")]
    Unavailable(String),
    #[error("internal error: {0}")]
    Internal(String),
    #[error("database: {0}")]
    Database(#[from] sqlx::Error),
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = match &self {
            ApiError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            ApiError::LeaseLost(_) | ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::Conflict(_) | ApiError::Busy { .. } => StatusCode::CONFLICT,
            ApiError::BadRequest(_) | ApiError::Unrebuildable(_) => StatusCode::BAD_REQUEST,
            ApiError::Unsupported(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            // Not 503: retrying cannot help until the service is started otherwise.
            ApiError::NotConfigured(_) => StatusCode::NOT_IMPLEMENTED,
            ApiError::Unavailable(message) => {
                tracing::error!("{message}");
                StatusCode::SERVICE_UNAVAILABLE
            }
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
            // A value the database refuses (a data exception) came from the request: every field
            // is checked before it reaches SQL, so this is only the net under those checks.
            ApiError::Database(e) if is_data_exception(e) => {
                tracing::warn!("the database refused a value of a request: {e}");
                let message = "the request holds a value the service cannot store (a string \
                               with a NUL character, a number out of range): correct it";
                return (StatusCode::BAD_REQUEST, Json(Refusal::saying(message))).into_response();
            }
            // The database may be restarting: the client retries. Its own words stay in the
            // log: they may quote what a request sent.
            ApiError::Database(e) => {
                tracing::warn!("database error: {e}");
                let message = "the service's database is unavailable; try again shortly";
                let mut response = (
                    StatusCode::SERVICE_UNAVAILABLE,
                    Json(Refusal::saying(message)),
                )
                    .into_response();
                response
                    .headers_mut()
                    .insert(RETRY_AFTER, HeaderValue::from_static("1"));
                return response;
            }
        };
        let mut body = Refusal::saying(self.to_string());
        // Both are 403; a client tells a refusal of its token from a lost lease by this.
        body.forbidden = matches!(self, ApiError::Forbidden(_));
        if let ApiError::Busy {
            user,
            kind,
            started,
            lease_expires,
            ..
        } = &self
        {
            body.holder = Some(Running {
                kind: kind.clone(),
                lease_expires: *lease_expires,
                started: *started,
                user: user.clone(),
            });
        }
        let mut response = (status, Json(body)).into_response();
        if status == StatusCode::SERVICE_UNAVAILABLE {
            (response.headers_mut()).insert(RETRY_AFTER, HeaderValue::from_static("1"));
        }
        response
    }
}

impl From<crate::tokens::TokenError> for ApiError {
    fn from(e: crate::tokens::TokenError) -> ApiError {
        use crate::tokens::TokenError;
        match e {
            TokenError::Invalid(message) => ApiError::BadRequest(message),
            TokenError::NotFound(message) => ApiError::NotFound(message),
            TokenError::NotYours(message) => ApiError::Forbidden(message),
            TokenError::Database(e) => ApiError::Database(e),
        }
    }
}

/// Whether the database refused a value as such (SQLSTATE class 22: a NUL in text, a number
/// out of range), rather than failed to serve.
fn is_data_exception(e: &sqlx::Error) -> bool {
    (e.as_database_error())
        .and_then(|e| e.code())
        .is_some_and(|code| code.starts_with("22"))
}

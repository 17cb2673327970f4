//! Errors as the protocol answers them: a status and a JSON body whose `message` says what was
//! wrong and what to do.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

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
        started: i64,
        lease_expires: i64,
    },
    #[error("{0}")]
    BadRequest(String),
    /// The service was not set up for the request (secrets without a master key).
    #[error("{0}")]
    NotConfigured(String),
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
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            // Not 503: retrying cannot help until the service is started otherwise.
            ApiError::NotConfigured(_) => StatusCode::NOT_IMPLEMENTED,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
            // The database may be restarting: the client retries.
            ApiError::Database(e) => {
                tracing::warn!("database error: {e}");
                StatusCode::SERVICE_UNAVAILABLE
            }
        };
        let mut body = json!({ "message": self.to_string() });
        // Both are 403; a client tells a refusal of its token from a lost lease by this.
        if let ApiError::Forbidden(_) = &self {
            body["forbidden"] = json!(true);
        }
        if let ApiError::Busy {
            user,
            kind,
            started,
            lease_expires,
            ..
        } = &self
        {
            body["holder"] = json!({
                "user": user, "kind": kind, "started": started, "lease_expires": lease_expires,
            });
        }
        (status, Json(body)).into_response()
    }
}

//! A JSON request body, refused with `{"message"}` saying what is wrong with it: axum's own
//! refusals are plain text, and a body of the wrong shape is a 422 where every other malformed
//! request is a 400.

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRequest, Request};
use serde::de::DeserializeOwned;

use crate::checks::shown_up_to;
use crate::error::ApiError;

pub(crate) struct Body<T>(pub T);

impl<S, T> FromRequest<S> for Body<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Body<T>, ApiError> {
        let refused = |e: JsonRejection| shown_up_to(&e.body_text(), 1000);
        match Json::<T>::from_request(request, state).await {
            Ok(Json(value)) => Ok(Body(value)),
            Err(JsonRejection::MissingJsonContentType(_)) => Err(ApiError::Unsupported(
                "the request body must be JSON, sent with `Content-Type: application/json`"
                    .to_owned(),
            )),
            Err(e @ JsonRejection::JsonSyntaxError(_)) => Err(ApiError::BadRequest(format!(
                "the request body is not JSON: {}",
                refused(e)
            ))),
            Err(e @ JsonRejection::JsonDataError(_)) => Err(ApiError::BadRequest(format!(
                "the request body is not of the shape this request takes (docs/service-protocol.md \
                 documents it): {}",
                refused(e)
            ))),
            Err(e) if e.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE => {
                Err(ApiError::TooLarge(refused(e)))
            }
            Err(e) => Err(ApiError::BadRequest(refused(e))),
        }
    }
}

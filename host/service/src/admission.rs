//! A bound on the memory request bodies take: each body's bytes are admitted against one budget
//! for the whole replica (`--bodies-in-flight`), held until its answer is made. A body that does
//! not fit while others are in flight is answered 503 with `Retry-After` (another replica, or
//! this one a moment later, takes it), rather than taking the replica's memory with it: a body
//! costs several times its size while it is parsed and answered.
//!
//! The access token is screened first, so that a caller without a valid one never makes the
//! service read a body; a declared length is admitted before a byte is read.

use std::sync::Arc;

use axum::body::{Body, HttpBody};
use axum::extract::{FromRequestParts, Request, State};
use axum::http::StatusCode;
use axum::http::header::{CONTENT_LENGTH, RETRY_AFTER};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use bytes::BytesMut;
use http_body_util::BodyExt;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::answers::refusal;
use crate::api::App;
use crate::auth::AccessToken;

/// Bytes are admitted in units of this many (a semaphore counts at most `u32` at once).
const UNIT: usize = 1024;

/// The replica's budget of body bytes in flight.
#[derive(Clone)]
pub(crate) struct Budget {
    units: Arc<Semaphore>,
    /// The whole budget, in bytes, for messages.
    bytes: usize,
}

impl Budget {
    pub(crate) fn new(bytes: usize) -> Budget {
        Budget {
            units: Arc::new(Semaphore::new(bytes.div_ceil(UNIT))),
            bytes,
        }
    }

    /// Admits `bytes` more, or refuses at once.
    fn admit(&self, bytes: usize, held: &mut Option<OwnedSemaphorePermit>) -> bool {
        let units = u32::try_from(bytes.div_ceil(UNIT)).unwrap_or(u32::MAX);
        if units == 0 {
            return true;
        }
        match self.units.clone().try_acquire_many_owned(units) {
            Ok(permit) => {
                match held {
                    Some(held) => held.merge(permit),
                    None => *held = Some(permit),
                }
                true
            }
            Err(_) => false,
        }
    }
}

/// Reads the request's body within the body limit and the replica's budget, then runs the
/// request with it; the body's share of the budget is given back once the answer is made.
pub(crate) async fn admit(State(app): State<App>, request: Request, next: Next) -> Response {
    let (mut parts, body) = request.into_parts();
    if body.size_hint().exact() == Some(0) {
        return next.run(Request::from_parts(parts, body)).await;
    }
    if let Err(refused) = AccessToken::from_request_parts(&mut parts, &app).await {
        return refused.into_response();
    }
    let limit = app.options.body_limit;
    let too_large = || {
        refusal(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "the request body is larger than this service's limit of {limit} bytes (as \
                 decompressed; `plinth serve --body-limit`): send less at once"
            ),
        )
    };
    let declared = (parts.headers.get(CONTENT_LENGTH))
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|declared| declared > limit) {
        return too_large();
    }
    let budget = &app.budget;
    let busy = || {
        let mut response = refusal(
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "this replica has {} bytes of request bodies in flight, its limit \
                 (`--bodies-in-flight`); try again in a moment",
                budget.bytes
            ),
        );
        (response.headers_mut()).insert(RETRY_AFTER, "1".parse().expect("a header value"));
        response
    };
    let mut held = None;
    let mut admitted = declared.unwrap_or(0);
    let mut body = body;
    if !budget.admit(admitted, &mut held) {
        // Read and dropped as it comes (within the limit, which holds here), so that the
        // client, still sending it, reads the answer rather than a broken connection.
        discard(body, limit).await;
        return busy();
    }
    let mut bytes = BytesMut::with_capacity(admitted);
    while let Some(frame) = body.frame().await {
        let frame = match frame {
            Ok(frame) => frame,
            Err(e) => {
                return refusal(
                    StatusCode::BAD_REQUEST,
                    format!("the request body could not be read: {e}"),
                );
            }
        };
        let Ok(data) = frame.into_data() else {
            continue;
        };
        if bytes.len() + data.len() > limit {
            return too_large();
        }
        bytes.extend_from_slice(&data);
        // A body longer than it said, or of no declared length (a gzipped one, as
        // decompressed), is admitted as it comes.
        if bytes.len() > admitted {
            let more = (bytes.len() - admitted).max(64 * UNIT);
            if !budget.admit(more, &mut held) {
                drop(bytes);
                discard(body, limit).await;
                return busy();
            }
            admitted += more;
        }
    }
    let request = Request::from_parts(parts, Body::from(bytes.freeze()));
    let response = next.run(request).await;
    drop(held);
    response
}

/// Reads `body` to its end, keeping nothing, unless it goes on past `limit` bytes.
async fn discard(mut body: Body, limit: usize) {
    let mut read = 0;
    while let Some(Ok(frame)) = body.frame().await {
        read += frame.data_ref().map_or(0, |data| data.len());
        if read > limit {
            return;
        }
    }
}

//! What the console changes, each a form with the session's CSRF token, each checked at the
//! level the API's own request needs (a button the token may not use is not drawn, and its
//! form posted anyway is refused), and audited as the API's request is.

use axum::Form;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::http::header::LOCATION;
use axum::response::{IntoResponse, Response};
use maud::{Markup, html};
use serde::Deserialize;

use super::errors::ConsoleError;
use super::session::Viewer;
use crate::api::{App, stack_key};
use crate::auth::Level;
use crate::error::ApiError;

/// The cancel form of `project/stack`, drawn only for a viewer who may cancel.
pub(super) fn cancel_form(viewer: &Viewer, project: &str, stack: &str) -> Markup {
    html! {
        @if viewer.user.may(Level::Write, project, Some(stack)).is_ok() {
            form #cancel method="post" action={ "/stacks/" (project) "/" (stack) "/cancel" } {
                input type="hidden" name="csrf" value=(viewer.csrf);
                label {
                    input type="checkbox" name="confirm" value="yes" required;
                    " I want to cancel this update: its client stops at its next request"
                }
                button type="submit" { "Cancel the update" }
            }
        }
    }
}

#[derive(Deserialize)]
pub(super) struct Confirmed {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    confirm: String,
}

/// `POST /stacks/P/S/cancel`: cancels the running update, as `plinth cancel` does.
pub(super) async fn cancel(
    viewer: Viewer,
    State(app): State<App>,
    Path((project, stack)): Path<(String, String)>,
    Form(form): Form<Confirmed>,
) -> Result<Response, ConsoleError> {
    viewer.check(&form.csrf)?;
    viewer.user.may(Level::Write, &project, Some(&stack))?;
    if form.confirm != "yes" {
        return Err(ApiError::BadRequest(
            "cancelling an update needs its confirmation: tick the box, then submit".to_owned(),
        )
        .into());
    }
    let key = stack_key(&app.pool, &project, &stack).await?;
    crate::updates::cancel(&app.pool, &viewer.user.actor(), &key).await?;
    let back = format!("/stacks/{project}/{stack}");
    Ok((StatusCode::SEE_OTHER, [(LOCATION, back)]).into_response())
}

//! Tokens and the audit log, under the API's own rules: a user lists, makes and revokes their
//! own tokens (an administrator of every stack, anyone's), a new token is shown once, on the
//! page that made it; the audit log is for a token granting admin, on what it covers.

use axum::Form;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::http::header::LOCATION;
use axum::response::{IntoResponse, Response};
use maud::{Markup, html};
use plinth_state::protocol::TokenCreated;
use serde::Deserialize;

use super::errors::ConsoleError;
use super::layout;
use super::session::Viewer;
use crate::access::{AuditQuery, CreateRequest, audit_page, make_token};
use crate::api::App;
use crate::auth::Level;
use crate::error::ApiError;
use crate::tokens::{self, Revoke};

/// The tokens page, with the token just made if there is one.
async fn tokens_page(
    viewer: &Viewer,
    app: &App,
    made: Option<&TokenCreated>,
) -> Result<Markup, ConsoleError> {
    let admin = viewer.user.scope.everywhere(Level::Admin);
    let whose = (!admin).then_some(viewer.user.name.as_str());
    let listed = tokens::list(&app.pool, whose).await?;
    let body = html! {
        h1 { "Access tokens" }
        @if let Some(made) = made {
            div #made {
                p.changed { "Your new token, shown this once: copy it now." }
                pre #new-token { (made.token) }
                p { "It grants " (made.grants) "." }
            }
        }
        table #tokens {
            tr { th { "ID" } th { "User" } th { "Name" } th { "Grants" } th { "Created" } th { "Status" } th { "Last used" } th { "" } }
            @for token in &listed {
                tr {
                    td { code { (token.id) } }
                    td { (token.user) }
                    td { (token.description) }
                    td { (token.scope) }
                    td { (token.created) }
                    td { (token.status) }
                    td { (token.last_used) }
                    td { @if token.status.starts_with("active") {
                        form.revoke method="post" action="/tokens/revoke" {
                            input type="hidden" name="csrf" value=(viewer.csrf);
                            input type="hidden" name="id" value=(token.id);
                            button type="submit" { "Revoke" }
                        }
                    } }
                }
            }
        }
        h2 { "New token" }
        form #create method="post" action="/tokens" {
            input type="hidden" name="csrf" value=(viewer.csrf);
            label for="name" { "What it is for" }
            input #name type="text" name="name" maxlength="200";
            label for="level" { "Level (at most yours: " (viewer.user.scope.describe()) ")" }
            select #level name="level" {
                @for level in ["read-no-secrets", "read", "write", "admin"] {
                    @if Level::parse(level).is_some_and(|l| l <= viewer.user.scope.level) {
                        option value=(level) selected[level == "read"] { (level) }
                    }
                }
            }
            label for="project" { "Project (empty: " @if let Some(p) = &viewer.user.scope.project { (p) } @else { "every project" } ")" }
            input #project type="text" name="project" maxlength="100";
            label for="stack" { "Stack (empty: every stack of the project)" }
            input #stack type="text" name="stack" maxlength="100";
            p { button type="submit" { "Create" } }
        }
    };
    Ok(layout::page("Tokens", viewer, body))
}

/// `GET /tokens`.
pub(super) async fn tokens(viewer: Viewer, State(app): State<App>) -> Result<Markup, ConsoleError> {
    tokens_page(&viewer, &app, None).await
}

#[derive(Deserialize)]
pub(super) struct Create {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    level: String,
    #[serde(default)]
    project: String,
    #[serde(default)]
    stack: String,
}

/// An empty field as absent.
fn given(text: String) -> Option<String> {
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_owned())
}

/// `POST /tokens`: a new token, shown once on the page this answers.
pub(super) async fn create(
    viewer: Viewer,
    State(app): State<App>,
    Form(form): Form<Create>,
) -> Result<Response, ConsoleError> {
    viewer.check(&form.csrf)?;
    let request = CreateRequest {
        name: form.name,
        level: given(form.level),
        project: given(form.project),
        stack: given(form.stack),
        expires_in: None,
    };
    let made = make_token(&viewer.user, &app.pool, request).await?;
    let page = tokens_page(&viewer, &app, Some(&made)).await?;
    Ok((StatusCode::CREATED, page).into_response())
}

#[derive(Deserialize)]
pub(super) struct RevokeForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    id: String,
}

/// `POST /tokens/revoke`: revokes a token of the user's own (anyone's, for an administrator
/// of every stack), as `DELETE tokens/ID` does.
pub(super) async fn revoke(
    viewer: Viewer,
    State(app): State<App>,
    Form(form): Form<RevokeForm>,
) -> Result<Response, ConsoleError> {
    viewer.check(&form.csrf)?;
    let owner = match viewer.user.scope.everywhere(Level::Admin) {
        true => None,
        false => Some(viewer.user.name.as_str()),
    };
    tokens::revoke(&app.pool, &viewer.user.actor(), Revoke::Id(&form.id), owner)
        .await
        .map_err(ApiError::from)?;
    Ok((StatusCode::SEE_OTHER, [(LOCATION, "/tokens")]).into_response())
}

#[derive(Deserialize)]
pub(super) struct AuditFilter {
    #[serde(default)]
    stack: String,
    #[serde(default)]
    user: String,
    before: Option<i64>,
}

/// `GET /audit?stack=P/S&user=U`: the audit log, newest first.
pub(super) async fn audit(
    viewer: Viewer,
    State(app): State<App>,
    Query(filter): Query<AuditFilter>,
) -> Result<Markup, ConsoleError> {
    let query = AuditQuery {
        stack: given(filter.stack.clone()),
        user: given(filter.user.clone()),
        since: None,
        before: filter.before,
        per_page: Some(100),
    };
    let (entries, next) = audit_page(&viewer.user, &app.pool, query).await?;
    let body = html! {
        h1 { "Audit log" }
        form method="get" action="/audit" {
            "Stack " input type="text" name="stack" value=(filter.stack) placeholder="project or project/stack";
            " User " input type="text" name="user" value=(filter.user);
            " " button type="submit" { "Filter" }
        }
        table #audit {
            tr { th { "When (UTC)" } th { "Action" } th { "User" } th { "Token" } th { "From" } th { "Stack" } th { "Detail" } }
            @for entry in &entries {
                tr {
                    td { (entry.at) }
                    td { (entry.action) }
                    td { (entry.user) }
                    td { code { (entry.token.as_deref().unwrap_or("")) } }
                    td { (entry.source) }
                    td { (entry.project.as_deref().unwrap_or("")) @if let Some(stack) = &entry.stack { "/" (stack) } }
                    td { (entry.detail) }
                }
            }
        }
        @if let Some(next) = next {
            p.pages { a href={ "/audit?stack=" (super::stacks::encoded(&filter.stack)) "&user=" (super::stacks::encoded(&filter.user)) "&before=" (next) } { "older" } }
        }
    };
    Ok(layout::page("Audit log", &viewer, body))
}

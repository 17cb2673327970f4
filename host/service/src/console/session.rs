//! Signing in and out. Signing in with an access token opens a session: a random id in an
//! `HttpOnly`, `SameSite=Strict` cookie (`Secure` when the request came over TLS), stored as its
//! digest with the token's, and expiring. Every request of a session acts as its token, looked up
//! as the API looks up a token: a revoked or expired token ends its sessions at once.

use axum::Form;
use axum::extract::{FromRequestParts, State};
use axum::http::HeaderMap;
use axum::http::header::{COOKIE, LOCATION, RETRY_AFTER, SET_COOKIE};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use cookie::{Cookie, SameSite};
use maud::html;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::time::{Duration, Instant};

use super::errors::ConsoleError;
use super::{layout, limit};
use crate::api::App;
use crate::audit::{self, Action, Actor};
use crate::auth::{self, User};
use crate::error::ApiError;

/// The session cookie's name.
const SESSION: &str = "plinth_session";
/// The sign-in form's CSRF cookie (there is no session yet to tie its token to).
const SIGN_IN: &str = "plinth_signin";
/// Who a refused sign-in is recorded as: its token matched no live one.
const UNKNOWN_USER: &str = "(unknown)";
/// How long a session lasts (the token's own expiry ends it sooner).
const SESSION_SECONDS: i64 = 8 * 3600;

/// A signed-in user: the session's token's user, and the CSRF token its forms carry.
pub(super) struct Viewer {
    pub user: User,
    pub csrf: String,
}

impl Viewer {
    /// Refuses a form whose CSRF token is not this session's.
    pub(super) fn check(&self, csrf: &str) -> Result<(), ConsoleError> {
        match same(csrf, &self.csrf) {
            true => Ok(()),
            false => Err(ConsoleError::Csrf),
        }
    }
}

impl FromRequestParts<App> for Viewer {
    type Rejection = ConsoleError;

    async fn from_request_parts(parts: &mut Parts, app: &App) -> Result<Viewer, ConsoleError> {
        let id = cookie(&parts.headers, SESSION).ok_or(ConsoleError::SignIn)?;
        let token: Option<(Vec<u8>,)> = sqlx::query_as(
            "SELECT token_digest FROM console_sessions WHERE digest = $1 AND expires > now()",
        )
        .bind(auth::digest(&id))
        .fetch_optional(&app.pool)
        .await?;
        let (token,) = token.ok_or(ConsoleError::SignIn)?;
        let user = match User::of_token(parts, app, token).await {
            Ok(user) => user,
            Err(ApiError::Unauthorized(_)) => return Err(ConsoleError::SignIn),
            Err(e) => return Err(e.into()),
        };
        if let Some(caller) = parts.extensions.get::<crate::request_log::Caller>() {
            caller.user(&user.name);
        }
        Ok(Viewer {
            user,
            csrf: csrf_of(&id),
        })
    }
}

/// A session's CSRF token: derived from its id, which only its cookie holds, so it needs no
/// storage and cannot be guessed from what the database keeps.
fn csrf_of(session: &str) -> String {
    hex::encode(Sha256::digest(format!("plinth-console-csrf:{session}")))
}

/// Compares two tokens in time independent of where they differ.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && !b.is_empty()
        && (a.bytes().zip(b.bytes())).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The value of cookie `name` in the request's `Cookie` headers.
fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    (headers.get_all(COOKIE).iter())
        .filter_map(|value| value.to_str().ok())
        .flat_map(Cookie::split_parse)
        .filter_map(Result::ok)
        .find(|c| c.name() == name)
        .map(|c| c.value().to_owned())
}

/// Whether the request came over TLS (to a proxy in front of the service, which says so).
fn over_tls(headers: &HeaderMap) -> bool {
    (headers.get("x-forwarded-proto")).is_some_and(|proto| proto.as_bytes() == b"https")
}

/// A `Set-Cookie` value: `HttpOnly`, `SameSite=Strict`, `Secure` over TLS.
fn set_cookie(
    headers: &HeaderMap,
    name: &str,
    value: &str,
    path: &str,
    seconds: i64,
) -> HeaderValue {
    let cookie = Cookie::build((name, value))
        .path(path)
        .http_only(true)
        .same_site(SameSite::Strict)
        .secure(over_tls(headers))
        .max_age(cookie::time::Duration::seconds(seconds))
        .build();
    HeaderValue::from_str(&cookie.to_string()).expect("a cookie of hex is a header value")
}

/// `GET /signin`: the form, with a new CSRF token in its cookie.
pub(super) async fn form(headers: HeaderMap) -> Response {
    sign_in_page(&headers, StatusCode::OK, None)
}

fn sign_in_page(headers: &HeaderMap, status: StatusCode, error: Option<&str>) -> Response {
    let csrf = auth::new_token();
    let body = html! {
        h1 { "Sign in to plinth" }
        @if let Some(error) = error { p.error { (error) } }
        form method="post" action="/signin" {
            input type="hidden" name="csrf" value=(csrf);
            label for="token" { "Access token" }
            input #token type="password" name="token" autocomplete="off" required;
            p { button type="submit" { "Sign in" } }
        }
        p { "A token comes from " code { "plinth serve token create" } " or " code { "plinth token create" } "." }
    };
    let mut response = (status, layout::bare("Sign in", body)).into_response();
    response.headers_mut().insert(
        SET_COOKIE,
        set_cookie(headers, SIGN_IN, &csrf, "/signin", 3600),
    );
    response
}

/// The answer to an address that tried too many tokens: the form again, saying when to retry.
fn too_many(headers: &HeaderMap, wait: Duration) -> Response {
    let seconds = wait.as_secs_f64().ceil() as u64;
    let message = format!(
        "too many sign-in attempts from your address: try again in {seconds} s (an address \
         gets {} attempts at once, then one every {} s)",
        limit::BURST,
        limit::REFILL.as_secs()
    );
    let mut response = sign_in_page(headers, StatusCode::TOO_MANY_REQUESTS, Some(&message));
    response
        .headers_mut()
        .insert(RETRY_AFTER, HeaderValue::from(seconds));
    response
}

#[derive(Deserialize)]
pub(super) struct SignIn {
    #[serde(default)]
    token: String,
    #[serde(default)]
    csrf: String,
}

/// `POST /signin`: opens a session for a live token.
pub(super) async fn sign_in(
    State(app): State<App>,
    parts: Parts,
    Form(form): Form<SignIn>,
) -> Result<Response, ConsoleError> {
    let expected = cookie(&parts.headers, SIGN_IN).unwrap_or_default();
    if !same(&form.csrf, &expected) {
        return Err(ConsoleError::Csrf);
    }
    let source = audit::source(&parts, app.options.trust_forwarded_for);
    if let Err(wait) = app.sign_ins.take(&source, Instant::now()) {
        return Ok(too_many(&parts.headers, wait));
    }
    let token = form.token.trim();
    let digest = auth::digest(token);
    let user = match User::of_token(&parts, &app, digest.clone()).await {
        Ok(user) => user,
        Err(ApiError::Unauthorized(message)) => {
            let refused = Actor {
                user: Some(UNKNOWN_USER.to_owned()),
                token: None,
                source,
            };
            let mut conn = app.pool.acquire().await?;
            audit::record(&mut conn, &refused, Action::SignInFailed, None, &message).await?;
            return Ok(sign_in_page(
                &parts.headers,
                StatusCode::UNAUTHORIZED,
                Some(&message),
            ));
        }
        Err(e) => return Err(e.into()),
    };
    app.sign_ins.give_back(&source);
    let id = auth::new_token();
    sqlx::query(
        "INSERT INTO console_sessions (digest, token_digest, expires)
         VALUES ($1, $2, now() + make_interval(secs => $3))",
    )
    .bind(auth::digest(&id))
    .bind(&digest)
    .bind(SESSION_SECONDS as f64)
    .execute(&app.pool)
    .await?;
    // Sessions long expired are dropped as new ones open: the table stays small.
    sqlx::query("DELETE FROM console_sessions WHERE expires < now() - interval '1 day'")
        .execute(&app.pool)
        .await?;
    let mut conn = app.pool.acquire().await?;
    audit::record(
        &mut conn,
        &user.actor(),
        Action::SignedIn,
        None,
        &format!("a console session, as {}", user.scope.describe()),
    )
    .await?;
    tracing::info!(target: "plinth_service::console", user = %crate::checks::shown(&user.name), "signed in");
    let headers = &parts.headers;
    let mut response = (StatusCode::SEE_OTHER, [(LOCATION, "/")]).into_response();
    let set = response.headers_mut();
    set.append(
        SET_COOKIE,
        set_cookie(headers, SESSION, &id, "/", SESSION_SECONDS),
    );
    set.append(SET_COOKIE, set_cookie(headers, SIGN_IN, "", "/signin", 0));
    Ok(response)
}

#[derive(Deserialize)]
pub(super) struct Csrf {
    #[serde(default)]
    pub csrf: String,
}

/// `POST /signout`: ends the session.
pub(super) async fn sign_out(
    State(app): State<App>,
    headers: HeaderMap,
    viewer: Viewer,
    Form(form): Form<Csrf>,
) -> Result<Response, ConsoleError> {
    viewer.check(&form.csrf)?;
    if let Some(id) = cookie(&headers, SESSION) {
        let mut tx = app.pool.begin().await?;
        sqlx::query("DELETE FROM console_sessions WHERE digest = $1")
            .bind(auth::digest(&id))
            .execute(&mut *tx)
            .await?;
        audit::record(&mut tx, &viewer.user.actor(), Action::SignedOut, None, "").await?;
        tx.commit().await?;
    }
    let mut response = (StatusCode::SEE_OTHER, [(LOCATION, "/signin")]).into_response();
    (response.headers_mut()).append(SET_COOKIE, set_cookie(&headers, SESSION, "", "/", 0));
    Ok(response)
}

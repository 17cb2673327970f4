//! The stacks a token may read, one stack's resources as the CLI's tree, and one resource.

use std::collections::HashMap;

use axum::extract::{Path, Query, State};
use maud::{Markup, html};
use plinth_state::protocol::ConfigKey;
use serde::Deserialize;

use super::errors::ConsoleError;
use super::layout;
use super::session::Viewer;
use super::values::{self, Node};
use crate::api::{App, stack_key};
use crate::auth::Level;
use crate::error::ApiError;
use crate::versions;

/// The most stacks the list shows; a filter narrows it.
const MOST_STACKS: i64 = 500;
/// Rows of a stack's resource tree per page: a stack of 10,000 resources is 50 pages.
const TREE_PAGE: usize = 200;
/// The deepest indentation drawn (the stylesheet has a rule per level; no inline style).
const MAX_INDENT: usize = 12;

/// A query string's parameter, percent-encoded.
pub(super) fn encoded(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

/// Seconds as `1m 5s`.
pub(super) fn took(seconds: i64) -> String {
    humantime::format_duration(std::time::Duration::from_secs(seconds.max(0) as u64)).to_string()
}

/// Now, in seconds since the Unix epoch.
pub(super) fn unix_now() -> i64 {
    (std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH))
        .map_or(0, |d| d.as_secs() as i64)
}

/// When a lease expiring at Unix time `expires` ends, seen at `now`: "until 2026-11-27
/// 21:05:03 UTC (in 45 s)", or "expired at … (2 min ago)".
pub(super) fn lease(expires: i64, now: i64) -> String {
    let at = std::time::UNIX_EPOCH + std::time::Duration::from_secs(expires.max(0) as u64);
    let at = humantime::format_rfc3339_seconds(at).to_string();
    let at = at.replacen('T', " ", 1).replace('Z', " UTC");
    let left = expires - now;
    let span = |seconds: i64| match seconds {
        s if s < 120 => format!("{s} s"),
        s if s < 7200 => format!("{} min", s / 60),
        s => format!("{} h", s / 3600),
    };
    match left >= 0 {
        true => format!("until {at} (in {})", span(left)),
        false => format!("expired at {at} ({} ago)", span(-left)),
    }
}

#[derive(Deserialize)]
pub(super) struct ListQuery {
    #[serde(default)]
    filter: String,
}

#[derive(sqlx::FromRow)]
struct Listed {
    project: String,
    name: String,
    resources: Option<i64>,
    uncounted: Option<Vec<u8>>,
    kind: Option<String>,
    status: Option<String>,
    user: Option<String>,
    started: Option<String>,
    seconds: Option<i64>,
    lease_expires: Option<i64>,
}

/// `GET /`: the stacks the token may read, with their last update and any running one.
pub(super) async fn list(
    viewer: Viewer,
    State(app): State<App>,
    Query(query): Query<ListQuery>,
) -> Result<Markup, ConsoleError> {
    let scope = &viewer.user.scope;
    let filter = query.filter.trim();
    let rows: Vec<Listed> = sqlx::query_as(
        "SELECT s.project, s.name, v.resources, v.uncounted,
                u.kind, u.status, usr.name AS user,
                to_char(u.started AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') AS started,
                EXTRACT(EPOCH FROM coalesce(u.ended, now()) - u.started)::BIGINT AS seconds,
                CASE WHEN u.status = 'running' THEN
                    EXTRACT(EPOCH FROM u.lease_expires)::BIGINT
                END AS lease_expires
         FROM stacks s
         LEFT JOIN LATERAL (SELECT resources,
                                   CASE WHEN resources IS NULL THEN checkpoint END AS uncounted
                            FROM versions WHERE stack_id = s.id
                            ORDER BY version DESC LIMIT 1) v ON true
         LEFT JOIN LATERAL (SELECT * FROM updates WHERE stack_id = s.id
                            ORDER BY started DESC LIMIT 1) u ON true
         LEFT JOIN users usr ON usr.id = u.user_id
         WHERE s.removed IS NULL
           AND ($1::text IS NULL OR s.project = $1) AND ($2::text IS NULL OR s.name = $2)
           AND strpos(s.project || '/' || s.name, $3) > 0
         ORDER BY s.project, s.name LIMIT $4",
    )
    .bind(&scope.project)
    .bind(&scope.stack)
    .bind(filter)
    .bind(MOST_STACKS)
    .fetch_all(&app.pool)
    .await?;
    // Counting a version stored before counts were parses its checkpoint: CPU work, off the
    // async workers.
    let rows = tokio::task::spawn_blocking(move || {
        (rows.into_iter())
            .map(|row| {
                let count = versions::resources(row.resources, row.uncounted.as_deref())?;
                Ok((row, count))
            })
            .collect::<Result<Vec<_>, ApiError>>()
    })
    .await
    .map_err(|e| ApiError::Internal(format!("counting resources: {e}")))??;
    let now = unix_now();
    let body = html! {
        h1 { "Stacks" }
        form method="get" action="/" {
            input type="search" name="filter" value=(filter) placeholder="project/stack contains…";
            " " button type="submit" { "Filter" }
        }
        table #stacks {
            tr { th { "Stack" } th { "Resources" } th { "Last update" } th { "By" } th { "When (UTC)" } th { "Took" } th { "Running" } }
            @for (row, count) in &rows {
                tr {
                    td { a href={ "/stacks/" (row.project) "/" (row.name) } { (row.project) "/" (row.name) } }
                    td { (count) }
                    td { @if let (Some(kind), Some(status)) = (&row.kind, &row.status) { (kind) " · " (status) } @else { "none yet" } }
                    td { (row.user.as_deref().unwrap_or("")) }
                    td { (row.started.as_deref().unwrap_or("")) }
                    td { @if let Some(seconds) = row.seconds { (took(seconds)) } }
                    td { @if let Some(expires) = row.lease_expires {
                        "by " (row.user.as_deref().unwrap_or("?")) ", lease " (lease(expires, now))
                    } }
                }
            }
        }
        @if rows.is_empty() { p { "No stack to show." } }
    };
    Ok(layout::page("Stacks", &viewer, body))
}

/// A resource in the tree: how deep, and its index in the checkpoint.
struct Row {
    depth: usize,
    index: usize,
}

/// The resources in the order the CLI draws them: each under its parent, in checkpoint order.
fn tree(resources: &[Node]) -> Vec<Row> {
    let known: HashMap<&str, usize> = (resources.iter().enumerate())
        .map(|(i, r)| (r.urn.as_str(), i))
        .collect();
    let mut children: HashMap<usize, Vec<usize>> = HashMap::new();
    let mut roots = Vec::new();
    for (i, resource) in resources.iter().enumerate() {
        match resource.parent.as_deref().and_then(|p| known.get(p)) {
            Some(&parent) if parent != i => children.entry(parent).or_default().push(i),
            _ => roots.push(i),
        }
    }
    let mut rows = Vec::with_capacity(resources.len());
    let mut seen = vec![false; resources.len()];
    // A hostile state could loop parents: those resources are drawn from the top, each once.
    for start in roots.into_iter().chain(0..resources.len()) {
        let mut stack = vec![(start, 0)];
        while let Some((index, depth)) = stack.pop() {
            if std::mem::replace(&mut seen[index], true) {
                continue;
            }
            rows.push(Row { depth, index });
            if let Some(kids) = children.get(&index) {
                stack.extend(kids.iter().rev().map(|&k| (k, depth + 1)));
            }
        }
    }
    rows
}

#[derive(Deserialize)]
pub(super) struct TreeQuery {
    #[serde(default = "first")]
    page: usize,
}

fn first() -> usize {
    1
}

/// The latest checkpoint of `project/stack`, for a viewer who may read it, read by `read`
/// off the async workers.
async fn latest<T: Send + 'static>(
    viewer: &Viewer,
    app: &App,
    project: &str,
    stack: &str,
    read: fn(&[u8]) -> Result<T, ApiError>,
) -> Result<T, ConsoleError> {
    viewer
        .user
        .may(Level::ReadNoSecrets, project, Some(stack))?;
    let key = stack_key(&app.pool, project, stack).await?;
    let checkpoint = versions::export(&app.pool, &key, None).await?;
    let read = tokio::task::spawn_blocking(move || read(&checkpoint))
        .await
        .map_err(|e| ApiError::Internal(format!("reading a checkpoint: {e}")))??;
    Ok(read)
}

/// `GET /stacks/P/S`: the stack's resource tree, a page at a time, and its outputs.
pub(super) async fn stack(
    viewer: Viewer,
    State(app): State<App>,
    Path((project, stack)): Path<(String, String)>,
    Query(query): Query<TreeQuery>,
) -> Result<Markup, ConsoleError> {
    let resources = latest(&viewer, &app, &project, &stack, values::nodes).await?;
    let key = stack_key(&app.pool, &project, &stack).await?;
    let running = crate::updates::running(&app.pool, key.id).await?;
    let config = config_of(&app, key.id).await?;
    let rows = tree(&resources);
    let pages = rows.len().div_ceil(TREE_PAGE).max(1);
    let page = query.page.clamp(1, pages);
    let shown = rows.iter().skip((page - 1) * TREE_PAGE).take(TREE_PAGE);
    let root = resources
        .iter()
        .find(|r| plinth_engine::urn::is_stack_type(&r.ty));
    let outputs: serde_json::Map<String, serde_json::Value> = match root
        .and_then(|r| r.outputs.as_ref())
    {
        Some(raw) => serde_json::from_str(raw.get())
            .map_err(|e| ApiError::Internal(format!("a stored checkpoint does not parse: {e}")))?,
        None => serde_json::Map::new(),
    };
    let base = format!("/stacks/{project}/{stack}");
    let body = html! {
        h1 { "Stack " (project) "/" (stack) }
        p {
            a href={ (base) "/history" } { "History" } " · "
            a href={ (base) "/logs" } { "Log" }
        }
        @if let Some(holder) = &running {
            p.changed #running {
                "Being updated: " (holder.kind) " by " (holder.user) ", lease "
                (lease(holder.lease_expires as i64, unix_now()))
            }
            (super::actions::cancel_form(&viewer, &project, &stack))
        }
        h2 { "Resources (" (resources.len()) ")" }
        table #resources {
            tr { th { "Name" } th { "Type" } th { "Protected" } }
            @for row in shown {
                @let resource = &resources[row.index];
                tr {
                    td class={ "depth-" (row.depth.min(MAX_INDENT)) } {
                        a href={ (base) "/resource?urn=" (encoded(&resource.urn)) } { (resource.name()) }
                        @if resource.delete { " (awaiting deletion)" }
                    }
                    td { code { (resource.ty) } }
                    td { @if resource.protect { "protected" } }
                }
            }
        }
        @if pages > 1 {
            p.pages {
                "Page " (page) " of " (pages) ": "
                @if page > 1 { a href={ (base) "?page=" (page - 1) } { "previous" } }
                @if page < pages { a href={ (base) "?page=" (page + 1) } { "next" } }
            }
        }
        h2 { "Configuration" }
        @match &config {
            Some(config) => {
                p { "As the update begun " (config.started) " UTC by " (config.user) " ran with it." }
                table #config {
                    tr { th { "Key" } th { "Value" } }
                    @for key in &config.keys {
                        tr {
                            td { code { (key.key) } }
                            td { @if key.secret { (values::SECRET) } @else { (key.value.as_deref().unwrap_or("")) } }
                        }
                    }
                }
            }
            None => { p { "No update has said its configuration yet." } }
        }
        h2 { "Outputs" }
        @match outputs.is_empty() {
            false => {
                table #outputs {
                    tr { th { "Name" } th { "Value" } }
                    @for (name, value) in &outputs {
                        tr { td { (name) } td { pre { (serde_json::to_string_pretty(&values::shown(value)).expect("JSON serializes")) } } }
                    }
                }
            }
            true => { p { "None." } }
        }
    };
    Ok(layout::page(&format!("{project}/{stack}"), &viewer, body))
}

/// The configuration keys the latest update that sent them ran with.
struct Config {
    keys: Vec<ConfigKey>,
    started: String,
    user: String,
}

async fn config_of(app: &App, stack_id: i64) -> Result<Option<Config>, ConsoleError> {
    let row: Option<(sqlx::types::Json<Vec<ConfigKey>>, String, String)> = sqlx::query_as(
        "SELECT u.config, to_char(u.started AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS'),
                usr.name
         FROM updates u JOIN users usr ON usr.id = u.user_id
         WHERE u.stack_id = $1 AND u.config IS NOT NULL ORDER BY u.started DESC LIMIT 1",
    )
    .bind(stack_id)
    .fetch_optional(&app.pool)
    .await?;
    Ok(row.map(|(keys, started, user)| Config {
        // Checked when stored: no secret has a value; shown so all the same, whatever a row holds.
        keys: (keys.0.into_iter())
            .map(|key| ConfigKey {
                value: key.value.filter(|_| !key.secret),
                ..key
            })
            .collect(),
        started,
        user,
    }))
}

#[derive(Deserialize)]
pub(super) struct ResourceQuery {
    urn: String,
}

/// `GET /stacks/P/S/resource?urn=…`: one resource's inputs, outputs and dependencies.
pub(super) async fn resource(
    viewer: Viewer,
    State(app): State<App>,
    Path((project, stack)): Path<(String, String)>,
    Query(query): Query<ResourceQuery>,
) -> Result<Markup, ConsoleError> {
    let resources = latest(&viewer, &app, &project, &stack, values::resources).await?;
    let resource = (resources.iter().rev())
        .find(|r| r.urn == query.urn)
        .ok_or_else(|| {
            ApiError::NotFound(format!(
                "stack {project}/{stack} has no resource {}",
                crate::checks::shown(&query.urn)
            ))
        })?;
    let (inputs, outputs) = (resource.inputs()?, resource.outputs()?);
    let base = format!("/stacks/{project}/{stack}");
    let link =
        |urn: &str| html! { a href={ (base) "/resource?urn=" (encoded(urn)) } { code { (urn) } } };
    let body = html! {
        h1 { (resource.name()) }
        p { a href=(base) { "Stack " (project) "/" (stack) } }
        table #facts {
            tr { th { "URN" } td { code { (resource.urn) } } }
            tr { th { "Type" } td { code { (resource.ty) } } }
            tr { th { "Kind" } td { @if resource.custom { "custom" } @else { "component" } } }
            @if !resource.id.is_empty() { tr { th { "ID" } td { code { (resource.id) } } } }
            tr { th { "Protected" } td { @if resource.protect { "yes" } @else { "no" } } }
            @if let Some(parent) = &resource.parent { tr { th { "Parent" } td { (link(parent)) } } }
        }
        h2 { "Dependencies" }
        @if resource.dependencies.is_empty() { p { "None." } }
        ul { @for dependency in &resource.dependencies { li { (link(dependency)) } } }
        h2 { "Inputs" }
        pre #inputs { (values::pretty(&inputs)) }
        h2 { "Outputs" }
        pre #outputs { (values::pretty(&outputs)) }
    };
    Ok(layout::page(resource.name(), &viewer, body))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resource(urn: &str, parent: Option<&str>) -> Node {
        serde_json::from_value(serde_json::json!({ "urn": urn, "type": "t", "parent": parent }))
            .unwrap()
    }

    #[test]
    fn a_lease_shows_as_a_time_and_how_far_off_it_is() {
        let at = 1_795_813_503; // 2026-11-27 21:05:03 UTC
        assert_eq!(
            lease(at, at - 45),
            "until 2026-11-27 21:05:03 UTC (in 45 s)"
        );
        assert_eq!(
            lease(at, at - 600),
            "until 2026-11-27 21:05:03 UTC (in 10 min)"
        );
        assert_eq!(
            lease(at, at + 150),
            "expired at 2026-11-27 21:05:03 UTC (2 min ago)"
        );
    }

    #[test]
    fn the_tree_draws_children_under_parents_and_each_resource_once() {
        let resources = [
            resource("a", None),
            resource("b", Some("a")),
            resource("c", None),
            resource("d", Some("b")),
            // A loop of parents, as a hostile state could hold: each drawn once.
            resource("e", Some("f")),
            resource("f", Some("e")),
        ];
        let rows: Vec<(usize, usize)> = tree(&resources)
            .iter()
            .map(|r| (r.index, r.depth))
            .collect();
        assert_eq!(rows, [(0, 0), (1, 1), (3, 2), (2, 0), (4, 0), (5, 1)]);
    }
}

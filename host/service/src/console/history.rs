//! A stack's history, newest first, and the difference between two of its versions: resources
//! added, removed and changed, down to the property (as shown: a secret's change is not).

use std::collections::{BTreeMap, HashMap};

use axum::extract::{Path, Query, State};
use maud::{Markup, html};
use serde::Deserialize;
use serde_json::Value;

use super::errors::ConsoleError;
use super::layout;
use super::session::Viewer;
use super::stacks::{encoded, took};
use super::values::{self, Resource};
use crate::api::{App, stack_key};
use crate::auth::Level;
use crate::error::ApiError;
use crate::versions;

/// Versions per page of history.
const PER_PAGE: i64 = 50;

#[derive(Deserialize)]
pub(super) struct HistoryQuery {
    #[serde(default = "first")]
    page: i64,
}

fn first() -> i64 {
    1
}

/// A field of a history entry as text, if it is there.
fn text<'a>(entry: &'a Value, field: &str) -> Option<&'a str> {
    entry.get(field).and_then(Value::as_str)
}

/// What an update's history entry says it checked: the policy packs that ran, with their
/// violations, and the saved plan it applied, as the client reported them.
pub(super) fn checks(entry: &Value) -> Markup {
    let packs = entry.get("policy_packs").and_then(Value::as_array);
    let plan = entry.get("plan").filter(|p| p.is_object());
    let count = |pack: &Value, field: &str| pack.get(field).and_then(Value::as_u64).unwrap_or(0);
    html! {
        @if let Some(packs) = packs.filter(|p| !p.is_empty()) {
            ul.packs { @for pack in packs {
                li {
                    "policy " (text(pack, "name").unwrap_or("?"))
                    @if let Some(version) = text(pack, "version").filter(|v| !v.is_empty()) { " " (version) }
                    ": "
                    @match (count(pack, "mandatory"), count(pack, "advisory")) {
                        (0, 0) => { "passed" }
                        (mandatory, advisory) => {
                            @if mandatory > 0 { span.removed { (mandatory) " mandatory" } }
                            @if mandatory > 0 && advisory > 0 { ", " }
                            @if advisory > 0 { span.changed { (advisory) " advisory" } }
                            " violation(s)"
                        }
                    }
                }
            } }
        }
        @if let Some(plan) = plan {
            p.plan {
                "Applied a saved plan of "
                (plan.get("steps").and_then(Value::as_u64).unwrap_or(0)) " step(s), made against version "
                (plan.get("made-against").and_then(Value::as_u64).unwrap_or(0))
            }
        }
    }
}

/// `GET /stacks/P/S/history`: the stack's versions, newest first.
pub(super) async fn list(
    viewer: Viewer,
    State(app): State<App>,
    Path((project, stack)): Path<(String, String)>,
    Query(query): Query<HistoryQuery>,
) -> Result<Markup, ConsoleError> {
    viewer
        .user
        .may(Level::ReadNoSecrets, &project, Some(&stack))?;
    let key = stack_key(&app.pool, &project, &stack).await?;
    let pages_of = |total: i64| (total + PER_PAGE - 1) / PER_PAGE;
    let page = query.page.clamp(1, crate::checks::MAX_SEQ);
    let (listed, total) = versions::history(&app.pool, key.id, page, PER_PAGE).await?;
    let base = format!("/stacks/{project}/{stack}");
    let body = html! {
        h1 { "History of " (project) "/" (stack) }
        p { a href=(base) { "Stack " (project) "/" (stack) } }
        table #history {
            tr { th { "Version" } th { "Kind" } th { "Result" } th { "By" } th { "Changes" } th { "Took" } th { "Message" } th { "CI" } th { "Checks" } th { "" } th { "" } }
            @for version in &listed {
                @let entry = &version.entry;
                @let changes = entry.get("changes");
                @let count = |field: &str| changes.and_then(|c| c.get(field)).and_then(Value::as_u64).unwrap_or(0);
                @let metadata = entry.get("metadata");
                @let meta = |field: &str| metadata.and_then(|m| m.get(field)).and_then(Value::as_str);
                tr {
                    td { (version.version) }
                    td { (text(entry, "kind").unwrap_or("?")) }
                    td { (text(entry, "result").unwrap_or("?")) }
                    td { (version.user.as_deref().unwrap_or("")) }
                    td {
                        "+" (count("create")) " ~" (count("update")) " ±" (count("replace")) " -" (count("delete"))
                        @if count("import") > 0 { " ⇐" (count("import")) }
                    }
                    td {
                        @if let (Some(started), Some(ended)) = (entry.get("started").and_then(Value::as_i64), entry.get("ended").and_then(Value::as_i64)) {
                            (took(ended - started))
                        }
                    }
                    td { (meta("message").or(text(entry, "note")).unwrap_or("")) }
                    td {
                        @if let Some(ci) = meta("ci") { (ci) " " }
                        @if let Some(branch) = meta("branch") { (branch) " " }
                        @if let Some(commit) = meta("commit") { code { (commit) } " " }
                        @if let Some(pr) = meta("pull_request") { "PR " (pr) }
                    }
                    td { (checks(entry)) }
                    td { a href={ (base) "/logs?version=" (version.version) } { "log" } }
                    td { @if version.version > 1 {
                        a href={ (base) "/diff?from=" (version.version - 1) "&to=" (version.version) } { "diff" }
                    } }
                }
            }
        }
        @if pages_of(total) > 1 {
            p.pages {
                "Page " (page) " of " (pages_of(total)) ": "
                @if page > 1 { a href={ (base) "/history?page=" (page - 1) } { "newer" } }
                @if page < pages_of(total) { a href={ (base) "/history?page=" (page + 1) } { "older" } }
            }
        }
        h2 { "Compare two versions" }
        form method="get" action={ (base) "/diff" } {
            "From " input type="number" name="from" min="0" required;
            " to " input type="number" name="to" min="0" required;
            " " button type="submit" { "Diff" }
        }
    };
    Ok(layout::page(
        &format!("History of {project}/{stack}"),
        &viewer,
        body,
    ))
}

#[derive(Deserialize)]
pub(super) struct DiffQuery {
    from: i64,
    to: i64,
    #[serde(default = "first_page")]
    page: usize,
}

fn first_page() -> usize {
    1
}

/// Resources per page of a diff: a change to every resource of a big stack is paged, not one
/// page of megabytes.
const DIFF_PAGE: usize = 100;

/// How a resource differs between two versions.
enum Change {
    Added,
    Removed,
    /// The properties (`inputs.a.b`, `outputs.c`) that differ, with their values before and after.
    Changed(Vec<(String, Option<Value>, Option<Value>)>),
}

/// A property map flattened to its leaves' paths, as shown.
fn leaves(prefix: &str, value: &Value, into: &mut BTreeMap<String, Value>) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (k, v) in map {
                leaves(&format!("{prefix}.{k}"), v, into);
            }
        }
        Value::Array(items) if !items.is_empty() => {
            for (i, v) in items.iter().enumerate() {
                leaves(&format!("{prefix}[{i}]"), v, into);
            }
        }
        other => {
            into.insert(prefix.to_owned(), other.clone());
        }
    }
}

fn properties(resource: &Resource) -> Result<BTreeMap<String, Value>, ApiError> {
    let mut found = BTreeMap::new();
    for (name, map) in [
        ("inputs", resource.inputs()?),
        ("outputs", resource.outputs()?),
    ] {
        leaves(name, &values::shown(&Value::Object(map)), &mut found);
    }
    Ok(found)
}

/// What changed from `before` to `after`, by URN, in `after`'s order then `before`'s.
fn changes(
    before: &[Resource],
    after: &[Resource],
) -> Result<Vec<(String, String, Change)>, ApiError> {
    let old: HashMap<&str, &Resource> = before.iter().map(|r| (r.urn.as_str(), r)).collect();
    let new: HashMap<&str, &Resource> = after.iter().map(|r| (r.urn.as_str(), r)).collect();
    let mut found = Vec::new();
    for resource in after {
        let change = match old.get(resource.urn.as_str()) {
            None => Change::Added,
            // Most resources are as they were: compared as written before property by property.
            Some(was) if was.same_properties(resource) => continue,
            Some(was) => {
                let (a, b) = (properties(was)?, properties(resource)?);
                let differing: Vec<_> = (a.keys().chain(b.keys()))
                    .collect::<std::collections::BTreeSet<_>>()
                    .into_iter()
                    .filter(|k| a.get(*k) != b.get(*k))
                    .map(|k| (k.clone(), a.get(k).cloned(), b.get(k).cloned()))
                    .collect();
                if differing.is_empty() {
                    continue;
                }
                Change::Changed(differing)
            }
        };
        found.push((resource.urn.clone(), resource.ty.clone(), change));
    }
    for resource in before.iter().filter(|r| !new.contains_key(r.urn.as_str())) {
        found.push((resource.urn.clone(), resource.ty.clone(), Change::Removed));
    }
    Ok(found)
}

fn json(value: &Option<Value>) -> String {
    value
        .as_ref()
        .map_or_else(|| "(none)".to_owned(), Value::to_string)
}

/// `GET /stacks/P/S/diff?from=A&to=B`: what changed between versions A and B.
pub(super) async fn diff(
    viewer: Viewer,
    State(app): State<App>,
    Path((project, stack)): Path<(String, String)>,
    Query(query): Query<DiffQuery>,
) -> Result<Markup, ConsoleError> {
    viewer
        .user
        .may(Level::ReadNoSecrets, &project, Some(&stack))?;
    let key = stack_key(&app.pool, &project, &stack).await?;
    let before = versions::export(&app.pool, &key, Some(query.from)).await?;
    let after = versions::export(&app.pool, &key, Some(query.to)).await?;
    let found = tokio::task::spawn_blocking(move || {
        changes(&values::resources(&before)?, &values::resources(&after)?)
    })
    .await
    .map_err(|e| ApiError::Internal(format!("comparing versions: {e}")))??;
    let count = |kind: fn(&Change) -> bool| found.iter().filter(|(_, _, c)| kind(c)).count();
    let (added, removed) = (
        count(|c| matches!(c, Change::Added)),
        count(|c| matches!(c, Change::Removed)),
    );
    let changed = found.len() - added - removed;
    let pages = found.len().div_ceil(DIFF_PAGE).max(1);
    let page = query.page.clamp(1, pages);
    let shown = found.iter().skip((page - 1) * DIFF_PAGE).take(DIFF_PAGE);
    let base = format!("/stacks/{project}/{stack}");
    let here = format!("{base}/diff?from={}&to={}", query.from, query.to);
    let body = html! {
        h1 { "Version " (query.from) " → " (query.to) " of " (project) "/" (stack) }
        p { a href={ (base) "/history" } { "History" } }
        @if found.is_empty() { p { "No resource differs." } }
        @else {
            p #summary {
                span.added { (added) " added" } ", " span.removed { (removed) " removed" } ", "
                span.changed { (changed) " changed" }
            }
        }
        table #diff {
            @for (urn, ty, change) in shown {
                tr {
                    @match change {
                        Change::Added => { td.added { "+ added" } }
                        Change::Removed => { td.removed { "- removed" } }
                        Change::Changed(_) => { td.changed { "~ changed" } }
                    }
                    td {
                        @if matches!(change, Change::Removed) { code { (urn) } }
                        @else { a href={ (base) "/resource?urn=" (encoded(urn)) } { code { (urn) } } }
                        " " code { (ty) }
                        @if let Change::Changed(properties) = change {
                            ul { @for (path, was, now) in properties {
                                li { code { (path) } ": " code.removed { (json(was)) } " → " code.added { (json(now)) } }
                            } }
                        }
                    }
                }
            }
        }
        @if pages > 1 {
            p.pages {
                "Page " (page) " of " (pages) ": "
                @if page > 1 { a href={ (here) "&page=" (page - 1) } { "previous" } }
                @if page < pages { " " a href={ (here) "&page=" (page + 1) } { "next" } }
            }
        }
    };
    Ok(layout::page(
        &format!("Diff of {project}/{stack}"),
        &viewer,
        body,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resource(urn: &str, inputs: Value) -> Resource {
        serde_json::from_value(serde_json::json!({ "urn": urn, "type": "t", "inputs": inputs }))
            .unwrap()
    }

    #[test]
    fn a_diff_finds_added_removed_and_changed_properties_but_not_a_secret_sealed_anew() {
        let sealed = |c: &str| serde_json::json!({ "plinth:sig": "secret", "ciphertext": c });
        let before = [
            resource("same", serde_json::json!({ "a": 1 })),
            resource("resealed", serde_json::json!({ "p": sealed("v1:x") })),
            resource("changed", serde_json::json!({ "a": 1, "b": [1, 2] })),
            resource("gone", serde_json::json!({})),
        ];
        let after = [
            resource("same", serde_json::json!({ "a": 1 })),
            resource("resealed", serde_json::json!({ "p": sealed("v1:y") })),
            resource("changed", serde_json::json!({ "a": 1, "b": [1, 3] })),
            resource("new", serde_json::json!({})),
        ];
        let found: Vec<(String, String)> = (changes(&before, &after).unwrap().into_iter())
            .map(|(urn, _, change)| {
                let what = match change {
                    Change::Added => "added".to_owned(),
                    Change::Removed => "removed".to_owned(),
                    Change::Changed(properties) => (properties.iter())
                        .map(|(path, was, now)| format!("{path}: {} → {}", json(was), json(now)))
                        .collect::<Vec<_>>()
                        .join("; "),
                };
                (urn, what)
            })
            .collect();
        let expected = [
            ("changed", "inputs.b[1]: 2 → 3"),
            ("new", "added"),
            ("gone", "removed"),
        ];
        assert_eq!(
            found,
            expected.map(|(u, w)| (u.to_owned(), w.to_owned())).to_vec()
        );
    }
}

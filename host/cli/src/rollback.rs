//! `plinth stack rollback VERSION`: writes the state an old version of the stack recorded (as
//! `stack history` counts them, the first being 1) as its new version. Only the state changes:
//! no provider is called, and the next `plinth up` makes the real infrastructure match.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::SystemTime;

use anyhow::{Context, Result, bail};
use plinth_backend::{Checkpoint, HistoryEntry, UpdateKind, UpdateResult};
use plinth_engine::events::ChangeSummary;
use plinth_engine::resource::ResourceState;
use plinth_engine::shown::escape_controls;
use plinth_engine::snapshot::Snapshot;
use plinth_engine::urn::is_stack_type;

use crate::Workspace;
use crate::secrets::unlock_for_update;

/// What a rollback changes in the state, resource by resource (URN order).
#[derive(Default)]
struct StateDiff {
    /// In the old version, not in the current state.
    back: Vec<String>,
    /// In the current state, not in the old version.
    leaving: Vec<String>,
    /// In both, differing: with the fields that differ.
    changed: Vec<(String, Vec<String>)>,
    same: usize,
}

/// The live resources of a snapshot by URN, its stack's root aside.
fn by_urn(snapshot: &Snapshot) -> BTreeMap<String, &ResourceState> {
    (snapshot.resources.iter())
        .filter(|r| !r.delete && !is_stack_type(&r.ty))
        .map(|r| (r.urn.to_string(), r))
        .collect()
}

/// The fields of `now` that `then` records otherwise: `inputs.KEY`, `outputs.KEY`, `id`, ….
/// Names only: a value (a secret's plaintext) is never shown.
fn differing(now: &ResourceState, then: &ResourceState) -> Vec<String> {
    let mut fields = Vec::new();
    for (what, a, b) in [
        ("inputs", &now.inputs, &then.inputs),
        ("outputs", &now.outputs, &then.outputs),
    ] {
        let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
        for key in keys {
            if a.get(key.as_str()) != b.get(key.as_str()) {
                fields.push(format!("{what}.{}", escape_controls(key)));
            }
        }
    }
    let plain = [
        ("id", now.id != then.id),
        ("parent", now.parent != then.parent),
        ("dependencies", now.dependencies != then.dependencies),
        ("protect", now.protect != then.protect),
        ("provider", now.provider != then.provider),
    ];
    fields.extend(
        (plain.iter())
            .filter(|(_, d)| *d)
            .map(|(f, _)| f.to_string()),
    );
    if fields.is_empty() && now != then {
        fields.push("options".to_owned());
    }
    fields
}

fn diff(now: &Snapshot, then: &Snapshot) -> StateDiff {
    let (now, then) = (by_urn(now), by_urn(then));
    let mut d = StateDiff::default();
    for (urn, old) in &then {
        match now.get(urn) {
            None => d.back.push(urn.clone()),
            Some(current) if *current == *old => d.same += 1,
            Some(current) => d.changed.push((urn.clone(), differing(current, old))),
        }
    }
    d.leaving = (now.keys())
        .filter(|u| !then.contains_key(*u))
        .cloned()
        .collect();
    d
}

/// A URN as the plan shows a resource: `type::name`, escaped.
fn shown(urn: &str) -> String {
    let mut parts = urn.rsplitn(3, "::");
    let name = parts.next().unwrap_or(urn);
    let ty = parts.next().unwrap_or_default();
    escape_controls(&format!("{ty}::{name}")).into_owned()
}

/// Prints what the rollback changes, as a plan marks changes: `+` comes back, `-` leaves, `~`
/// changes (the fields named).
fn print_preview(d: &StateDiff) {
    for urn in &d.back {
        println!("  + {}  (comes back into the state)", shown(urn));
    }
    for (urn, fields) in &d.changed {
        println!("  ~ {}  ({})", shown(urn), fields.join(", "));
    }
    for urn in &d.leaving {
        println!("  - {}  (leaves the state)", shown(urn));
    }
    println!(
        "State: {} back, {} changed, {} leaving, {} unchanged.",
        d.back.len(),
        d.changed.len(),
        d.leaving.len(),
        d.same
    );
}

/// `plinth stack rollback VERSION [--yes]`.
pub fn rollback(ws: &Workspace, number: u64, yes: bool) -> Result<()> {
    let stack = ws.stack()?;
    let history = ws.backend.history(&stack)?;
    let latest = history.len() as u64;
    if latest == 0 {
        bail!("stack `{stack}` has no history yet: there is no version to roll back to");
    }
    if number == 0 || number > latest {
        bail!(
            "stack `{stack}` has no version {number}: its versions are 1 to {latest}, as \
             `plinth stack history` lists them from the oldest"
        );
    }
    if number == latest {
        bail!("version {number} is the stack's current state: there is nothing to roll back");
    }
    // The version must hold a state this stack could have written, and its secrets must open
    // with the stack's key, before anything is taken or written.
    unlock_for_update(ws.backend.as_ref(), &stack)?;
    let bytes = ws.backend.version(&stack, number)?;
    let crypter = ws.backend.crypter(&stack);
    let origin = format!("<version {number} of stack {stack}>");
    // A version written before the stack was renamed names its old name: it is this stack's
    // all the same, moved to its name now.
    let bytes = plinth_backend::version_as_stack(
        &bytes,
        stack.project.as_str(),
        &stack.name,
        Path::new(&origin),
    )
    .with_context(|| format!("version {number} cannot be rolled back to"))?;
    let old = Checkpoint::parse(&bytes, &stack.name, Path::new(&origin), crypter.as_ref())
        .with_context(|| format!("version {number} cannot be rolled back to"))?;
    let started = SystemTime::now();
    let mut update = ws.backend.begin_update(&stack, "stack rollback")?;
    let diff = diff(&update.base()?.snapshot, &old.snapshot);
    let entry = &history[(latest - number) as usize];
    println!(
        "Rolling back the state of stack `{stack}` to version {number} of {latest} (the {} \
         of {}):",
        entry.kind,
        crate::display::local_time(entry.started)
    );
    print_preview(&diff);
    println!(
        "Only the state changes: no resource is created, changed or deleted now; the next \
         `plinth up` makes the real infrastructure match the program."
    );
    if !yes && !crate::confirm("Roll the state back?", "--yes")? {
        println!("Not rolled back; nothing was written.");
        return Ok(());
    }
    let changes = ChangeSummary {
        same: diff.same,
        create: diff.back.len(),
        update: diff.changed.len(),
        delete: diff.leaving.len(),
        ..ChangeSummary::default()
    };
    let entry = HistoryEntry::ended_now(
        UpdateKind::Rollback,
        started,
        UpdateResult::Succeeded,
        changes,
    )
    .with_note(format!("rollback to version {number}"))
    .with_plugins(old.plugins.clone());
    let report = update.import(&bytes, false, &entry)?;
    println!(
        "Rolled back stack `{stack}` to version {number}: its state is now version {}.",
        latest + 1
    );
    if report.cleared_pending > 0 {
        println!(
            "Cleared {} pending operations version {number} recorded; run `plinth refresh` to \
             reconcile them with the real world.",
            report.cleared_pending
        );
    }
    println!(
        "The real infrastructure is as it was: run `plinth preview` to see what the next \
         `plinth up` changes to match the program, or `plinth refresh` to record what exists."
    );
    Ok(())
}

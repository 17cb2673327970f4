//! `plinth state …`: edits of a stack's state by hand. No provider is called: the real
//! resources stay as they are; only what plinth records about them changes.

use std::process::ExitCode;
use std::time::SystemTime;

use anyhow::{Result, anyhow};
use clap::Subcommand;
use plinth_backend::{HistoryEntry, UpdateKind, UpdateResult};
use plinth_engine::events::ChangeSummary;
use plinth_engine::shown::escape_controls;
use plinth_engine::snapshot::{PendingKind, Removal, StateEditError};
use plinth_engine::urn::Urn;

use crate::pending::warn_pending;
use crate::{Workspace, confirm};

#[derive(Subcommand)]
pub enum StateCommand {
    /// Remove a resource from the state without deleting it: plinth forgets it.
    Delete {
        /// The resource: its URN, `type::name`, or name.
        resource: String,
        /// Also remove a resource that others depend on, dropping their references to it.
        #[arg(long)]
        force: bool,
        /// Do not ask for confirmation.
        #[arg(short, long)]
        yes: bool,
    },
    /// Protect a resource: `up` and `destroy` refuse to delete or replace it.
    Protect {
        /// The resource: its URN, `type::name`, or name.
        resource: String,
    },
    /// Remove a resource's protection, so that it can be deleted.
    Unprotect {
        /// The resource: its URN, `type::name`, or name.
        resource: String,
    },
}

impl StateCommand {
    fn name(&self) -> &'static str {
        match self {
            StateCommand::Delete { .. } => "state delete",
            StateCommand::Protect { .. } => "state protect",
            StateCommand::Unprotect { .. } => "state unprotect",
        }
    }
}

pub fn run_state(ws: &Workspace, cmd: StateCommand) -> Result<ExitCode> {
    let stack = ws.stack()?;
    let started = SystemTime::now();
    let command = cmd.name();
    let mut update = ws.backend.begin_update(&stack, command)?;
    let mut edit = update.load_for_edit()?;
    crate::journal_notes::warn_journal(&stack.to_string(), edit.loaded());
    warn_pending(edit.snapshot());
    let urn = match &cmd {
        StateCommand::Delete { resource, .. }
        | StateCommand::Protect { resource }
        | StateCommand::Unprotect { resource } => {
            edit.snapshot().resolve(resource).map_err(explain)?
        }
    };
    // A state written by an older plinth may hold a URN with control characters.
    let shown = escape_controls(urn.as_str()).into_owned();
    let done = match cmd {
        StateCommand::Delete { force, yes, .. } => {
            let removal = edit.snapshot_mut().remove(&urn, force).map_err(explain)?;
            describe(&stack.name, &removal);
            if !yes && !confirm("Remove it from the state?", "--yes")? {
                println!("Cancelled; the state was not changed.");
                return Ok(crate::exit::cancelled());
            }
            format!(
                "Removed {shown} from the state of stack `{stack}`; the real resource was left as it is."
            )
        }
        StateCommand::Protect { .. } => {
            let changed = edit
                .snapshot_mut()
                .set_protect(&urn, true)
                .map_err(explain)?;
            if changed == 0 {
                println!("{shown} is already protected.");
                return Ok(ExitCode::SUCCESS);
            }
            format!(
                "Protected {shown}: `up` and `destroy` refuse to delete or replace it.\n\
                 The program's `protect` option decides again on the next `plinth up`."
            )
        }
        StateCommand::Unprotect { .. } => {
            let changed = edit
                .snapshot_mut()
                .set_protect(&urn, false)
                .map_err(explain)?;
            if changed == 0 {
                println!("{shown} is not protected.");
                return Ok(ExitCode::SUCCESS);
            }
            format!(
                "Unprotected {shown}; it can now be deleted.\n\
                 A program that registers it with `protect` protects it again on the next `plinth up`."
            )
        }
    };
    let entry = HistoryEntry::ended_now(
        UpdateKind::StateEdit,
        started,
        UpdateResult::Succeeded,
        ChangeSummary::default(),
    )
    .with_note(format!("{command} {shown}"));
    update.save_edit(edit, &entry)?;
    println!("{done}");
    Ok(ExitCode::SUCCESS)
}

/// Says what removing a resource from the state does, before asking.
fn describe(stack: &str, removal: &Removal) {
    println!("This removes from the state of stack `{stack}`:");
    for r in &removal.removed {
        let id = if r.id.is_empty() {
            "a component".to_owned()
        } else {
            format!("id {}", escape_controls(&r.id))
        };
        let replaced = if r.delete {
            ", replaced and awaiting deletion"
        } else {
            ""
        };
        println!("  {} ({id}{replaced})", escape_controls(r.urn.as_str()));
    }
    if !removal.unlinked.is_empty() {
        println!(
            "and drops the recorded dependencies of {} on it.",
            join(&removal.unlinked)
        );
    }
    for kind in &removal.cleared_pending {
        let what = match kind {
            PendingKind::Creating => "create",
            PendingKind::Updating => "update",
            PendingKind::Deleting => "delete",
        };
        println!("It also clears the interrupted {what} of it that the state records.");
    }
    println!(
        "No provider is called: the real resource is left as it is, and a later `plinth up` of a \
         program that still declares it creates it anew."
    );
}

/// The error, with what to do about it.
fn explain(e: StateEditError) -> anyhow::Error {
    let hint = match &e {
        StateEditError::NotFound { close, .. } if close.is_empty() => {
            "; `plinth stack export` shows the resources in the state".to_owned()
        }
        StateEditError::NotFound { .. } | StateEditError::Ambiguous { .. } => String::new(),
        StateEditError::Protected { urn } => {
            format!("; run `plinth state unprotect {urn}` first")
        }
        StateEditError::HasChildren { .. } => {
            "; remove its children from the state first (`plinth state delete CHILD`)".to_owned()
        }
        StateEditError::Manages { .. } => {
            "; remove the resources it manages from the state first".to_owned()
        }
        StateEditError::HasDependents { .. } => {
            "; pass --force to remove it anyway and drop their references to it".to_owned()
        }
    };
    anyhow!("{e}{hint}")
}

fn join(urns: &[Urn]) -> String {
    urns.iter().map(Urn::as_str).collect::<Vec<_>>().join(", ")
}

//! What loading a stack found in its journal, said on stderr: an interrupted update replayed,
//! an update still running, or an end of the journal that could not be read.

use console::style;
use plinth_backend::LoadedStack;

/// Prints a warning on stderr for what `loaded` says about the journal of `stack`.
pub fn warn_journal(stack: &str, loaded: &LoadedStack) {
    for line in notes(stack, loaded) {
        eprintln!("{} {line}", style("warning:").yellow().bold());
    }
}

fn notes(stack: &str, loaded: &LoadedStack) -> Vec<String> {
    let mut notes = Vec::new();
    if let Some(holder) = &loaded.running {
        let who = holder.info.as_ref().map_or_else(
            || "by a process whose lock file cannot be read".to_owned(),
            |info| info.to_string(),
        );
        // Its last write may be under way: an unread end is no loss.
        notes.push(format!(
            "stack `{stack}` has an update running, {who}; this shows the state it has \
             recorded so far (its operations in flight show as pending)"
        ));
        return notes;
    }
    if loaded.recovered {
        notes.push(format!(
            "stack `{stack}` had an interrupted update; its journal was replayed"
        ));
    }
    if let Some(torn) = &loaded.torn {
        notes.push(format!(
            "the end of the journal of stack `{stack}` could not be read and was left out: \
             {torn}; operations recorded there may be missing from the state (a resource \
             created then may exist without being recorded) — run `plinth refresh` to check \
             what exists"
        ));
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;
    use plinth_backend::{LockHolder, LockInfo, TornEnd};

    fn loaded() -> LoadedStack {
        LoadedStack {
            snapshot: Default::default(),
            recovered: true,
            plugins: Vec::new(),
            torn: Some(TornEnd {
                place: "frame 3".into(),
                offset: 4567,
                bytes: 120,
            }),
            running: None,
        }
    }

    #[test]
    fn a_torn_end_is_named_with_what_may_be_missing() {
        let notes = notes("dev", &loaded());
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(notes[0].contains("interrupted update"), "{notes:?}");
        assert!(
            notes[1].contains("frame 3 (the last 120 bytes, from byte 4567)")
                && notes[1].contains("may be missing"),
            "{notes:?}"
        );
    }

    #[test]
    fn a_running_update_is_not_called_interrupted() {
        let mut loaded = loaded();
        loaded.running = Some(Box::new(LockHolder {
            info: Some(LockInfo {
                pid: 42,
                host: "ci".into(),
                user: "ana".into(),
                command: "up".into(),
                started: 0,
                lease_expires: None,
            }),
            running: true,
        }));
        let notes = notes("dev", &loaded);
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(
            notes[0].contains("has an update running, `up` by ana@ci (pid 42")
                && !notes[0].contains("interrupted"),
            "{notes:?}"
        );
    }
}

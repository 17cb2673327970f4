//! Every field a request supplies, checked before it reaches SQL: a client's mistake is a 400
//! naming the field, never a database error (which a client takes for an outage and retries).

use plinth_state::{HistoryEntry, UpdateKind};
use serde_json::Value;

use crate::error::ApiError;

/// The highest batch number accepted: far above any update's (an update of 100,000 resources
/// sends a few thousand), far below where arithmetic on it could overflow.
pub(crate) const MAX_SEQ: i64 = 1 << 40;
/// The longest history entry accepted, as JSON: a few hundred bytes, and a few KiB with plugins.
const MAX_ENTRY: usize = 64 << 10;

/// Project and stack names as the CLI validates them: 1 to 100 letters, digits, `-`, `_` or
/// `.`, not starting with `.`. (Checked here again, without the engine, so that the service
/// does not rebuild when the engine changes.)
pub(crate) fn name(what: &str, name: &str) -> Result<(), ApiError> {
    let valid = (1..=100).contains(&name.len())
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if valid {
        Ok(())
    } else {
        Err(ApiError::BadRequest(format!(
            "invalid {what} name `{}`: use 1 to 100 letters, digits, `-`, `_` or `.`, not \
             starting with `.`",
            shown(name)
        )))
    }
}

/// The kind of update a client begins: one of the kinds history records.
pub(crate) fn kind(kind: &str) -> Result<UpdateKind, ApiError> {
    serde_json::from_value(Value::String(kind.to_owned())).map_err(|_| {
        ApiError::BadRequest(format!(
            "`{}` is not a kind of update: update, refresh, destroy, import, state-edit or rollback",
            shown(kind)
        ))
    })
}

/// A batch number: from 1.
pub(crate) fn seq(what: &str, seq: i64) -> Result<(), ApiError> {
    if (1..=MAX_SEQ).contains(&seq) {
        Ok(())
    } else {
        Err(ApiError::BadRequest(format!(
            "{what} are numbered from 1 (up to {MAX_SEQ}), not {seq}"
        )))
    }
}

/// A history entry as a client records it: of the shape history reads, of a sane size, and
/// without a NUL character (which the database cannot store).
pub(crate) fn entry(entry: &Value) -> Result<(), ApiError> {
    let size = serde_json::to_vec(entry).map_or(usize::MAX, |json| json.len());
    if size > MAX_ENTRY {
        return Err(ApiError::BadRequest(format!(
            "the history entry is {size} bytes of JSON; at most {MAX_ENTRY} are accepted"
        )));
    }
    let parsed = match HistoryEntry::deserialize(entry) {
        Ok(parsed) => parsed,
        Err(e) => {
            return Err(ApiError::BadRequest(format!(
                "`entry` is not a history entry: {e}"
            )));
        }
    };
    if let Some(metadata) = &parsed.metadata {
        metadata.check().map_err(ApiError::BadRequest)?;
    }
    no_nul("entry", entry)
}

/// Refuses a NUL character in any string of `value`.
pub(crate) fn no_nul(what: &str, value: &Value) -> Result<(), ApiError> {
    let refused = || ApiError::BadRequest(format!("`{what}` holds a NUL character"));
    match value {
        Value::String(text) if text.contains('\0') => Err(refused()),
        Value::Array(items) => items.iter().try_for_each(|item| no_nul(what, item)),
        Value::Object(fields) => fields.iter().try_for_each(|(key, item)| {
            if key.contains('\0') {
                return Err(refused());
            }
            no_nul(what, item)
        }),
        _ => Ok(()),
    }
}

/// `text` as a message may quote it: at most 100 characters, control characters escaped (a
/// terminal shows the message).
pub(crate) fn shown(text: &str) -> String {
    shown_up_to(text, 100)
}

/// [`shown`], cut after `most` characters.
pub(crate) fn shown_up_to(text: &str, most: usize) -> String {
    let escaped = |c: char| -> Vec<char> {
        match c.is_control() {
            true => c.escape_debug().collect(),
            false => vec![c],
        }
    };
    let mut shown: String = text.chars().take(most).flat_map(escaped).collect();
    if text.chars().nth(most).is_some() {
        shown.push('…');
    }
    shown
}

use serde::Deserialize as _;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn kinds_names_and_numbers() {
        assert!(kind("update").is_ok() && kind("state-edit").is_ok());
        assert!(kind("bogus").is_err() && kind("update\0").is_err());
        assert!(name("stack", "dev").is_ok());
        for bad in ["..", ".x", "", "a/b", "a\0"] {
            assert!(name("stack", bad).is_err(), "{bad:?}");
        }
        assert!(seq("batches", 0).is_err() && seq("batches", i64::MIN).is_err());
        assert!(seq("batches", 1).is_ok() && seq("batches", MAX_SEQ + 1).is_err());
    }

    #[test]
    fn control_characters_are_escaped_and_long_text_cut() {
        assert_eq!(shown("a\u{1b}[31m\0é"), "a\\u{1b}[31m\\0é");
        assert_eq!(shown(&"x".repeat(200)).chars().count(), 101);
    }

    #[test]
    fn a_nul_anywhere_in_an_entry_is_refused() {
        assert!(no_nul("entry", &json!({"a": ["b", {"c": "d\u{0}"}]})).is_err());
        assert!(no_nul("entry", &json!({"a\u{0}": 1})).is_err());
        assert!(no_nul("entry", &json!({"a": ["b", 1, null]})).is_ok());
    }

    #[test]
    fn a_run_message_past_its_cap_is_refused() {
        let with_message = |length: usize| {
            json!({
                "kind": "update", "started": 1, "ended": 2, "result": "succeeded",
                "changes": {"same": 0, "create": 0, "update": 0, "replace": 0, "delete": 0},
                "plinth": "0.1.0",
                "metadata": {"message": "m".repeat(length)}
            })
        };
        let max = plinth_state::run_metadata::MAX_MESSAGE;
        assert!(entry(&with_message(max)).is_ok());
        let refused = entry(&with_message(max + 1)).unwrap_err().to_string();
        assert!(refused.contains("message is 1025 characters"), "{refused}");
    }
}

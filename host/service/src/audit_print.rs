//! `plinth serve audit`'s output. Every string in the log came from a request or the database,
//! so each is shown escaped: a control character (or a bidirectional override) cannot move the
//! cursor, retitle the terminal or make a row look like another.

use plinth_service::AuditEntry;

/// Prints `entries` as a table, or as one JSON object a line (JSON escapes control characters
/// itself).
pub fn print(entries: &[AuditEntry], json: bool) {
    if json {
        for entry in entries {
            println!(
                "{}",
                serde_json::to_string(entry).expect("an audit row serializes")
            );
        }
        return;
    }
    let row = |cells: [&str; 7]| {
        let [at, action, user, token, source, stack, detail] = cells.map(escaped);
        println!(
            "{at:<24}  {action:<17}  {user:<16}  {token:<12}  {source:<15}  {stack:<24}  {detail}"
        )
    };
    row([
        "AT (UTC)", "ACTION", "USER", "TOKEN", "SOURCE", "STACK", "DETAIL",
    ]);
    for entry in entries {
        let stack = match (&entry.project, &entry.stack) {
            (Some(project), Some(stack)) => format!("{project}/{stack}"),
            (Some(project), None) => project.clone(),
            _ => "-".to_owned(),
        };
        row([
            &entry.at,
            &entry.action,
            &entry.user,
            entry.token.as_deref().unwrap_or("-"),
            &entry.source,
            &stack,
            &entry.detail,
        ]);
    }
}

/// `text` with its control characters and bidirectional controls escaped (`\u{1b}`, `\n`).
pub fn escaped(text: &str) -> String {
    let mut shown = String::with_capacity(text.len());
    for c in text.chars() {
        let bidi = matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
        if c.is_control() || bidi {
            shown.extend(c.escape_default());
        } else {
            shown.push(c);
        }
    }
    shown
}

#[cfg(test)]
mod tests {
    use super::escaped;

    #[test]
    fn control_and_bidi_characters_are_escaped() {
        assert_eq!(
            escaped("a\u{1b}]0;x\u{7}\nb\u{202e}c"),
            "a\\u{1b}]0;x\\u{7}\\nb\\u{202e}c"
        );
        assert_eq!(escaped("plain text"), "plain text");
    }
}

//! Text a guest, a request or a state file supplied, made safe to show on a terminal or to write
//! to a log: every character a terminal would act on rather than print (ESC and the sequences it
//! starts, CR, BEL, backspace, the C1 controls, the bidi overrides that reorder a line, the line
//! and paragraph separators) is written as visible escape text, such as `\u{1b}` or `\r`.

use std::borrow::Cow;
use std::fmt::Write;

use unicode_properties::{GeneralCategory, UnicodeGeneralCategory};

/// `text` with every control character escaped, newlines and tabs included: what a guest or a
/// state file supplied can never start a line of its own or move the cursor.
pub fn escape_controls(text: &str) -> Cow<'_, str> {
    escape(text, |_| false)
}

/// [`escape_controls`], keeping newlines: for a message plinth itself wrote on several lines,
/// whose guest-supplied parts were escaped where they entered it.
pub fn escape_controls_keeping_lines(text: &str) -> Cow<'_, str> {
    escape(text, |c| c == '\n')
}

fn escape(text: &str, keep: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !text.chars().any(|c| acts_on_terminal(c) && !keep(c)) {
        return Cow::Borrowed(text);
    }
    let mut escaped = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if acts_on_terminal(c) && !keep(c) {
            // `\t`, `\n`, `\r`, `\0`, else `\u{..}`: these are never a quote or a backslash.
            write!(escaped, "{}", c.escape_debug()).expect("writing to a String");
        } else {
            escaped.push(c);
        }
    }
    Cow::Owned(escaped)
}

/// Whether a terminal acts on `c` (or may draw the text around it elsewhere) rather than
/// printing a glyph.
fn acts_on_terminal(c: char) -> bool {
    match c {
        ' '..='~' => false,
        // Joiners shape emoji and scripts such as Persian; they move nothing.
        '\u{200c}' | '\u{200d}' => false,
        _ => matches!(
            c.general_category(),
            GeneralCategory::Control
                | GeneralCategory::Format
                | GeneralCategory::LineSeparator
                | GeneralCategory::ParagraphSeparator
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_borrowed_as_it_is() {
        for text in [
            "",
            "created a-1",
            "naïve café 日本語 👨\u{200d}👩",
            "tab-free",
        ] {
            assert!(
                matches!(escape_controls(text), Cow::Borrowed(t) if t == text),
                "{text}"
            );
        }
    }

    #[test]
    fn terminal_controls_become_visible_text() {
        let cases = [
            ("a\tb", r"a\tb"),
            ("line\nfake", r"line\nfake"),
            ("over\rwrite", r"over\rwrite"),
            ("\x1b]0;pwned\x07title", r"\u{1b}]0;pwned\u{7}title"),
            ("\x1b[2K\x1b[1A+ created", r"\u{1b}[2K\u{1b}[1A+ created"),
            ("back\x08\x08space", r"back\u{8}\u{8}space"),
            ("del\x7f", r"del\u{7f}"),
            ("c1 \u{9b}31m csi", r"c1 \u{9b}31m csi"),
            ("bidi \u{202e}txt.exe", r"bidi \u{202e}txt.exe"),
            ("isolate \u{2066}x\u{2069}", r"isolate \u{2066}x\u{2069}"),
            ("mark \u{200f}", r"mark \u{200f}"),
            ("sep \u{2028}\u{2029}", r"sep \u{2028}\u{2029}"),
            ("nul\0", r"nul\0"),
        ];
        for (raw, shown) in cases {
            assert_eq!(escape_controls(raw), shown, "{raw:?}");
        }
    }

    #[test]
    fn keeping_lines_keeps_only_newlines() {
        assert_eq!(
            escape_controls_keeping_lines("error:\n  a\x1b[31m\r\tb"),
            "error:\n  a\\u{1b}[31m\\r\\tb"
        );
    }

    #[test]
    fn nothing_escaped_is_left_acting_on_a_terminal() {
        let hostile: String = (0..=0x3000u32).filter_map(char::from_u32).collect();
        let escaped = escape_controls(&hostile);
        assert!(!escaped.chars().any(acts_on_terminal));
        assert!(!escaped.chars().any(|c| c.is_control()));
    }
}

//! Stack tags: short `name: value` labels a team sorts its stacks by (`owner`, `env`,
//! `cost-center`), kept by the backend beside the stack and shown by `plinth stack ls`. Both
//! sides check them: the client before it asks, the service before it stores.

use std::collections::BTreeMap;

/// A stack's tags, by name.
pub type StackTags = BTreeMap<String, String>;

/// The longest tag name, in characters.
pub const NAME_MAX: usize = 40;
/// The longest tag value, in characters.
pub const VALUE_MAX: usize = 256;
/// The most tags one stack has.
pub const TAGS_MAX: usize = 50;

/// Why a tag cannot be stored.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TagError {
    #[error(
        "invalid tag name `{0}`: use 1 to {NAME_MAX} ASCII letters, digits, `-`, `_`, `.` or `:`, \
         starting with a letter or a digit"
    )]
    Name(String),
    #[error(
        "the value of tag `{0}` is invalid: use at most {VALUE_MAX} characters, none of them a \
         control character"
    )]
    Value(String),
    #[error("a stack has at most {TAGS_MAX} tags: remove one first (`plinth stack tag rm NAME`)")]
    TooMany,
}

/// Checks a tag name. The error quotes it escaped: it may be anything.
pub fn check_name(name: &str) -> Result<(), TagError> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':');
    let well_formed = (1..=NAME_MAX).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.chars().all(allowed);
    match well_formed {
        true => Ok(()),
        false => Err(TagError::Name(shown(name))),
    }
}

/// Checks tag `name`'s value.
pub fn check_value(name: &str, value: &str) -> Result<(), TagError> {
    if value.chars().count() > VALUE_MAX || value.chars().any(char::is_control) {
        return Err(TagError::Value(shown(name)));
    }
    Ok(())
}

/// Checks every tag of a stack, and how many there are.
pub fn check_tags(tags: &StackTags) -> Result<(), TagError> {
    if tags.len() > TAGS_MAX {
        return Err(TagError::TooMany);
    }
    tags.iter().try_for_each(|(name, value)| {
        check_name(name)?;
        check_value(name, value)
    })
}

/// `text` as an error may quote it: control characters escaped, cut short if long.
fn shown(text: &str) -> String {
    let cut: String = text.chars().take(NAME_MAX + 10).collect();
    plinth_engine::shown::escape_controls(&cut).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_values_are_checked() {
        for good in [
            "owner",
            "cost-center",
            "team.web",
            "plinth:project",
            "a",
            "9x",
        ] {
            check_name(good).unwrap();
        }
        let long = "n".repeat(NAME_MAX + 1);
        for bad in ["", "-x", "a b", "a/b", "ä", "x\u{1b}[2J", long.as_str()] {
            assert!(matches!(check_name(bad), Err(TagError::Name(_))), "{bad:?}");
        }
        let err = check_name("x\u{1b}[2J").unwrap_err().to_string();
        assert!(!err.contains('\u{1b}'), "{err}");
        check_value("owner", "").unwrap();
        check_value("owner", "Ana María <ana@example.com>").unwrap();
        assert!(check_value("owner", "a\nb").is_err());
        assert!(check_value("owner", &"v".repeat(VALUE_MAX + 1)).is_err());
        check_value("owner", &"é".repeat(VALUE_MAX)).unwrap();
        let many: StackTags = (0..=TAGS_MAX)
            .map(|i| (format!("t{i}"), String::new()))
            .collect();
        assert_eq!(check_tags(&many), Err(TagError::TooMany));
    }
}

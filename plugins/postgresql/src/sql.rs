//! Names and values in SQL text: identifiers are always quoted and literals always escaped (with
//! libpq's rules, as `postgres-protocol` implements them), so a role named
//! `x"; DROP DATABASE y; --` is a role with that name and nothing else.

use plinth_sdk::CheckFailure;

/// PostgreSQL keeps at most this many bytes of a name (NAMEDATALEN - 1) and silently cuts
/// longer ones, which would make the object's name differ from the one asked for.
pub(crate) const MAX_NAME_BYTES: usize = 63;

/// `name` as a quoted identifier.
pub(crate) fn ident(name: &str) -> String {
    postgres_protocol::escape::escape_identifier(name)
}

/// `text` as a string literal.
pub(crate) fn literal(text: &str) -> String {
    postgres_protocol::escape::escape_literal(text)
}

/// A qualified name, `schema.name`, each part quoted.
pub(crate) fn qualified(schema: &str, name: &str) -> String {
    format!("{}.{}", ident(schema), ident(name))
}

/// A role as a grantee: `PUBLIC` for the pseudo-role `public`, otherwise the quoted name.
pub(crate) fn grantee(role: &str) -> String {
    if role.eq_ignore_ascii_case("public") {
        "PUBLIC".to_owned()
    } else {
        ident(role)
    }
}

/// Why `name` cannot name an object, or `None`.
pub(crate) fn name_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        Some("must not be empty".to_owned())
    } else if name.contains('\0') {
        Some("must not contain a NUL character".to_owned())
    } else if name.len() > MAX_NAME_BYTES {
        Some(format!(
            "is {} bytes long; PostgreSQL names are at most {MAX_NAME_BYTES} bytes (longer \
             ones would be cut short)",
            name.len()
        ))
    } else {
        None
    }
}

/// The failures of the names in `names` (property, value).
pub(crate) fn check_names<'a>(
    names: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Vec<CheckFailure> {
    names
        .into_iter()
        .filter_map(|(property, name)| {
            name_problem(name).map(|reason| CheckFailure::new(property, reason))
        })
        .collect()
}

/// `true`/`false` from PostgreSQL's text form of a boolean (`t`/`f`).
pub(crate) fn boolean(text: Option<&str>) -> bool {
    text == Some("t")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_names_stay_names() {
        assert_eq!(
            ident(r#"x"; DROP DATABASE y; --"#),
            r#""x""; DROP DATABASE y; --""#
        );
        assert_eq!(literal("it's"), "'it''s'");
        assert_eq!(literal(r"a\b"), r" E'a\\b'");
        assert_eq!(grantee("PUBLIC"), "PUBLIC");
        assert_eq!(grantee("public "), "\"public \"");
    }

    #[test]
    fn names_are_checked() {
        assert!(name_problem("").is_some());
        assert!(name_problem("a\0b").is_some());
        assert!(name_problem(&"é".repeat(31)).is_none());
        assert!(name_problem(&"é".repeat(32)).unwrap().contains("64 bytes"));
    }
}

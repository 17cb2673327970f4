//! Options of foreign servers and user mappings (`OPTIONS (host '...', port '5432')`): read from
//! the catalogs' `key=value` arrays, and changed in place with `SET`, `ADD` and `DROP`.

use std::collections::BTreeMap;

use plinth_sdk::CheckFailure;

use crate::server::text;
use crate::sql::{self, ident, literal};
use crate::wire::Row;

/// Options by name.
pub(crate) type Options = BTreeMap<String, String>;

/// The failures of option names (values may be any text).
pub(crate) fn problems(property: &str, options: &Options) -> Vec<CheckFailure> {
    sql::check_names(options.keys().map(|k| (property, k.as_str())))
}

/// The `OPTIONS (...)` clause of a `CREATE`, empty for no options.
pub(crate) fn create_clause(options: &Options) -> String {
    if options.is_empty() {
        return String::new();
    }
    let list: Vec<String> = (options.iter())
        .map(|(k, v)| format!("{} {}", ident(k), literal(v)))
        .collect();
    format!(" OPTIONS ({})", list.join(", "))
}

/// The `OPTIONS (...)` clause of an `ALTER` that turns `current` into `wanted`, empty if they
/// are the same.
pub(crate) fn alter_clause(current: &Options, wanted: &Options) -> String {
    let mut list = Vec::new();
    for (k, v) in wanted {
        match current.get(k) {
            Some(old) if old == v => {}
            Some(_) => list.push(format!("SET {} {}", ident(k), literal(v))),
            None => list.push(format!("ADD {} {}", ident(k), literal(v))),
        }
    }
    for k in current.keys().filter(|k| !wanted.contains_key(*k)) {
        list.push(format!("DROP {}", ident(k)));
    }
    if list.is_empty() {
        String::new()
    } else {
        format!(" OPTIONS ({})", list.join(", "))
    }
}

/// The options of column `i` of `row`, a `text[]` of `key=value` as the catalogs keep them,
/// read with `array_to_json` so that no value's commas or quotes are misread.
pub(crate) fn parse(row: &Row, i: usize) -> Options {
    let json = text(row, i);
    let items: Vec<String> = serde_json::from_str(&json).unwrap_or_default();
    items
        .into_iter()
        .filter_map(|item| {
            item.split_once('=')
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alter_sets_adds_and_drops() {
        let current: Options = [("host", "a"), ("port", "1")]
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .into();
        let wanted: Options = [("host", "b"), ("dbname", "x")]
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .into();
        assert_eq!(
            alter_clause(&current, &wanted),
            " OPTIONS (ADD \"dbname\" 'x', SET \"host\" 'b', DROP \"port\")"
        );
        assert_eq!(alter_clause(&wanted, &wanted), "");
    }
}

//! Privileges: which ones each kind of object has, how `ALL` expands, and how to compare what a
//! program asks for with what the catalogs hold.

use std::collections::BTreeSet;

/// A kind of object privileges are granted on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Database,
    Schema,
    Table,
    Sequence,
    Function,
    Type,
}

impl Kind {
    /// The kind an `object_type` input names, lower case.
    pub(crate) fn parse(name: &str) -> Option<Kind> {
        Some(match name {
            "database" => Kind::Database,
            "schema" => Kind::Schema,
            "table" => Kind::Table,
            "sequence" => Kind::Sequence,
            "function" => Kind::Function,
            "type" => Kind::Type,
            _ => return None,
        })
    }

    /// Every privilege the kind has, in PostgreSQL's order.
    pub(crate) fn all(self) -> &'static [&'static str] {
        match self {
            Kind::Database => &["CREATE", "CONNECT", "TEMPORARY"],
            Kind::Schema => &["USAGE", "CREATE"],
            Kind::Table => &[
                "SELECT",
                "INSERT",
                "UPDATE",
                "DELETE",
                "TRUNCATE",
                "REFERENCES",
                "TRIGGER",
            ],
            Kind::Sequence => &["USAGE", "SELECT", "UPDATE"],
            Kind::Function => &["EXECUTE"],
            Kind::Type => &["USAGE"],
        }
    }

    /// The keyword of the kind in `GRANT ... ON ALL <plural> IN SCHEMA` and in default
    /// privileges (`ON TABLES`).
    pub(crate) fn plural(self) -> &'static str {
        match self {
            Kind::Database => "DATABASES",
            Kind::Schema => "SCHEMAS",
            Kind::Table => "TABLES",
            Kind::Sequence => "SEQUENCES",
            Kind::Function => "FUNCTIONS",
            Kind::Type => "TYPES",
        }
    }

    /// The keyword of one object of the kind (`ON TABLE ...`).
    pub(crate) fn singular(self) -> &'static str {
        match self {
            Kind::Database => "DATABASE",
            Kind::Schema => "SCHEMA",
            Kind::Table => "TABLE",
            Kind::Sequence => "SEQUENCE",
            Kind::Function => "FUNCTION",
            Kind::Type => "TYPE",
        }
    }
}

/// The privileges `asked` expand to (upper case, `ALL` and `TEMP` spelled out), or the ones that
/// `kind` does not have.
pub(crate) fn expand(kind: Kind, asked: &[String]) -> Result<BTreeSet<&'static str>, String> {
    let mut set = BTreeSet::new();
    let mut unknown = Vec::new();
    for privilege in asked {
        let upper = privilege.trim().to_uppercase();
        let upper = match upper.as_str() {
            "TEMP" => "TEMPORARY".to_owned(),
            "ALL PRIVILEGES" => "ALL".to_owned(),
            _ => upper,
        };
        if upper == "ALL" {
            set.extend(kind.all());
        } else if let Some(known) = kind.all().iter().find(|p| **p == upper) {
            set.insert(*known);
        } else {
            unknown.push(privilege.clone());
        }
    }
    if unknown.is_empty() {
        Ok(set)
    } else {
        Err(format!(
            "{} {} not a privilege of a {}; it has {}",
            unknown.join(", "),
            if unknown.len() == 1 { "is" } else { "are" },
            kind.singular().to_lowercase(),
            kind.all().join(", ")
        ))
    }
}

/// The privileges to report for `held`: the ones asked (as spelled) when they are what is held,
/// otherwise what is held, in PostgreSQL's order.
pub(crate) fn report(kind: Kind, asked: &[String], held: &BTreeSet<String>) -> Vec<String> {
    let wanted = expand(kind, asked).unwrap_or_default();
    let same = wanted.len() == held.len() && wanted.iter().all(|p| held.contains(*p));
    if same {
        asked.to_vec()
    } else {
        (kind.all().iter())
            .filter(|p| held.contains(**p))
            .map(|p| p.to_string())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_expands_and_unknown_privileges_are_named() {
        let set = expand(Kind::Database, &["all".into()]).unwrap();
        assert_eq!(set.len(), 3);
        let set = expand(Kind::Database, &["temp".into(), "Connect".into()]).unwrap();
        assert!(set.contains("TEMPORARY") && set.contains("CONNECT"));
        let err = expand(Kind::Schema, &["SELECT".into()]).unwrap_err();
        assert!(
            err.contains("SELECT is not a privilege of a schema"),
            "{err}"
        );
    }

    #[test]
    fn reports_keep_the_spelling_asked_when_equal() {
        let held: BTreeSet<String> = ["USAGE", "CREATE"].map(String::from).into();
        assert_eq!(report(Kind::Schema, &["ALL".into()], &held), ["ALL"]);
        let held: BTreeSet<String> = ["USAGE"].map(String::from).into();
        assert_eq!(report(Kind::Schema, &["ALL".into()], &held), ["USAGE"]);
    }
}

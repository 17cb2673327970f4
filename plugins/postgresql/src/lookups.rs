//! The provider's functions (data sources): `postgresql:getSchemas`, `postgresql:getTables`
//! and `postgresql:getSequences` list what a database holds, filtered by name patterns as the
//! anchor provider's data sources filter them: `LIKE ANY`, `LIKE ALL`, `NOT LIKE ALL` and a
//! regular expression (`~`), all of them together. Every pattern is sent as a literal.

use plinth_sdk::{
    FunctionSchema, PropertyMap, ProviderError, Type, Value, from_value, properties_of, to_value,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::server::{Server, text};
use crate::sql::{self, literal};

/// Name patterns; all given ones apply.
struct Patterns<'a> {
    like_any_patterns: &'a [String],
    like_all_patterns: &'a [String],
    not_like_all_patterns: &'a [String],
    regex_pattern: Option<&'a str>,
}

/// The patterns of an arguments struct, whose pattern fields are the same in each.
macro_rules! patterns {
    ($args:expr) => {
        Patterns {
            like_any_patterns: &$args.like_any_patterns,
            like_all_patterns: &$args.like_all_patterns,
            not_like_all_patterns: &$args.not_like_all_patterns,
            regex_pattern: $args.regex_pattern.as_deref(),
        }
    };
}

impl Patterns<'_> {
    /// The SQL conditions on `column`, each starting with ` AND`.
    fn conditions(&self, column: &str) -> String {
        let array = |patterns: &[String]| {
            let items: Vec<String> = patterns.iter().map(|p| literal(p)).collect();
            format!("ARRAY[{}]::text[]", items.join(", "))
        };
        let mut sql = String::new();
        if !self.like_any_patterns.is_empty() {
            sql += &format!(" AND {column} LIKE ANY ({})", array(self.like_any_patterns));
        }
        if !self.like_all_patterns.is_empty() {
            sql += &format!(" AND {column} LIKE ALL ({})", array(self.like_all_patterns));
        }
        if !self.not_like_all_patterns.is_empty() {
            sql += &format!(
                " AND {column} NOT LIKE ALL ({})",
                array(self.not_like_all_patterns)
            );
        }
        if let Some(regex) = self.regex_pattern {
            sql += &format!(" AND {column} ~ {}", literal(regex));
        }
        sql
    }
}

/// The arguments of `postgresql:getSchemas`.
#[derive(Debug, Deserialize, JsonSchema)]
struct GetSchemasArgs {
    /// The database to list.
    database: String,
    /// Also list `information_schema` and the `pg_` schemas (`public` is always listed).
    #[serde(default)]
    include_system_schemas: bool,
    /// Names that match any of these `LIKE` patterns (`%` any text, `_` one character).
    #[serde(default)]
    like_any_patterns: Vec<String>,
    /// Names that match all of these `LIKE` patterns.
    #[serde(default)]
    like_all_patterns: Vec<String>,
    /// Names that match none of these `LIKE` patterns.
    #[serde(default)]
    not_like_all_patterns: Vec<String>,
    /// Names that match this POSIX regular expression.
    #[serde(default)]
    regex_pattern: Option<String>,
}

/// The arguments of `postgresql:getTables`.
#[derive(Debug, Deserialize, JsonSchema)]
struct GetTablesArgs {
    /// The database to list.
    database: String,
    /// The schemas to look in; empty: all of them.
    #[serde(default)]
    schemas: Vec<String>,
    /// The table types, as `information_schema.tables` names them (`BASE TABLE`, `VIEW`,
    /// `FOREIGN`, `LOCAL TEMPORARY`); empty: all of them.
    #[serde(default)]
    table_types: Vec<String>,
    /// Names that match any of these `LIKE` patterns (`%` any text, `_` one character).
    #[serde(default)]
    like_any_patterns: Vec<String>,
    /// Names that match all of these `LIKE` patterns.
    #[serde(default)]
    like_all_patterns: Vec<String>,
    /// Names that match none of these `LIKE` patterns.
    #[serde(default)]
    not_like_all_patterns: Vec<String>,
    /// Names that match this POSIX regular expression.
    #[serde(default)]
    regex_pattern: Option<String>,
}

/// The arguments of `postgresql:getSequences`.
#[derive(Debug, Deserialize, JsonSchema)]
struct GetSequencesArgs {
    /// The database to list.
    database: String,
    /// The schemas to look in; empty: all of them.
    #[serde(default)]
    schemas: Vec<String>,
    /// Names that match any of these `LIKE` patterns (`%` any text, `_` one character).
    #[serde(default)]
    like_any_patterns: Vec<String>,
    /// Names that match all of these `LIKE` patterns.
    #[serde(default)]
    like_all_patterns: Vec<String>,
    /// Names that match none of these `LIKE` patterns.
    #[serde(default)]
    not_like_all_patterns: Vec<String>,
    /// Names that match this POSIX regular expression.
    #[serde(default)]
    regex_pattern: Option<String>,
}

/// What `postgresql:getSchemas` returns.
#[derive(Serialize, JsonSchema)]
struct Schemas {
    /// The schemas' names, sorted.
    schemas: Vec<String>,
}

/// A table or view found.
#[derive(Serialize, JsonSchema)]
struct Table {
    /// Its name.
    object_name: String,
    /// Its schema.
    schema_name: String,
    /// `BASE TABLE`, `VIEW`, `FOREIGN` or `LOCAL TEMPORARY`.
    table_type: String,
}

/// A sequence found.
#[derive(Serialize, JsonSchema)]
struct Sequence {
    /// Its name.
    object_name: String,
    /// Its schema.
    schema_name: String,
    /// Its data type, such as `bigint`.
    data_type: String,
}

/// What `postgresql:getTables` returns.
#[derive(Serialize, JsonSchema)]
struct Tables {
    /// The tables, sorted by schema and name.
    tables: Vec<Table>,
}

/// What `postgresql:getSequences` returns.
#[derive(Serialize, JsonSchema)]
struct Sequences {
    /// The sequences, sorted by schema and name.
    sequences: Vec<Sequence>,
}

/// The functions' schemas.
pub(crate) fn schemas() -> Vec<FunctionSchema> {
    let function = |token: &str, description: &str, inputs, returns: &str, output| {
        let mut f = FunctionSchema::new(token)
            .describe(description)
            .returns(Type::object(returns, output));
        f.inputs = inputs;
        f
    };
    vec![
        function(
            "postgresql:getSchemas",
            "The schemas of a database whose names match the patterns.",
            properties_of::<GetSchemasArgs>(),
            "GetSchemasResult",
            properties_of::<Schemas>(),
        ),
        function(
            "postgresql:getTables",
            "The tables (and views) of a database whose names match the patterns.",
            properties_of::<GetTablesArgs>(),
            "GetTablesResult",
            properties_of::<Tables>(),
        ),
        function(
            "postgresql:getSequences",
            "The sequences of a database whose names match the patterns.",
            properties_of::<GetSequencesArgs>(),
            "GetSequencesResult",
            properties_of::<Sequences>(),
        ),
    ]
}

fn args<T: for<'de> Deserialize<'de>>(token: &str, args: PropertyMap) -> Result<T, ProviderError> {
    from_value(Value::Object(args))
        .map_err(|e| ProviderError::failed(format!("the arguments of `{token}` do not read: {e}")))
}

fn database_problem(database: &str) -> Result<(), ProviderError> {
    match sql::name_problem(database) {
        Some(reason) => Err(ProviderError::invalid("database", reason)),
        None => Ok(()),
    }
}

/// ` AND column IN ('a', 'b')`, or nothing for no names.
fn one_of(column: &str, names: &[String]) -> String {
    if names.is_empty() {
        return String::new();
    }
    let list: Vec<String> = names.iter().map(|n| literal(n)).collect();
    format!(" AND {column} IN ({})", list.join(", "))
}

/// Calls the function `token`; `None` if it is not one of these.
pub(crate) fn invoke(
    server: &Server,
    token: &str,
    given: PropertyMap,
) -> Option<Result<Value, ProviderError>> {
    let result = match token {
        "postgresql:getSchemas" => get_schemas(server, args(token, given)),
        "postgresql:getTables" => get_tables(server, args(token, given)),
        "postgresql:getSequences" => get_sequences(server, args(token, given)),
        _ => return None,
    };
    Some(result)
}

fn get_schemas(
    server: &Server,
    a: Result<GetSchemasArgs, ProviderError>,
) -> Result<Value, ProviderError> {
    let a = a?;
    database_problem(&a.database)?;
    let mut session = server.connect(Some(&a.database))?;
    let system = if a.include_system_schemas {
        ""
    } else {
        " AND (nspname = 'public' OR (nspname NOT LIKE 'pg\\_%' AND nspname <> 'information_schema'))"
    };
    let sql = format!(
        "SELECT nspname FROM pg_namespace WHERE true{system}{} ORDER BY 1",
        patterns!(a).conditions("nspname")
    );
    let rows = session.rows("listing the schemas", &sql)?;
    Ok(to_value(&Schemas {
        schemas: rows.iter().map(|r| text(r, 0)).collect(),
    })?)
}

fn get_tables(
    server: &Server,
    a: Result<GetTablesArgs, ProviderError>,
) -> Result<Value, ProviderError> {
    let a = a?;
    database_problem(&a.database)?;
    let mut session = server.connect(Some(&a.database))?;
    let sql = format!(
        "SELECT table_name, table_schema, table_type FROM information_schema.tables \
         WHERE true{}{}{} ORDER BY 2, 1",
        one_of("table_schema", &a.schemas),
        one_of("table_type", &a.table_types),
        patterns!(a).conditions("table_name")
    );
    let rows = session.rows("listing the tables", &sql)?;
    Ok(to_value(&Tables {
        tables: (rows.iter())
            .map(|r| Table {
                object_name: text(r, 0),
                schema_name: text(r, 1),
                table_type: text(r, 2),
            })
            .collect(),
    })?)
}

fn get_sequences(
    server: &Server,
    a: Result<GetSequencesArgs, ProviderError>,
) -> Result<Value, ProviderError> {
    let a = a?;
    database_problem(&a.database)?;
    let mut session = server.connect(Some(&a.database))?;
    let sql = format!(
        "SELECT sequence_name, sequence_schema, data_type FROM information_schema.sequences \
         WHERE true{}{} ORDER BY 2, 1",
        one_of("sequence_schema", &a.schemas),
        patterns!(a).conditions("sequence_name")
    );
    let rows = session.rows("listing the sequences", &sql)?;
    Ok(to_value(&Sequences {
        sequences: (rows.iter())
            .map(|r| Sequence {
                object_name: text(r, 0),
                schema_name: text(r, 1),
                data_type: text(r, 2),
            })
            .collect(),
    })?)
}

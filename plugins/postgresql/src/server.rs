//! The server the provider is configured for, as the resources use it: a fresh connection per
//! operation, to the database the operation concerns.

use std::sync::Arc;

use plinth_sdk::ProviderError;

use crate::config::Settings;
use crate::wire::{Connection, DbError, Row, sqlstate};

/// The configured server; shared by every resource type.
#[derive(Clone, Default)]
pub(crate) struct Server {
    settings: Arc<Settings>,
}

impl Server {
    pub(crate) fn new(settings: Settings) -> Server {
        Server {
            settings: Arc::new(settings),
        }
    }

    /// The database the configuration names, for server-wide objects.
    pub(crate) fn home(&self) -> &str {
        &self.settings.database
    }

    /// A session in `database` (the configured one if `None`).
    pub(crate) fn connect(&self, database: Option<&str>) -> Result<Session, ProviderError> {
        let database = self.database_or_home(database);
        let target = self.settings.target();
        Connection::open(&target, database)
            .map(|conn| Session { conn })
            .map_err(|e| {
                ProviderError::Failed(format!(
                    "cannot connect to database `{database}` on {}:{} as `{}`: {e}",
                    target.host, target.port, target.username
                ))
            })
    }

    /// A session in `database`, or `None` if that database does not exist (any more).
    pub(crate) fn connect_if_exists(
        &self,
        database: &str,
    ) -> Result<Option<Session>, ProviderError> {
        let target = self.settings.target();
        match Connection::open(&target, database) {
            Ok(conn) => Ok(Some(Session { conn })),
            Err(e) if e.code() == Some(sqlstate::INVALID_CATALOG_NAME) => Ok(None),
            Err(e) => Err(ProviderError::Failed(format!(
                "cannot connect to database `{database}` on {}:{} as `{}`: {e}",
                target.host, target.port, target.username
            ))),
        }
    }
}

impl Server {
    /// The current name of the database `part` names (an OID or a name), or `None` if it is
    /// gone. Objects inside a database keep its OID in their ids, so a database renamed in
    /// place is still theirs.
    pub(crate) fn database_name(&self, part: &str) -> Result<Option<String>, ProviderError> {
        let mut session = self.connect(None)?;
        let sql = format!(
            "SELECT datname FROM pg_database WHERE {}",
            Lookup::of(part).condition("oid", "datname")
        );
        Ok(session
            .row("looking up the database", &sql)?
            .map(|row| text(&row, 0)))
    }
}

impl Server {
    /// The database an optional `database` input names: the configured one if absent.
    pub(crate) fn database_or_home<'a>(&'a self, database: Option<&'a str>) -> &'a str {
        database.unwrap_or(self.home())
    }

    /// The optional `database` input that reads back for an object found in `database`,
    /// when the program gave `given`: absent stays absent for the configured database.
    pub(crate) fn database_input(&self, given: Option<&str>, database: &str) -> Option<String> {
        match given {
            None if database == self.home() => None,
            _ => Some(database.to_owned()),
        }
    }
}

/// The error for the `kind` named `name`, recorded but no longer there.
pub(crate) fn gone(kind: &str, name: &str) -> ProviderError {
    ProviderError::failed(format!(
        "{kind} `{name}` no longer exists; run `plinth refresh`"
    ))
}

/// One connection, whose failures say what was being done.
pub(crate) struct Session {
    conn: Connection,
}

impl Session {
    /// Runs `sql`; a failure says it happened while `doing`.
    pub(crate) fn run(&mut self, doing: &str, sql: &str) -> Result<(), ProviderError> {
        self.conn.execute(sql).map_err(failed(doing))
    }

    /// Runs `sql`; the server's error as it is, for callers that react to its code.
    pub(crate) fn execute(&mut self, sql: &str) -> Result<(), DbError> {
        self.conn.execute(sql)
    }

    /// The rows `sql` returns.
    pub(crate) fn rows(&mut self, doing: &str, sql: &str) -> Result<Vec<Row>, ProviderError> {
        self.conn.query(sql).map_err(failed(doing))
    }

    /// The OID of the database the session is in.
    pub(crate) fn database_oid(&mut self) -> Result<String, ProviderError> {
        let sql = "SELECT oid FROM pg_database WHERE datname = current_database()";
        let row = self.row("looking up the database", sql)?;
        Ok(row.map(|r| text(&r, 0)).unwrap_or_default())
    }

    /// The first row `sql` returns, if any.
    pub(crate) fn row(&mut self, doing: &str, sql: &str) -> Result<Option<Row>, ProviderError> {
        Ok(self.rows(doing, sql)?.into_iter().next())
    }
}

fn failed(doing: &str) -> impl FnOnce(DbError) -> ProviderError + '_ {
    move |e| ProviderError::Failed(format!("{doing}: {e}"))
}

/// Column `i` of `row` as text ("" for NULL).
pub(crate) fn text(row: &Row, i: usize) -> String {
    row.get(i).cloned().flatten().unwrap_or_default()
}

/// How a stored id names an object: by OID (digits) or by name.
pub(crate) enum Lookup<'a> {
    Oid(u32),
    Name(&'a str),
}

impl<'a> Lookup<'a> {
    pub(crate) fn of(id: &'a str) -> Lookup<'a> {
        match id.parse() {
            Ok(oid) if !id.starts_with('+') => Lookup::Oid(oid),
            _ => Lookup::Name(id),
        }
    }

    /// The SQL condition selecting the object: `oid_column = N` or `name_column = 'name'`.
    pub(crate) fn condition(&self, oid_column: &str, name_column: &str) -> String {
        match self {
            Lookup::Oid(oid) => format!("{oid_column} = {oid}"),
            Lookup::Name(name) => format!("{name_column} = {}", crate::sql::literal(name)),
        }
    }
}

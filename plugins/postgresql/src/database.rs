//! `postgresql:Database`: a database, its owner and settings.
//!
//! The id is the database's OID, so a change of `name` renames it in place (PostgreSQL allows it
//! while no one is connected to it); import takes the OID or the name. `encoding`, `lc_collate`,
//! `lc_ctype` and `template` are fixed at creation: a change replaces the database.

use plinth_sdk::{
    CheckFailure, Created, ProviderError, ReadResult, ResourceContext, ResourceSchema,
    TypedResource,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::defaults::{no_limit, yes};
use crate::server::{Lookup, Server, Session, gone, text};
use crate::sql::{self, ident, literal};

/// The inputs of `postgresql:Database`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub(crate) struct DatabaseInputs {
    /// The database's name (at most 63 bytes); a change renames it.
    pub(crate) name: String,
    /// The role that owns it; absent: the role the provider connects as.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) owner: Option<String>,
    /// The character set encoding, such as `UTF8`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-plinth-replace-on-change" = true))]
    pub(crate) encoding: Option<String>,
    /// The collation order (LC_COLLATE), such as `C` or `en_US.UTF-8`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-plinth-replace-on-change" = true))]
    pub(crate) lc_collate: Option<String>,
    /// The character classification (LC_CTYPE).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-plinth-replace-on-change" = true))]
    pub(crate) lc_ctype: Option<String>,
    /// The database it is copied from (`template1` unless given; `template0` for another
    /// encoding or locale).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-plinth-replace-on-change" = true))]
    pub(crate) template: Option<String>,
    /// How many concurrent connections it accepts; -1: no limit.
    #[serde(default = "no_limit")]
    pub(crate) connection_limit: i32,
    /// Whether anyone may connect to it.
    #[serde(default = "yes")]
    pub(crate) allow_connections: bool,
    /// Whether it is a template others may be copied from.
    #[serde(default)]
    pub(crate) is_template: bool,
}

/// The outputs: the database as it is.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub(crate) struct DatabaseOutputs {
    pub(crate) name: String,
    /// The database's OID.
    pub(crate) oid: i64,
    /// The role that owns it.
    pub(crate) owner: String,
    pub(crate) encoding: String,
    pub(crate) lc_collate: String,
    pub(crate) lc_ctype: String,
    pub(crate) connection_limit: i32,
    pub(crate) allow_connections: bool,
    pub(crate) is_template: bool,
}

/// The `postgresql:Database` resource type.
pub(crate) struct Database(pub(crate) Server);

/// Whether two spellings of an encoding or locale name the same one (`UTF8`, `utf-8`).
fn same_setting(a: &str, b: &str) -> bool {
    let norm = |s: &str| {
        s.chars()
            .filter(|c| *c != '-' && *c != '_')
            .collect::<String>()
            .to_lowercase()
    };
    norm(a) == norm(b)
}

/// What the catalogs say of the database `lookup` names.
fn fetch(
    session: &mut Session,
    lookup: Lookup<'_>,
) -> Result<Option<DatabaseOutputs>, ProviderError> {
    let sql = format!(
        "SELECT oid, datname, pg_get_userbyid(datdba), pg_encoding_to_char(encoding), \
         datcollate, datctype, datconnlimit, datallowconn, datistemplate FROM pg_database \
         WHERE {}",
        lookup.condition("oid", "datname")
    );
    Ok(session
        .row("reading the database", &sql)?
        .map(|row| DatabaseOutputs {
            oid: text(&row, 0).parse().unwrap_or_default(),
            name: text(&row, 1),
            owner: text(&row, 2),
            encoding: text(&row, 3),
            lc_collate: text(&row, 4),
            lc_ctype: text(&row, 5),
            connection_limit: text(&row, 6).parse().unwrap_or(-1),
            allow_connections: sql::boolean(row[7].as_deref()),
            is_template: sql::boolean(row[8].as_deref()),
        }))
}

/// The inputs that describe `found`; what was not asked for stays unasked, and spellings of the
/// same setting keep the input's.
fn as_inputs(found: &DatabaseOutputs, stored: &DatabaseInputs) -> DatabaseInputs {
    let keep = |asked: &Option<String>, actual: &str| {
        asked.as_ref().map(|a| {
            if same_setting(a, actual) {
                a.clone()
            } else {
                actual.to_owned()
            }
        })
    };
    DatabaseInputs {
        name: found.name.clone(),
        owner: stored.owner.as_ref().map(|_| found.owner.clone()),
        encoding: keep(&stored.encoding, &found.encoding),
        lc_collate: keep(&stored.lc_collate, &found.lc_collate),
        lc_ctype: keep(&stored.lc_ctype, &found.lc_ctype),
        template: stored.template.clone(),
        connection_limit: found.connection_limit,
        allow_connections: found.allow_connections,
        is_template: found.is_template,
    }
}

fn settings(db: &DatabaseInputs) -> String {
    format!(
        " ALLOW_CONNECTIONS {} CONNECTION LIMIT {} IS_TEMPLATE {}",
        db.allow_connections, db.connection_limit, db.is_template
    )
}

impl Database {}

impl TypedResource for Database {
    type Inputs = DatabaseInputs;
    type Outputs = DatabaseOutputs;

    fn schema(&self) -> ResourceSchema {
        ResourceSchema::derive::<Self>("postgresql:Database").describe("A PostgreSQL database.")
    }

    fn validate(&self, _: &ResourceContext<'_>, db: &DatabaseInputs) -> Vec<CheckFailure> {
        let mut names = vec![("name", db.name.as_str())];
        names.extend(db.owner.as_deref().map(|o| ("owner", o)));
        names.extend(db.template.as_deref().map(|t| ("template", t)));
        let mut failures = sql::check_names(names);
        if db.connection_limit < -1 {
            failures.push(CheckFailure::new(
                "connection_limit",
                "must be -1 (no limit) or more",
            ));
        }
        failures
    }

    fn create(
        &self,
        _: &ResourceContext<'_>,
        db: DatabaseInputs,
    ) -> Result<Created<DatabaseOutputs>, ProviderError> {
        let mut session = self.0.connect(None)?;
        let mut sql = format!("CREATE DATABASE {}", ident(&db.name));
        if let Some(owner) = &db.owner {
            sql += &format!(" OWNER {}", ident(owner));
        }
        if let Some(template) = &db.template {
            sql += &format!(" TEMPLATE {}", ident(template));
        }
        for (clause, value) in [
            ("ENCODING", &db.encoding),
            ("LC_COLLATE", &db.lc_collate),
            ("LC_CTYPE", &db.lc_ctype),
        ] {
            if let Some(value) = value {
                sql += &format!(" {clause} {}", literal(value));
            }
        }
        sql += &settings(&db);
        // CREATE DATABASE cannot run in a transaction: it is a statement of its own.
        session.run(&format!("creating database `{}`", db.name), &sql)?;
        let outputs = fetch(&mut session, Lookup::Name(&db.name))?
            .ok_or_else(|| gone("database", &db.name))?;
        Ok(Created {
            id: outputs.oid.to_string(),
            outputs,
        })
    }

    fn read(
        &self,
        _: &ResourceContext<'_>,
        id: String,
        inputs: DatabaseInputs,
        _: DatabaseOutputs,
    ) -> Result<Option<ReadResult<DatabaseInputs, DatabaseOutputs>>, ProviderError> {
        let mut session = self.0.connect(None)?;
        let Some(found) = fetch(&mut session, Lookup::of(&id))? else {
            return Ok(None);
        };
        Ok(Some(ReadResult {
            id: found.oid.to_string(),
            inputs: as_inputs(&found, &inputs),
            outputs: found,
        }))
    }

    /// Imports the database `id` (its OID or its name), stating its owner; the encoding and
    /// locale it was made with stay unstated, as in a program that did not ask for them.
    fn import(
        &self,
        _: &ResourceContext<'_>,
        id: String,
    ) -> Result<Option<ReadResult<DatabaseInputs, DatabaseOutputs>>, ProviderError> {
        let mut session = self.0.connect(None)?;
        let Some(found) = fetch(&mut session, Lookup::of(&id))? else {
            return Ok(None);
        };
        let nothing = DatabaseInputs {
            name: String::new(),
            owner: Some(String::new()),
            encoding: None,
            lc_collate: None,
            lc_ctype: None,
            template: None,
            connection_limit: no_limit(),
            allow_connections: yes(),
            is_template: false,
        };
        Ok(Some(ReadResult {
            id: found.oid.to_string(),
            inputs: as_inputs(&found, &nothing),
            outputs: found,
        }))
    }

    fn update(
        &self,
        _: &ResourceContext<'_>,
        id: &str,
        old: DatabaseInputs,
        _: DatabaseOutputs,
        new: DatabaseInputs,
    ) -> Result<DatabaseOutputs, ProviderError> {
        let mut session = self.0.connect(None)?;
        let current =
            fetch(&mut session, Lookup::of(id))?.ok_or_else(|| gone("database", &old.name))?;
        let doing = format!("updating database `{}`", new.name);
        if current.name != new.name {
            session.run(
                &doing,
                &format!(
                    "ALTER DATABASE {} RENAME TO {}",
                    ident(&current.name),
                    ident(&new.name)
                ),
            )?;
        }
        if let Some(owner) = &new.owner
            && *owner != current.owner
        {
            session.run(
                &doing,
                &format!(
                    "ALTER DATABASE {} OWNER TO {}",
                    ident(&new.name),
                    ident(owner)
                ),
            )?;
        }
        session.run(
            &doing,
            &format!("ALTER DATABASE {} WITH{}", ident(&new.name), settings(&new)),
        )?;
        fetch(&mut session, Lookup::of(id))?.ok_or_else(|| gone("database", &new.name))
    }

    fn delete(
        &self,
        _: &ResourceContext<'_>,
        id: &str,
        _: DatabaseInputs,
        _: DatabaseOutputs,
    ) -> Result<(), ProviderError> {
        let mut session = self.0.connect(None)?;
        let Some(current) = fetch(&mut session, Lookup::of(id))? else {
            return Ok(());
        };
        let doing = format!("dropping database `{}`", current.name);
        if current.is_template {
            // A template cannot be dropped.
            session.run(
                &doing,
                &format!("ALTER DATABASE {} IS_TEMPLATE false", ident(&current.name)),
            )?;
        }
        session.run(&doing, &format!("DROP DATABASE {}", ident(&current.name)))
    }
}

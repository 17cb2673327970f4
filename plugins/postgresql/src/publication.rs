//! `postgresql:Publication`: a set of tables whose changes logical replication sends
//! (`CREATE PUBLICATION`), to subscriptions on other servers.
//!
//! The id is `DATABASE-OID/PUBLICATION-OID`, so a change of `name` renames it in place; import
//! takes `DATABASE/NAME`. Its tables, the operations it publishes, `publish_via_partition_root`
//! and its owner change in place; `all_tables` and the database are fixed at creation.

use std::collections::BTreeSet;

use plinth_sdk::{
    CheckFailure, Created, ProviderError, ReadResult, ResourceContext, ResourceSchema,
    TypedResource,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::in_database::{self, InDatabase};
use crate::server::{Lookup, Server, Session, text};
use crate::sql::{self, ident, literal, qualified};

/// The inputs of `postgresql:Publication`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub(crate) struct PublicationInputs {
    /// The publication's name; a change renames it.
    pub(crate) name: String,
    /// The database it publishes from; absent: the provider's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-plinth-replace-on-change" = true))]
    pub(crate) database: Option<String>,
    /// The tables, `schema.table` (or `table`, in `public`).
    #[serde(default)]
    pub(crate) tables: Vec<String>,
    /// Publish every table of the database, now and to come (instead of `tables`).
    #[serde(default)]
    #[schemars(extend("x-plinth-replace-on-change" = true))]
    pub(crate) all_tables: bool,
    /// The role that owns it; absent: the role the provider connects as.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) owner: Option<String>,
    /// The operations published, of `insert`, `update`, `delete` and `truncate`; absent: all
    /// four.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) publish_param: Option<Vec<String>>,
    /// Changes of partitions are published as changes of their root table.
    #[serde(default)]
    pub(crate) publish_via_partition_root_param: bool,
    /// Deleting it also drops what depends on it.
    #[serde(default)]
    pub(crate) drop_cascade: bool,
}

/// The outputs: the publication as it is.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub(crate) struct PublicationOutputs {
    pub(crate) name: String,
    pub(crate) database: String,
    /// Its tables, `schema.table`, sorted.
    pub(crate) tables: Vec<String>,
    pub(crate) all_tables: bool,
    pub(crate) owner: String,
    /// The operations it publishes.
    pub(crate) publish_param: Vec<String>,
    pub(crate) publish_via_partition_root_param: bool,
    /// Its OID in its database.
    pub(crate) oid: i64,
}

/// The `postgresql:Publication` resource type.
pub(crate) struct Publication(pub(crate) Server);

const OPERATIONS: [&str; 4] = ["insert", "update", "delete", "truncate"];

/// `schema.table` of a table input.
fn split_table(table: &str) -> (&str, &str) {
    table.split_once('.').unwrap_or(("public", table))
}

/// The tables as a set of `schema.table`, for comparison.
fn table_set(tables: &[String]) -> BTreeSet<String> {
    tables
        .iter()
        .map(|t| {
            let (schema, table) = split_table(t);
            format!("{schema}.{table}")
        })
        .collect()
}

/// `TABLE a.b, c.d`, each part quoted.
fn table_list(tables: &[String]) -> String {
    let list: Vec<String> = tables
        .iter()
        .map(|t| {
            let (schema, table) = split_table(t);
            qualified(schema, table)
        })
        .collect();
    format!("TABLE {}", list.join(", "))
}

/// `(publish = '...', publish_via_partition_root = ...)`.
fn parameters(p: &PublicationInputs) -> String {
    let publish = (p.publish_param.clone())
        .unwrap_or_else(|| OPERATIONS.map(String::from).to_vec())
        .iter()
        .map(|op| op.trim().to_lowercase())
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "(publish = {}, publish_via_partition_root = {})",
        literal(&publish),
        p.publish_via_partition_root_param
    )
}

impl InDatabase for Publication {
    const KIND: &'static str = "publication";
    const KEYWORD: &'static str = "PUBLICATION";
    type Outputs = PublicationOutputs;

    fn server(&self) -> &Server {
        &self.0
    }

    fn fetch(
        session: &mut Session,
        database: &str,
        lookup: Lookup<'_>,
    ) -> Result<Option<PublicationOutputs>, ProviderError> {
        let sql = format!(
            "SELECT oid, pubname, pg_get_userbyid(pubowner), puballtables, pubinsert, pubupdate, \
             pubdelete, pubtruncate, pubviaroot FROM pg_publication WHERE {}",
            lookup.condition("oid", "pubname")
        );
        let Some(row) = session.row("reading the publication", &sql)? else {
            return Ok(None);
        };
        let publish = (OPERATIONS.iter().enumerate())
            .filter(|(i, _)| sql::boolean(row[4 + i].as_deref()))
            .map(|(_, op)| op.to_string())
            .collect();
        let all_tables = sql::boolean(row[3].as_deref());
        let oid = text(&row, 0);
        let tables = if all_tables {
            Vec::new()
        } else {
            let sql = format!(
                "SELECT n.nspname || '.' || c.relname FROM pg_publication_rel r \
                 JOIN pg_class c ON c.oid = r.prrelid JOIN pg_namespace n ON n.oid = c.relnamespace \
                 WHERE r.prpubid = {oid} ORDER BY 1",
                oid = oid.parse::<u32>().unwrap_or_default()
            );
            (session.rows("reading the publication's tables", &sql)?)
                .iter()
                .map(|r| text(r, 0))
                .collect()
        };
        Ok(Some(PublicationOutputs {
            oid: oid.parse().unwrap_or_default(),
            name: text(&row, 1),
            owner: text(&row, 2),
            all_tables,
            publish_param: publish,
            publish_via_partition_root_param: sql::boolean(row[8].as_deref()),
            tables,
            database: database.to_owned(),
        }))
    }

    fn key(outputs: &PublicationOutputs) -> String {
        outputs.oid.to_string()
    }

    fn name(outputs: &PublicationOutputs) -> &str {
        &outputs.name
    }
}

impl TypedResource for Publication {
    type Inputs = PublicationInputs;
    type Outputs = PublicationOutputs;

    fn schema(&self) -> ResourceSchema {
        ResourceSchema::derive::<Self>("postgresql:Publication")
            .describe("A publication: the tables whose changes logical replication sends.")
    }

    fn validate(&self, _: &ResourceContext<'_>, p: &PublicationInputs) -> Vec<CheckFailure> {
        let mut names = vec![("name", p.name.as_str())];
        names.extend(p.database.as_deref().map(|d| ("database", d)));
        names.extend(p.owner.as_deref().map(|o| ("owner", o)));
        for table in &p.tables {
            let (schema, table) = split_table(table);
            names.extend([("tables", schema), ("tables", table)]);
        }
        let mut failures = sql::check_names(names);
        if p.all_tables && !p.tables.is_empty() {
            failures.push(CheckFailure::new(
                "tables",
                "a publication of all tables names none; leave `tables` out or set \
                 `all_tables` false",
            ));
        }
        for op in p.publish_param.iter().flatten() {
            if !OPERATIONS.contains(&op.trim().to_lowercase().as_str()) {
                failures.push(CheckFailure::new(
                    "publish_param",
                    format!("`{op}` is not one of {}", OPERATIONS.join(", ")),
                ));
            }
        }
        failures
    }

    fn create(
        &self,
        _: &ResourceContext<'_>,
        p: PublicationInputs,
    ) -> Result<Created<PublicationOutputs>, ProviderError> {
        let mut session = self.0.connect(p.database.as_deref())?;
        let database = self.0.database_or_home(p.database.as_deref());
        let mut sql = format!("CREATE PUBLICATION {}", ident(&p.name));
        if p.all_tables {
            sql += " FOR ALL TABLES";
        } else if !p.tables.is_empty() {
            sql += &format!(" FOR {}", table_list(&p.tables));
        }
        sql += &format!(" WITH {};", parameters(&p));
        if let Some(owner) = &p.owner {
            sql += &format!(
                "ALTER PUBLICATION {} OWNER TO {};",
                ident(&p.name),
                ident(owner)
            );
        }
        session.run(&format!("creating publication `{}`", p.name), &sql)?;
        in_database::created::<Self>(&mut session, database, &p.name)
    }

    fn read(
        &self,
        _: &ResourceContext<'_>,
        id: String,
        inputs: PublicationInputs,
        _: PublicationOutputs,
    ) -> Result<Option<ReadResult<PublicationInputs, PublicationOutputs>>, ProviderError> {
        let Some(found) = self.find(&id)? else {
            return Ok(None);
        };
        let current = &found.current;
        let tables = if table_set(&inputs.tables) == table_set(&current.tables) {
            inputs.tables.clone()
        } else {
            current.tables.clone()
        };
        let asked: Option<BTreeSet<String>> = (inputs.publish_param.as_ref())
            .map(|ops| ops.iter().map(|op| op.trim().to_lowercase()).collect());
        let held: BTreeSet<String> = current.publish_param.iter().cloned().collect();
        let publish_param = match asked {
            Some(asked) if asked == held => inputs.publish_param.clone(),
            None if held.len() == OPERATIONS.len() => None,
            _ => Some(current.publish_param.clone()),
        };
        let read = PublicationInputs {
            name: current.name.clone(),
            database: self
                .0
                .database_input(inputs.database.as_deref(), &found.database),
            tables,
            all_tables: current.all_tables,
            owner: inputs.owner.as_ref().map(|_| current.owner.clone()),
            publish_param,
            publish_via_partition_root_param: current.publish_via_partition_root_param,
            drop_cascade: inputs.drop_cascade,
        };
        found.read_result(read).map(Some)
    }

    fn update(
        &self,
        _: &ResourceContext<'_>,
        id: &str,
        old: PublicationInputs,
        _: PublicationOutputs,
        new: PublicationInputs,
    ) -> Result<PublicationOutputs, ProviderError> {
        let mut found = self.find_recorded(id, &old.name)?;
        let current = &found.current;
        let mut sql = in_database::rename::<Self>(&current.name, &new.name);
        let name = ident(&new.name);
        if !new.all_tables && table_set(&new.tables) != table_set(&current.tables) {
            if new.tables.is_empty() {
                sql += &format!(
                    "ALTER PUBLICATION {name} DROP {};",
                    table_list(&current.tables)
                );
            } else {
                sql += &format!("ALTER PUBLICATION {name} SET {};", table_list(&new.tables));
            }
        }
        sql += &format!("ALTER PUBLICATION {name} SET {};", parameters(&new));
        if let Some(owner) = &new.owner
            && *owner != current.owner
        {
            sql += &format!("ALTER PUBLICATION {name} OWNER TO {};", ident(owner));
        }
        found
            .session
            .run(&format!("updating publication `{}`", new.name), &sql)?;
        found.reread(&new.name)
    }

    fn delete(
        &self,
        _: &ResourceContext<'_>,
        id: &str,
        p: PublicationInputs,
        _: PublicationOutputs,
    ) -> Result<(), ProviderError> {
        self.drop_object(id, p.drop_cascade)
    }
}

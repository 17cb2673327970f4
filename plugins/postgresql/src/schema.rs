//! `postgresql:Schema`: a schema in a database, and its owner.
//!
//! The id is `DATABASE-OID/SCHEMA-OID`, so a change of `name` renames the schema in place, and a
//! database renamed in place keeps its schemas; import also takes names, `DATABASE/SCHEMA` (the
//! database is what comes before the last `/`). A schema cannot move to another database: that
//! change fails, saying to replace it. `drop_cascade` says whether deleting it also drops what
//! it holds.

use plinth_sdk::{
    CheckFailure, Created, ProviderError, ReadResult, ResourceContext, ResourceSchema,
    TypedResource,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::in_database::{self, InDatabase, refuse_move};
use crate::server::{Lookup, Server, Session, text};
use crate::sql::{self, ident};

/// The inputs of `postgresql:Schema`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub(crate) struct SchemaInputs {
    /// The schema's name (at most 63 bytes); a change renames it.
    pub(crate) name: String,
    /// The database it is in (renaming that database in place keeps the schema).
    pub(crate) database: String,
    /// The role that owns it; absent: the role the provider connects as.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) owner: Option<String>,
    /// Deleting the schema also drops the objects in it; otherwise a schema that holds
    /// objects is not deleted and the delete fails.
    #[serde(default)]
    pub(crate) drop_cascade: bool,
}

/// The outputs: the schema as it is.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub(crate) struct SchemaOutputs {
    pub(crate) name: String,
    pub(crate) database: String,
    /// The schema's OID in its database.
    pub(crate) oid: i64,
    /// The role that owns it.
    pub(crate) owner: String,
}

/// The `postgresql:Schema` resource type.
pub(crate) struct Schema(pub(crate) Server);

impl InDatabase for Schema {
    const KIND: &'static str = "schema";
    const KEYWORD: &'static str = "SCHEMA";
    type Outputs = SchemaOutputs;

    fn server(&self) -> &Server {
        &self.0
    }

    /// The database is what comes before the last `/`.
    fn split_id(id: &str) -> Result<(&str, &str), ProviderError> {
        id.rsplit_once('/')
            .filter(|(db, schema)| !db.is_empty() && !schema.is_empty())
            .ok_or_else(|| {
                ProviderError::failed(format!(
                    "`{id}` is not a schema id; it is `DATABASE/SCHEMA` (names or OIDs)"
                ))
            })
    }

    fn fetch(
        session: &mut Session,
        database: &str,
        lookup: Lookup<'_>,
    ) -> Result<Option<SchemaOutputs>, ProviderError> {
        let sql = format!(
            "SELECT oid, nspname, pg_get_userbyid(nspowner) FROM pg_namespace WHERE {}",
            lookup.condition("oid", "nspname")
        );
        Ok(session
            .row("reading the schema", &sql)?
            .map(|row| SchemaOutputs {
                oid: text(&row, 0).parse().unwrap_or_default(),
                name: text(&row, 1),
                owner: text(&row, 2),
                database: database.to_owned(),
            }))
    }

    fn key(outputs: &SchemaOutputs) -> String {
        outputs.oid.to_string()
    }

    fn name(outputs: &SchemaOutputs) -> &str {
        &outputs.name
    }
}

impl TypedResource for Schema {
    type Inputs = SchemaInputs;
    type Outputs = SchemaOutputs;

    fn schema(&self) -> ResourceSchema {
        ResourceSchema::derive::<Self>("postgresql:Schema")
            .describe("A schema in a PostgreSQL database.")
    }

    fn validate(&self, _: &ResourceContext<'_>, s: &SchemaInputs) -> Vec<CheckFailure> {
        let mut names = vec![("name", s.name.as_str()), ("database", s.database.as_str())];
        names.extend(s.owner.as_deref().map(|o| ("owner", o)));
        sql::check_names(names)
    }

    fn create(
        &self,
        _: &ResourceContext<'_>,
        s: SchemaInputs,
    ) -> Result<Created<SchemaOutputs>, ProviderError> {
        let mut session = self.0.connect(Some(&s.database))?;
        let mut sql = format!("CREATE SCHEMA {}", ident(&s.name));
        if let Some(owner) = &s.owner {
            sql += &format!(" AUTHORIZATION {}", ident(owner));
        }
        session.run(&format!("creating schema `{}`", s.name), &sql)?;
        in_database::created::<Self>(&mut session, &s.database, &s.name)
    }

    fn read(
        &self,
        _: &ResourceContext<'_>,
        id: String,
        inputs: SchemaInputs,
        _: SchemaOutputs,
    ) -> Result<Option<ReadResult<SchemaInputs, SchemaOutputs>>, ProviderError> {
        let Some(found) = self.find(&id)? else {
            return Ok(None);
        };
        let read = SchemaInputs {
            name: found.current.name.clone(),
            database: found.database.clone(),
            owner: inputs.owner.as_ref().map(|_| found.current.owner.clone()),
            drop_cascade: inputs.drop_cascade,
        };
        found.read_result(read).map(Some)
    }

    fn update(
        &self,
        _: &ResourceContext<'_>,
        id: &str,
        old: SchemaInputs,
        _: SchemaOutputs,
        new: SchemaInputs,
    ) -> Result<SchemaOutputs, ProviderError> {
        let mut found = self.find_recorded(id, &old.name)?;
        refuse_move(Self::KIND, &old.name, &found.database, &new.database)?;
        let current = &found.current;
        let mut sql = in_database::rename::<Self>(&current.name, &new.name);
        if let Some(owner) = &new.owner
            && *owner != current.owner
        {
            sql += &format!(
                "ALTER SCHEMA {} OWNER TO {};",
                ident(&new.name),
                ident(owner)
            );
        }
        if !sql.is_empty() {
            found
                .session
                .run(&format!("updating schema `{}`", new.name), &sql)?;
        }
        found.reread(&new.name)
    }

    fn delete(
        &self,
        _: &ResourceContext<'_>,
        id: &str,
        inputs: SchemaInputs,
        _: SchemaOutputs,
    ) -> Result<(), ProviderError> {
        self.drop_object(id, inputs.drop_cascade)
    }
}

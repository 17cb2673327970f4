//! `postgresql:Extension`: an extension installed in a database.
//!
//! The id is `DATABASE-OID/NAME` (import also takes `DATABASE/NAME`), so a database renamed in
//! place keeps its extensions. A change of `schema` moves the extension, one of `version`
//! updates it, one of `name` replaces it; it cannot move to another database in place.

use plinth_sdk::{
    CheckFailure, Created, ProviderError, ReadResult, ResourceContext, ResourceSchema,
    TypedResource,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::in_database::{self, InDatabase, refuse_move};
use crate::server::{Lookup, Server, Session, text};
use crate::sql::{self, ident, literal};

/// The inputs of `postgresql:Extension`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub(crate) struct ExtensionInputs {
    /// The extension, such as `pgcrypto` or `hstore`.
    #[schemars(extend("x-plinth-replace-on-change" = true))]
    pub(crate) name: String,
    /// The database it is installed in (renaming that database in place keeps it).
    pub(crate) database: String,
    /// The schema its objects go in; absent: the first one of the search path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) schema: Option<String>,
    /// The version; absent: the default one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) version: Option<String>,
}

/// The outputs: the extension as installed.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub(crate) struct ExtensionOutputs {
    pub(crate) name: String,
    pub(crate) database: String,
    /// The schema its objects are in.
    pub(crate) schema: String,
    /// The installed version.
    pub(crate) version: String,
}

/// The `postgresql:Extension` resource type.
pub(crate) struct Extension(pub(crate) Server);

impl InDatabase for Extension {
    const KIND: &'static str = "extension";
    const KEYWORD: &'static str = "EXTENSION";
    type Outputs = ExtensionOutputs;

    fn server(&self) -> &Server {
        &self.0
    }

    /// The database is what comes before the last `/`.
    fn split_id(id: &str) -> Result<(&str, &str), ProviderError> {
        id.rsplit_once('/')
            .filter(|(db, name)| !db.is_empty() && !name.is_empty())
            .ok_or_else(|| {
                ProviderError::failed(format!(
                    "`{id}` is not an extension id; it is `DATABASE/NAME`"
                ))
            })
    }

    fn fetch(
        session: &mut Session,
        database: &str,
        lookup: Lookup<'_>,
    ) -> Result<Option<ExtensionOutputs>, ProviderError> {
        let sql = format!(
            "SELECT e.extname, n.nspname, e.extversion FROM pg_extension e \
             JOIN pg_namespace n ON n.oid = e.extnamespace WHERE {}",
            lookup.condition("e.oid", "e.extname")
        );
        Ok(session
            .row("reading the extension", &sql)?
            .map(|row| ExtensionOutputs {
                name: text(&row, 0),
                schema: text(&row, 1),
                version: text(&row, 2),
                database: database.to_owned(),
            }))
    }

    /// An id names an extension by its name, digits or not.
    fn lookup(name: &str) -> Lookup<'_> {
        Lookup::Name(name)
    }

    /// An extension's name is unique in its database and cannot change: the id records it.
    fn key(outputs: &ExtensionOutputs) -> String {
        outputs.name.clone()
    }

    fn name(outputs: &ExtensionOutputs) -> &str {
        &outputs.name
    }
}

impl TypedResource for Extension {
    type Inputs = ExtensionInputs;
    type Outputs = ExtensionOutputs;

    fn schema(&self) -> ResourceSchema {
        ResourceSchema::derive::<Self>("postgresql:Extension")
            .describe("An extension installed in a PostgreSQL database.")
    }

    fn validate(&self, _: &ResourceContext<'_>, e: &ExtensionInputs) -> Vec<CheckFailure> {
        let mut names = vec![("name", e.name.as_str()), ("database", e.database.as_str())];
        names.extend(e.schema.as_deref().map(|s| ("schema", s)));
        sql::check_names(names)
    }

    fn create(
        &self,
        _: &ResourceContext<'_>,
        e: ExtensionInputs,
    ) -> Result<Created<ExtensionOutputs>, ProviderError> {
        let mut session = self.0.connect(Some(&e.database))?;
        let mut sql = format!("CREATE EXTENSION {}", ident(&e.name));
        if let Some(schema) = &e.schema {
            sql += &format!(" SCHEMA {}", ident(schema));
        }
        if let Some(version) = &e.version {
            sql += &format!(" VERSION {}", literal(version));
        }
        session.run(&format!("creating extension `{}`", e.name), &sql)?;
        in_database::created::<Self>(&mut session, &e.database, &e.name)
    }

    fn read(
        &self,
        _: &ResourceContext<'_>,
        id: String,
        inputs: ExtensionInputs,
        _: ExtensionOutputs,
    ) -> Result<Option<ReadResult<ExtensionInputs, ExtensionOutputs>>, ProviderError> {
        let Some(found) = self.find(&id)? else {
            return Ok(None);
        };
        let current = &found.current;
        let read = ExtensionInputs {
            name: current.name.clone(),
            database: found.database.clone(),
            schema: inputs.schema.as_ref().map(|_| current.schema.clone()),
            version: inputs.version.as_ref().map(|_| current.version.clone()),
        };
        found.read_result(read).map(Some)
    }

    fn update(
        &self,
        _: &ResourceContext<'_>,
        id: &str,
        _: ExtensionInputs,
        _: ExtensionOutputs,
        new: ExtensionInputs,
    ) -> Result<ExtensionOutputs, ProviderError> {
        let mut found = self.find_recorded(id, &new.name)?;
        refuse_move(Self::KIND, &new.name, &found.database, &new.database)?;
        let current = &found.current;
        let mut sql = String::new();
        if let Some(schema) = &new.schema
            && *schema != current.schema
        {
            sql += &format!(
                "ALTER EXTENSION {} SET SCHEMA {};",
                ident(&new.name),
                ident(schema)
            );
        }
        if let Some(version) = &new.version
            && *version != current.version
        {
            sql += &format!(
                "ALTER EXTENSION {} UPDATE TO {};",
                ident(&new.name),
                literal(version)
            );
        }
        if !sql.is_empty() {
            found
                .session
                .run(&format!("updating extension `{}`", new.name), &sql)?;
        }
        found.reread(&new.name)
    }

    fn delete(
        &self,
        _: &ResourceContext<'_>,
        id: &str,
        _: ExtensionInputs,
        _: ExtensionOutputs,
    ) -> Result<(), ProviderError> {
        self.drop_object(id, false)
    }
}

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

use crate::server::{Server, Session, gone, text};
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

fn fetch(
    session: &mut Session,
    database: &str,
    name: &str,
) -> Result<Option<ExtensionOutputs>, ProviderError> {
    let sql = format!(
        "SELECT e.extname, n.nspname, e.extversion FROM pg_extension e \
         JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = {}",
        literal(name)
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

fn split_id(id: &str) -> Result<(&str, &str), ProviderError> {
    id.rsplit_once('/')
        .filter(|(db, name)| !db.is_empty() && !name.is_empty())
        .ok_or_else(|| {
            ProviderError::failed(format!(
                "`{id}` is not an extension id; it is `DATABASE/NAME`"
            ))
        })
}

impl Extension {}

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
        let outputs =
            fetch(&mut session, &e.database, &e.name)?.ok_or_else(|| gone("extension", &e.name))?;
        Ok(Created {
            id: format!("{}/{}", session.database_oid()?, e.name),
            outputs,
        })
    }

    fn read(
        &self,
        _: &ResourceContext<'_>,
        id: String,
        inputs: ExtensionInputs,
        _: ExtensionOutputs,
    ) -> Result<Option<ReadResult<ExtensionInputs, ExtensionOutputs>>, ProviderError> {
        let (database, name) = split_id(&id)?;
        let Some(database) = self.0.database_name(database)? else {
            return Ok(None);
        };
        let Some(mut session) = self.0.connect_if_exists(&database)? else {
            return Ok(None);
        };
        let Some(found) = fetch(&mut session, &database, name)? else {
            return Ok(None);
        };
        Ok(Some(ReadResult {
            id: format!("{}/{name}", session.database_oid()?),
            inputs: ExtensionInputs {
                name: found.name.clone(),
                database: database.clone(),
                schema: inputs.schema.as_ref().map(|_| found.schema.clone()),
                version: inputs.version.as_ref().map(|_| found.version.clone()),
            },
            outputs: found,
        }))
    }

    fn update(
        &self,
        _: &ResourceContext<'_>,
        id: &str,
        _: ExtensionInputs,
        _: ExtensionOutputs,
        new: ExtensionInputs,
    ) -> Result<ExtensionOutputs, ProviderError> {
        let (database, _) = split_id(id)?;
        let database =
            (self.0.database_name(database)?).ok_or_else(|| gone("extension", &new.name))?;
        if database != new.database {
            return Err(ProviderError::failed(format!(
                "extension `{}` is in database `{database}` and cannot move to `{}` in place; \
                 replace it (`plinth up --replace` with its URN) to create it there",
                new.name, new.database
            )));
        }
        let mut session = self.0.connect(Some(&new.database))?;
        let current = fetch(&mut session, &new.database, &new.name)?
            .ok_or_else(|| gone("extension", &new.name))?;
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
            session.run(&format!("updating extension `{}`", new.name), &sql)?;
        }
        fetch(&mut session, &new.database, &new.name)?.ok_or_else(|| gone("extension", &new.name))
    }

    fn delete(
        &self,
        _: &ResourceContext<'_>,
        id: &str,
        _: ExtensionInputs,
        _: ExtensionOutputs,
    ) -> Result<(), ProviderError> {
        let (database, name) = split_id(id)?;
        let Some(database) = self.0.database_name(database)? else {
            return Ok(());
        };
        let Some(mut session) = self.0.connect_if_exists(&database)? else {
            return Ok(());
        };
        if fetch(&mut session, &database, name)?.is_none() {
            return Ok(());
        }
        session.run(
            &format!("dropping extension `{name}`"),
            &format!("DROP EXTENSION {}", ident(name)),
        )
    }
}

//! `postgresql:Server`: a foreign server (`CREATE SERVER`) of a foreign-data wrapper such as
//! `postgres_fdw`, with its options and owner.
//!
//! The id is `DATABASE-OID/SERVER-OID`, so a change of `server_name` renames the server in
//! place; import takes `DATABASE/NAME`. The wrapper and `server_type` are fixed at creation: a
//! change replaces the server.

use plinth_sdk::{
    CheckFailure, Created, ProviderError, ReadResult, ResourceContext, ResourceSchema,
    TypedResource,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::in_database::{self, InDatabase};
use crate::options::{self, Options};
use crate::server::{Lookup, Server as Cluster, Session, text};
use crate::sql::{self, ident, literal};

/// The inputs of `postgresql:Server`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub(crate) struct ServerInputs {
    /// The foreign server's name; a change renames it.
    pub(crate) server_name: String,
    /// The foreign-data wrapper that manages it, such as `postgres_fdw` (its extension must
    /// be installed in the database).
    #[schemars(extend("x-plinth-replace-on-change" = true))]
    pub(crate) fdw_name: String,
    /// The database the server is defined in; absent: the provider's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-plinth-replace-on-change" = true))]
    pub(crate) database: Option<String>,
    /// The wrapper's options, such as `host`, `port` and `dbname` for `postgres_fdw`.
    #[serde(default)]
    pub(crate) options: Options,
    /// A server type, which some wrappers use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-plinth-replace-on-change" = true))]
    pub(crate) server_type: Option<String>,
    /// A server version, which some wrappers use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) server_version: Option<String>,
    /// The role that owns it; absent: the role the provider connects as.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) server_owner: Option<String>,
    /// Deleting the server also drops what depends on it (user mappings, foreign tables);
    /// otherwise a server that has such objects is not deleted and the delete fails.
    #[serde(default)]
    pub(crate) drop_cascade: bool,
}

/// The outputs: the server as it is.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub(crate) struct ServerOutputs {
    pub(crate) server_name: String,
    pub(crate) fdw_name: String,
    /// The database it is defined in.
    pub(crate) database: String,
    pub(crate) options: Options,
    pub(crate) server_type: Option<String>,
    pub(crate) server_version: Option<String>,
    /// The role that owns it.
    pub(crate) server_owner: String,
    /// The server's OID in its database.
    pub(crate) oid: i64,
}

/// The `postgresql:Server` resource type.
pub(crate) struct Server(pub(crate) Cluster);

impl InDatabase for Server {
    const KIND: &'static str = "foreign server";
    const KEYWORD: &'static str = "SERVER";
    type Outputs = ServerOutputs;

    fn server(&self) -> &Cluster {
        &self.0
    }

    fn fetch(
        session: &mut Session,
        database: &str,
        lookup: Lookup<'_>,
    ) -> Result<Option<ServerOutputs>, ProviderError> {
        let sql = format!(
            "SELECT s.oid, s.srvname, w.fdwname, s.srvtype, s.srvversion, \
             pg_get_userbyid(s.srvowner), array_to_json(coalesce(s.srvoptions, '{{}}')) \
             FROM pg_foreign_server s JOIN pg_foreign_data_wrapper w ON w.oid = s.srvfdw WHERE {}",
            lookup.condition("s.oid", "s.srvname")
        );
        Ok(session
            .row("reading the foreign server", &sql)?
            .map(|row| ServerOutputs {
                oid: text(&row, 0).parse().unwrap_or_default(),
                server_name: text(&row, 1),
                fdw_name: text(&row, 2),
                server_type: row[3].clone(),
                server_version: row[4].clone(),
                server_owner: text(&row, 5),
                options: options::parse(&row, 6),
                database: database.to_owned(),
            }))
    }

    fn key(outputs: &ServerOutputs) -> String {
        outputs.oid.to_string()
    }

    fn name(outputs: &ServerOutputs) -> &str {
        &outputs.server_name
    }
}

impl TypedResource for Server {
    type Inputs = ServerInputs;
    type Outputs = ServerOutputs;

    fn schema(&self) -> ResourceSchema {
        ResourceSchema::derive::<Self>("postgresql:Server")
            .describe("A foreign server of a foreign-data wrapper, such as postgres_fdw.")
    }

    fn validate(&self, _: &ResourceContext<'_>, s: &ServerInputs) -> Vec<CheckFailure> {
        let mut names = vec![
            ("server_name", s.server_name.as_str()),
            ("fdw_name", s.fdw_name.as_str()),
        ];
        names.extend(s.database.as_deref().map(|d| ("database", d)));
        names.extend(s.server_owner.as_deref().map(|o| ("server_owner", o)));
        let mut failures = sql::check_names(names);
        failures.extend(options::problems("options", &s.options));
        failures
    }

    fn create(
        &self,
        _: &ResourceContext<'_>,
        s: ServerInputs,
    ) -> Result<Created<ServerOutputs>, ProviderError> {
        let mut session = self.0.connect(s.database.as_deref())?;
        let database = self.0.database_or_home(s.database.as_deref());
        let mut sql = format!("CREATE SERVER {}", ident(&s.server_name));
        if let Some(ty) = &s.server_type {
            sql += &format!(" TYPE {}", literal(ty));
        }
        if let Some(version) = &s.server_version {
            sql += &format!(" VERSION {}", literal(version));
        }
        sql += &format!(
            " FOREIGN DATA WRAPPER {}{};",
            ident(&s.fdw_name),
            options::create_clause(&s.options)
        );
        if let Some(owner) = &s.server_owner {
            sql += &format!(
                "ALTER SERVER {} OWNER TO {};",
                ident(&s.server_name),
                ident(owner)
            );
        }
        session.run(
            &format!("creating foreign server `{}`", s.server_name),
            &sql,
        )?;
        in_database::created::<Self>(&mut session, database, &s.server_name)
    }

    fn read(
        &self,
        _: &ResourceContext<'_>,
        id: String,
        inputs: ServerInputs,
        _: ServerOutputs,
    ) -> Result<Option<ReadResult<ServerInputs, ServerOutputs>>, ProviderError> {
        let Some(found) = self.find(&id)? else {
            return Ok(None);
        };
        let (current, database) = (&found.current, &found.database);
        let read = ServerInputs {
            server_name: current.server_name.clone(),
            fdw_name: current.fdw_name.clone(),
            database: self.0.database_input(inputs.database.as_deref(), database),
            options: current.options.clone(),
            server_type: current.server_type.clone(),
            server_version: current.server_version.clone(),
            server_owner: inputs
                .server_owner
                .as_ref()
                .map(|_| current.server_owner.clone()),
            drop_cascade: inputs.drop_cascade,
        };
        found.read_result(read).map(Some)
    }

    fn update(
        &self,
        _: &ResourceContext<'_>,
        id: &str,
        old: ServerInputs,
        _: ServerOutputs,
        new: ServerInputs,
    ) -> Result<ServerOutputs, ProviderError> {
        let mut found = self.find_recorded(id, &old.server_name)?;
        let current = &found.current;
        let mut sql = in_database::rename::<Self>(&current.server_name, &new.server_name);
        let name = ident(&new.server_name);
        let options = options::alter_clause(&current.options, &new.options);
        let version = match &new.server_version {
            Some(v) if current.server_version.as_ref() != Some(v) => {
                format!(" VERSION {}", literal(v))
            }
            // No version is the version NULL.
            None if current.server_version.is_some() => " VERSION NULL".to_owned(),
            _ => String::new(),
        };
        if !options.is_empty() || !version.is_empty() {
            sql += &format!("ALTER SERVER {name}{version}{options};");
        }
        if let Some(owner) = &new.server_owner
            && *owner != current.server_owner
        {
            sql += &format!("ALTER SERVER {name} OWNER TO {};", ident(owner));
        }
        if !sql.is_empty() {
            found.session.run(
                &format!("updating foreign server `{}`", new.server_name),
                &sql,
            )?;
        }
        found.reread(&new.server_name)
    }

    fn delete(
        &self,
        _: &ResourceContext<'_>,
        id: &str,
        inputs: ServerInputs,
        _: ServerOutputs,
    ) -> Result<(), ProviderError> {
        self.drop_object(id, inputs.drop_cascade)
    }
}

//! `postgresql:UserMapping`: how a role connects through a foreign server (`CREATE USER
//! MAPPING`), typically a remote user name and password: the option `password` is an input of
//! its own, secret.
//!
//! The id is the JSON array `[database, MAPPING-OID]` (`database` `null` for the provider's):
//! PostgreSQL keeps a mapping's OID when its server or role is renamed, so a mapping read or
//! deleted after `ALTER SERVER ... RENAME` is found under the new name. Import takes
//! `[database, server_name, user_name]`, as ids recorded before did. The server and the user
//! are fixed: a change replaces the mapping, deleting the old one first (found by its OID, so a
//! mapping carried by a renamed server goes before the new one is made); the options change in
//! place. A role renamed in place takes its mappings with it (they hold its OID): a new
//! `user_name` that the mapping already has is no replacement.

use plinth_sdk::{
    CheckFailure, Created, Diff, ProviderError, ReadResult, ResourceContext, ResourceSchema,
    Secret, TypedResource,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::options::{self, Options};
use crate::server::{Server, Session, text};
use crate::sql::{self, grantee, literal};

/// The inputs of `postgresql:UserMapping`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub(crate) struct UserMappingInputs {
    /// The role mapped; `public` for the mapping used when a role has none of its own.
    #[schemars(extend("x-plinth-replace-on-change" = true))]
    pub(crate) user_name: String,
    /// The foreign server.
    #[schemars(extend("x-plinth-replace-on-change" = true))]
    pub(crate) server_name: String,
    /// The database the server is defined in; absent: the provider's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-plinth-replace-on-change" = true))]
    pub(crate) database: Option<String>,
    /// The wrapper's options but the password, such as `user` for `postgres_fdw`.
    #[serde(default)]
    pub(crate) options: Options,
    /// The option `password`, secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) password: Option<Secret<String>>,
}

/// The outputs: the mapping as it is (all of it defaulted, so that an import, which has no
/// outputs yet, reads).
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub(crate) struct UserMappingOutputs {
    pub(crate) user_name: String,
    pub(crate) server_name: String,
    pub(crate) database: Option<String>,
    pub(crate) options: Options,
    pub(crate) password: Option<Secret<String>>,
}

impl From<UserMappingInputs> for UserMappingOutputs {
    fn from(m: UserMappingInputs) -> UserMappingOutputs {
        UserMappingOutputs {
            user_name: m.user_name,
            server_name: m.server_name,
            database: m.database,
            options: m.options,
            password: m.password,
        }
    }
}

/// The `postgresql:UserMapping` resource type.
pub(crate) struct UserMapping(pub(crate) Server);

/// A mapping's id: by OID as the provider records it, by names as import takes it.
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum Id {
    Oid(Option<String>, u32),
    Names(Option<String>, String, String),
}

impl Id {
    fn parse(id: &str) -> Result<Id, ProviderError> {
        serde_json::from_str(id).map_err(|_| {
            ProviderError::failed(format!(
                "`{id}` is not a user mapping id; it is a JSON array [database or null, \
                 server_name, user_name] (or [database or null, mapping OID] as recorded)"
            ))
        })
    }

    fn database(&self) -> Option<&str> {
        match self {
            Id::Oid(database, _) | Id::Names(database, ..) => database.as_deref(),
        }
    }

    /// The SQL condition on `pg_user_mappings` selecting the mapping.
    fn condition(&self) -> String {
        match self {
            Id::Oid(_, oid) => format!("umid = {oid}"),
            Id::Names(_, server, user) => names(server, user),
        }
    }

    fn text(&self) -> Result<String, ProviderError> {
        serde_json::to_string(self).map_err(|e| ProviderError::failed(e.to_string()))
    }
}

/// The condition selecting the mapping of `user` (`public` in any case for the public
/// mapping) on `server`: `pg_user_mappings` names the public mapping `public`, and a role named
/// `public` cannot exist.
fn names(server: &str, user: &str) -> String {
    let user = if user.eq_ignore_ascii_case("public") {
        "public"
    } else {
        user
    };
    format!(
        "srvname = {} AND usename = {}",
        literal(server),
        literal(user)
    )
}

/// Whether `given`, a `user_name` input, names the role `found` that the catalog gives: the
/// public mapping is `public` in any case.
fn names_user(given: &str, found: &str) -> bool {
    given == found || (given.eq_ignore_ascii_case("public") && found == "public")
}

/// A mapping as the catalog has it.
struct Found {
    oid: u32,
    server_name: String,
    user_name: String,
    options: Options,
}

/// The `FOR ... SERVER ...` of the mapping's statements.
fn target(user_name: &str, server_name: &str) -> String {
    format!(
        "FOR {} SERVER {}",
        grantee(user_name),
        sql::ident(server_name)
    )
}

/// The mapping `condition` selects, if it exists.
fn fetch(session: &mut Session, condition: &str) -> Result<Option<Found>, ProviderError> {
    let sql = format!(
        "SELECT umid, srvname, usename, array_to_json(coalesce(umoptions, '{{}}')) \
         FROM pg_user_mappings WHERE {condition}"
    );
    Ok(session
        .row("reading the user mapping", &sql)?
        .map(|row| Found {
            oid: text(&row, 0).parse().unwrap_or_default(),
            server_name: text(&row, 1),
            user_name: text(&row, 2),
            options: options::parse(&row, 3),
        }))
}

/// The option that holds the password, kept apart as a secret.
const PASSWORD: &str = "password";

/// All the options to send: the plain ones and the password.
fn exposed(m: &UserMappingInputs) -> Options {
    let mut options = m.options.clone();
    if let Some(password) = &m.password {
        options.insert(PASSWORD.to_owned(), password.expose().clone());
    }
    options
}

impl UserMapping {
    fn session(&self, database: Option<&str>) -> Result<Option<Session>, ProviderError> {
        self.0.connect_if_exists(self.0.database_or_home(database))
    }

    fn gone(m: &UserMappingInputs) -> ProviderError {
        ProviderError::failed(format!(
            "the user mapping of `{}` on server `{}` is gone; run `plinth refresh`",
            m.user_name, m.server_name
        ))
    }
}

impl TypedResource for UserMapping {
    type Inputs = UserMappingInputs;
    type Outputs = UserMappingOutputs;

    fn schema(&self) -> ResourceSchema {
        ResourceSchema::derive::<Self>("postgresql:UserMapping")
            .describe("How a role connects through a foreign server.")
    }

    fn validate(&self, _: &ResourceContext<'_>, m: &UserMappingInputs) -> Vec<CheckFailure> {
        let mut names = vec![
            ("user_name", m.user_name.as_str()),
            ("server_name", m.server_name.as_str()),
        ];
        names.extend(m.database.as_deref().map(|d| ("database", d)));
        let mut failures = sql::check_names(names);
        failures.extend(options::problems("options", &m.options));
        if m.options.contains_key(PASSWORD) {
            failures.push(CheckFailure::new(
                "options",
                "give the password as `password`, which is secret, not among the options",
            ));
        }
        failures
    }

    /// A new `user_name` alone is no replacement when the mapping already belongs to that role:
    /// the role was renamed in place, and its mappings, which hold its OID, went with it.
    fn diff(
        &self,
        _: &ResourceContext<'_>,
        id: &str,
        _: &UserMappingInputs,
        _: &UserMappingOutputs,
        new: &UserMappingInputs,
        mut diff: Diff,
    ) -> Result<Diff, ProviderError> {
        if diff.replaces != ["user_name"] {
            return Ok(diff);
        }
        let id = Id::parse(id)?;
        let Some(mut session) = self.session(id.database())? else {
            return Ok(diff);
        };
        if let Some(found) = fetch(&mut session, &id.condition())?
            && names_user(&new.user_name, &found.user_name)
        {
            diff.replaces.clear();
        }
        Ok(diff)
    }

    fn create(
        &self,
        _: &ResourceContext<'_>,
        m: UserMappingInputs,
    ) -> Result<Created<UserMappingOutputs>, ProviderError> {
        let mut session = self.0.connect(m.database.as_deref())?;
        session.run(
            &format!(
                "creating the user mapping of `{}` on server `{}`",
                m.user_name, m.server_name
            ),
            &format!(
                "CREATE USER MAPPING {}{}",
                target(&m.user_name, &m.server_name),
                options::create_clause(&exposed(&m))
            ),
        )?;
        let found = fetch(&mut session, &names(&m.server_name, &m.user_name))?
            .ok_or_else(|| UserMapping::gone(&m))?;
        Ok(Created {
            id: Id::Oid(m.database.clone(), found.oid).text()?,
            outputs: m.into(),
        })
    }

    fn read(
        &self,
        _: &ResourceContext<'_>,
        id: String,
        inputs: UserMappingInputs,
        _: UserMappingOutputs,
    ) -> Result<Option<ReadResult<UserMappingInputs, UserMappingOutputs>>, ProviderError> {
        let id = Id::parse(&id)?;
        let Some(mut session) = self.session(id.database())? else {
            return Ok(None);
        };
        let Some(found) = fetch(&mut session, &id.condition())? else {
            return Ok(None);
        };
        let read = UserMappingInputs {
            database: id.database().map(str::to_owned),
            server_name: found.server_name,
            // The public mapping keeps the program's spelling of `public`.
            user_name: match inputs.user_name {
                given if names_user(&given, &found.user_name) => given,
                _ => found.user_name,
            },
            password: found.options.get(PASSWORD).cloned().map(Secret::new),
            options: (found.options.into_iter())
                .filter(|(k, _)| k != PASSWORD)
                .collect(),
        };
        Ok(Some(ReadResult {
            id: Id::Oid(read.database.clone(), found.oid).text()?,
            inputs: read.clone(),
            outputs: read.into(),
        }))
    }

    fn update(
        &self,
        _: &ResourceContext<'_>,
        id: &str,
        _: UserMappingInputs,
        _: UserMappingOutputs,
        new: UserMappingInputs,
    ) -> Result<UserMappingOutputs, ProviderError> {
        let id = Id::parse(id)?;
        let mut session = (self.session(id.database())?).ok_or_else(|| UserMapping::gone(&new))?;
        let current =
            fetch(&mut session, &id.condition())?.ok_or_else(|| UserMapping::gone(&new))?;
        let clause = options::alter_clause(&current.options, &exposed(&new));
        if !clause.is_empty() {
            session.run(
                &format!(
                    "updating the user mapping of `{}` on server `{}`",
                    new.user_name, new.server_name
                ),
                &format!(
                    "ALTER USER MAPPING {}{clause}",
                    target(&current.user_name, &current.server_name)
                ),
            )?;
        }
        Ok(new.into())
    }

    fn delete(
        &self,
        _: &ResourceContext<'_>,
        id: &str,
        _: UserMappingInputs,
        _: UserMappingOutputs,
    ) -> Result<(), ProviderError> {
        let id = Id::parse(id)?;
        let Some(mut session) = self.session(id.database())? else {
            return Ok(());
        };
        // Under the names it has now: its server or role may have been renamed.
        let Some(current) = fetch(&mut session, &id.condition())? else {
            return Ok(());
        };
        session.run(
            &format!(
                "dropping the user mapping of `{}` on server `{}`",
                current.user_name, current.server_name
            ),
            &format!(
                "DROP USER MAPPING {}",
                target(&current.user_name, &current.server_name)
            ),
        )
    }
}

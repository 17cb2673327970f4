//! `postgresql:UserMapping`: how a role connects through a foreign server (`CREATE USER
//! MAPPING`), typically a remote user name and password: the option `password` is an input of
//! its own, secret.
//!
//! The id, which import takes too, is the JSON array `[database, server_name, user_name]`
//! (`database` `null` for the provider's). The server and the user are fixed: a change
//! replaces the mapping; the options change in place.

use plinth_sdk::{
    CheckFailure, Created, ProviderError, ReadResult, ResourceContext, ResourceSchema, Secret,
    TypedResource,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::options::{self, Options};
use crate::server::{Server, Session};
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

#[derive(Serialize, Deserialize)]
struct Id(Option<String>, String, String);

/// The `FOR ... SERVER ...` of the mapping's statements.
fn target(m: &UserMappingInputs) -> String {
    format!(
        "FOR {} SERVER {}",
        grantee(&m.user_name),
        sql::ident(&m.server_name)
    )
}

/// The mapping's options, if it exists; `None` if it, its server or its database is gone.
fn fetch(session: &mut Session, m: &UserMappingInputs) -> Result<Option<Options>, ProviderError> {
    let user = if m.user_name.eq_ignore_ascii_case("public") {
        "public".to_owned()
    } else {
        m.user_name.clone()
    };
    // `pg_user_mappings` names the public mapping `public`; a role named `public` cannot exist.
    let sql = format!(
        "SELECT array_to_json(coalesce(umoptions, '{{}}')) FROM pg_user_mappings \
         WHERE srvname = {} AND usename = {}",
        literal(&m.server_name),
        literal(&user)
    );
    Ok(session
        .row("reading the user mapping", &sql)?
        .map(|row| options::parse(&row, 0)))
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
    fn session(&self, m: &UserMappingInputs) -> Result<Option<Session>, ProviderError> {
        let database = m.database.as_deref().unwrap_or(self.0.home());
        self.0.connect_if_exists(database)
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
                target(&m),
                options::create_clause(&exposed(&m))
            ),
        )?;
        let id = Id(
            m.database.clone(),
            m.server_name.clone(),
            m.user_name.clone(),
        );
        Ok(Created {
            id: serde_json::to_string(&id).map_err(|e| ProviderError::failed(e.to_string()))?,
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
        let Id(database, server_name, user_name) = serde_json::from_str(&id).map_err(|_| {
            ProviderError::failed(format!(
                "`{id}` is not a user mapping id; it is a JSON array [database or null, \
                 server_name, user_name]"
            ))
        })?;
        let m = UserMappingInputs {
            database,
            server_name,
            user_name,
            ..inputs
        };
        let Some(mut session) = self.session(&m)? else {
            return Ok(None);
        };
        let Some(found) = fetch(&mut session, &m)? else {
            return Ok(None);
        };
        let read = UserMappingInputs {
            password: found.get(PASSWORD).cloned().map(Secret::new),
            options: found.into_iter().filter(|(k, _)| k != PASSWORD).collect(),
            ..m
        };
        Ok(Some(ReadResult {
            id,
            inputs: read.clone(),
            outputs: read.into(),
        }))
    }

    fn update(
        &self,
        _: &ResourceContext<'_>,
        _: &str,
        _: UserMappingInputs,
        _: UserMappingOutputs,
        new: UserMappingInputs,
    ) -> Result<UserMappingOutputs, ProviderError> {
        let mut session = self.session(&new)?.ok_or_else(|| UserMapping::gone(&new))?;
        let current = fetch(&mut session, &new)?.ok_or_else(|| UserMapping::gone(&new))?;
        let clause = options::alter_clause(&current, &exposed(&new));
        if !clause.is_empty() {
            session.run(
                &format!(
                    "updating the user mapping of `{}` on server `{}`",
                    new.user_name, new.server_name
                ),
                &format!("ALTER USER MAPPING {}{clause}", target(&new)),
            )?;
        }
        Ok(new.into())
    }

    fn delete(
        &self,
        _: &ResourceContext<'_>,
        _: &str,
        m: UserMappingInputs,
        _: UserMappingOutputs,
    ) -> Result<(), ProviderError> {
        let Some(mut session) = self.session(&m)? else {
            return Ok(());
        };
        if fetch(&mut session, &m)?.is_none() {
            return Ok(());
        }
        session.run(
            &format!(
                "dropping the user mapping of `{}` on server `{}`",
                m.user_name, m.server_name
            ),
            &format!("DROP USER MAPPING {}", target(&m)),
        )
    }
}

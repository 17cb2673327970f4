//! The `postgresql` provider: roles, databases, schemas, grants, role memberships, extensions
//! and default privileges on a real PostgreSQL server, over the network the project grants.
//!
//! | type | id | update in place | replace |
//! |---|---|---|---|
//! | `postgresql:Role` | OID (import: OID or name) | everything, `name` renames | — |
//! | `postgresql:Database` | OID (import: OID or name) | `name` (rename), `owner`, `connection_limit`, `allow_connections`, `is_template` | `encoding`, `lc_collate`, `lc_ctype`, `template` |
//! | `postgresql:Schema` | `DATABASE-OID/OID` (import: `DATABASE/NAME`) | `name` (rename), `owner`, `drop_cascade` | — (cannot move between databases) |
//! | `postgresql:Grant` | JSON of what it covers | `privileges`, `objects`, `with_grant_option` | `role`, `database`, `object_type`, `schema` |
//! | `postgresql:GrantRole` | JSON `[role, grant_role]` | `with_admin_option` | `role`, `grant_role` |
//! | `postgresql:Extension` | `DATABASE-OID/NAME` (import: `DATABASE/NAME`) | `schema`, `version` | `name` |
//! | `postgresql:DefaultPrivileges` | JSON of what it covers | `privileges`, `with_grant_option` | the others |
//!
//! Replacements delete the old object first (names are unique). The provider asks for exactly the TCP endpoint its configuration names (`{host}:{port}`):
//! the host resolves that capability when the provider is configured and checks it against the
//! project's grants. Every name is quoted and every literal escaped; see [`sql`].

mod config;
mod database;
mod default_privileges;
mod delete_first;
mod extension;
mod grant;
mod grant_role;
mod privilege;
mod role;
mod schema;
mod server;
mod sql;
mod tls;
mod wire;

use plinth_sdk::{
    Capabilities, PropertyMap, PropertySchema, Provider, ProviderError, ResourceType, Typed, Value,
    from_value, properties_of,
};

use crate::config::Settings;
use crate::delete_first::DeleteFirst;
use crate::server::Server;

/// The PostgreSQL provider, configured with its server.
#[derive(Default)]
struct Postgresql {
    server: Server,
}

impl Provider for Postgresql {
    fn name(&self) -> &str {
        "postgresql"
    }

    fn version(&self) -> &str {
        env!("CARGO_PKG_VERSION")
    }

    fn description(&self) -> &str {
        "PostgreSQL roles, databases, schemas, grants, extensions and default privileges."
    }

    /// The server's endpoint, as the configuration names it: the project grants exactly that.
    fn capabilities(&self) -> Capabilities {
        Capabilities::new().tcp("{host}:{port}")
    }

    fn config_schema(&self) -> Vec<PropertySchema> {
        properties_of::<Settings>()
    }

    fn resource_types(&self) -> Vec<Box<dyn ResourceType>> {
        let server = &self.server;
        vec![
            Box::new(DeleteFirst(Typed(role::Role(server.clone())))),
            Box::new(DeleteFirst(Typed(database::Database(server.clone())))),
            Box::new(DeleteFirst(Typed(schema::Schema(server.clone())))),
            Box::new(DeleteFirst(Typed(grant::Grant(server.clone())))),
            Box::new(DeleteFirst(Typed(grant_role::GrantRole(server.clone())))),
            Box::new(DeleteFirst(Typed(extension::Extension(server.clone())))),
            Box::new(DeleteFirst(Typed(default_privileges::DefaultPrivileges(
                server.clone(),
            )))),
        ]
    }

    fn configure(&mut self, config: PropertyMap) -> Result<(), ProviderError> {
        let settings: Settings = from_value(Value::Object(config))
            .map_err(|e| ProviderError::failed(format!("the configuration does not read: {e}")))?;
        if let Some(problem) = settings.problems().into_iter().next() {
            return Err(ProviderError::Invalid(vec![problem]));
        }
        self.server = Server::new(settings);
        Ok(())
    }
}

plinth_sdk::export_provider!(Postgresql);

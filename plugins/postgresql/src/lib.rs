//! The `postgresql` provider: roles, databases, schemas, grants, role memberships, extensions,
//! default privileges, replication, functions and foreign servers on a real PostgreSQL server,
//! over the network the project grants.
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
//! | `postgresql:Publication` | `DATABASE-OID/OID` (import: `DATABASE/NAME`) | `name`, `tables`, `owner`, `publish_param`, `publish_via_partition_root_param` | `database`, `all_tables` |
//! | `postgresql:Subscription` | `DATABASE-OID/OID` (import: `DATABASE/NAME`) | `conninfo`, `publications` | `name`, `database`, `create_slot`, `slot_name` |
//! | `postgresql:ReplicationSlot` | name | — | all |
//! | `postgresql:PhysicalReplicationSlot` | name | — | all |
//! | `postgresql:Function` | `DATABASE-OID/OID` (import: `DATABASE/SCHEMA.NAME(TYPES)`) | body, language, attributes | `name`, `schema`, `database`, `args`, `returns` |
//! | `postgresql:Server` | `DATABASE-OID/OID` (import: `DATABASE/NAME`) | `server_name`, `options`, `server_version`, `server_owner` | `fdw_name`, `database`, `server_type` |
//! | `postgresql:UserMapping` | JSON `[database, OID]` (import: `[database, server_name, user_name]`) | `options`, `password` | the others (deleting first) |
//!
//! Functions: `postgresql:getSchemas`, `postgresql:getTables`, `postgresql:getSequences` (see
//! [`lookups`]). Catalog writes that race (grants, default privileges, memberships) are
//! serialized per database (see [`catalog`]).
//!
//! Replacements delete the old object first (names are unique). The provider asks for exactly the TCP endpoint its configuration names (`{host}:{port}`):
//! the host resolves that capability when the provider is configured and checks it against the
//! project's grants. Every name is quoted and every literal escaped; see [`sql`].

mod catalog;
mod config;
mod database;
mod default_privileges;
mod defaults;
mod delete_first;
mod extension;
mod foreign_server;
mod function;
mod grant;
mod grant_role;
mod ids;
mod in_database;
mod lookups;
mod options;
mod privilege;
mod publication;
mod replication_slot;
mod role;
mod schema;
mod server;
mod sql;
mod subscription;
mod tls;
mod user_mapping;
mod wire;

use plinth_sdk::{
    Capabilities, FunctionSchema, PropertyMap, PropertySchema, Provider, ProviderError,
    ResourceType, Typed, Value, from_value, properties_of,
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
        "PostgreSQL roles, databases, schemas, grants, extensions, default privileges, \
         publications, subscriptions, replication slots, functions, foreign servers and user \
         mappings."
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
            Box::new(DeleteFirst(Typed(publication::Publication(server.clone())))),
            Box::new(DeleteFirst(Typed(subscription::Subscription(
                server.clone(),
            )))),
            Box::new(DeleteFirst(Typed(replication_slot::ReplicationSlot(
                server.clone(),
            )))),
            Box::new(DeleteFirst(Typed(
                replication_slot::PhysicalReplicationSlot(server.clone()),
            ))),
            Box::new(DeleteFirst(Typed(function::Function(server.clone())))),
            Box::new(DeleteFirst(Typed(foreign_server::Server(server.clone())))),
            Box::new(DeleteFirst(Typed(user_mapping::UserMapping(
                server.clone(),
            )))),
        ]
    }

    fn functions(&self) -> Vec<FunctionSchema> {
        lookups::schemas()
    }

    fn invoke(&self, token: &str, args: PropertyMap) -> Result<Value, ProviderError> {
        lookups::invoke(&self.server, token, args)
            .unwrap_or_else(|| Err(ProviderError::UnknownType(token.to_owned())))
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

//! `postgresql:Role`: a role (user or group) with its attributes, password and memberships.
//!
//! The id is the role's OID, so a change of `name` renames the role in place; import takes the
//! OID or the name. The password is sent as a SCRAM-SHA-256 verifier computed here: its
//! plaintext never reaches the server's logs. It cannot be read back, so `refresh` keeps it as
//! recorded. `password_wo` is the write-only form: plinth sends it on create and whenever
//! `password_wo_version` changes, and records it nowhere (not even sealed in the state).

use plinth_sdk::{
    CheckFailure, Created, ProviderError, ReadResult, ResourceContext, ResourceSchema, Secret,
    TypedResource,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::catalog;
use crate::defaults::{no_limit, yes};
use crate::server::{Lookup, Server, Session, text};
use crate::sql::{self, ident, literal};

/// The inputs of `postgresql:Role`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub(crate) struct RoleInputs {
    /// The role's name (at most 63 bytes); a change renames the role.
    pub(crate) name: String,
    /// The role may log in (a user rather than a group).
    #[serde(default)]
    pub(crate) login: bool,
    /// The role's password; absent: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) password: Option<Secret<String>>,
    /// The role's password, instead of `password`: set when the role is created and when
    /// `password_wo_version` changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-plinth-write-only" = "password_wo_version"))]
    pub(crate) password_wo: Option<Secret<String>>,
    /// The version of `password_wo`: change it (1, 2, ...) to set a new `password_wo`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) password_wo_version: Option<i64>,
    /// The role is a superuser.
    #[serde(default)]
    pub(crate) superuser: bool,
    /// The role may create databases.
    #[serde(default)]
    pub(crate) createdb: bool,
    /// The role may create, alter and drop roles.
    #[serde(default)]
    pub(crate) createrole: bool,
    /// The role uses the privileges of the roles it is a member of.
    #[serde(default = "yes")]
    pub(crate) inherit: bool,
    /// The role may start streaming replication.
    #[serde(default)]
    pub(crate) replication: bool,
    /// How many concurrent connections the role may open; -1: no limit.
    #[serde(default = "no_limit")]
    pub(crate) connection_limit: i32,
    /// When the password stops being valid (a timestamp, such as `2030-01-01` or `infinity`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) valid_until: Option<String>,
    /// The roles this role is a member of.
    #[serde(default)]
    pub(crate) roles: Vec<String>,
}

/// The outputs: the role as it is, and its OID.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub(crate) struct RoleOutputs {
    /// The role's name.
    pub(crate) name: String,
    /// The role's OID.
    pub(crate) oid: i64,
    pub(crate) login: bool,
    pub(crate) superuser: bool,
    pub(crate) createdb: bool,
    pub(crate) createrole: bool,
    pub(crate) inherit: bool,
    pub(crate) replication: bool,
    pub(crate) connection_limit: i32,
    pub(crate) roles: Vec<String>,
}

/// The `postgresql:Role` resource type.
pub(crate) struct Role(pub(crate) Server);

impl Role {
    /// The role as the catalogs have it, or `None`; `stored` fills what cannot be read.
    fn fetch(
        session: &mut Session,
        lookup: Lookup<'_>,
        stored: &RoleInputs,
    ) -> Result<Option<(u32, RoleInputs)>, ProviderError> {
        let valid_until = match &stored.valid_until {
            // The server's text form depends on its settings: keep the input's when equal.
            Some(given) => format!(
                "CASE WHEN rolvaliduntil = {0}::timestamptz THEN {0} ELSE rolvaliduntil::text END",
                literal(given)
            ),
            // Not asked for: `infinity` (what this provider sets) and none are the same.
            None => "NULLIF(rolvaliduntil, 'infinity')::text".to_owned(),
        };
        let sql = format!(
            "SELECT oid, rolname, rolcanlogin, rolsuper, rolcreatedb, rolcreaterole, rolinherit, \
             rolreplication, rolconnlimit, {valid_until} FROM pg_roles WHERE {}",
            lookup.condition("oid", "rolname")
        );
        let Some(row) = session.row("reading the role", &sql)? else {
            return Ok(None);
        };
        let oid: u32 = text(&row, 0).parse().unwrap_or_default();
        let members = session.rows(
            "reading the role's memberships",
            &format!(
                "SELECT g.rolname FROM pg_auth_members m JOIN pg_roles g ON g.oid = m.roleid \
                 WHERE m.member = {oid} ORDER BY 1"
            ),
        )?;
        let mut roles: Vec<String> = members.iter().map(|r| text(r, 0)).collect();
        if same_set(&roles, &stored.roles) {
            roles = stored.roles.clone();
        }
        Ok(Some((
            oid,
            RoleInputs {
                name: text(&row, 1),
                login: sql::boolean(row[2].as_deref()),
                password: stored.password.clone(),
                // Never readable, and never stored to keep.
                password_wo: None,
                password_wo_version: stored.password_wo_version,
                superuser: sql::boolean(row[3].as_deref()),
                createdb: sql::boolean(row[4].as_deref()),
                createrole: sql::boolean(row[5].as_deref()),
                inherit: sql::boolean(row[6].as_deref()),
                replication: sql::boolean(row[7].as_deref()),
                connection_limit: text(&row, 8).parse().unwrap_or(-1),
                valid_until: row[9].clone(),
                roles,
            },
        )))
    }

    fn outputs(oid: u32, role: RoleInputs) -> RoleOutputs {
        RoleOutputs {
            name: role.name,
            oid: oid.into(),
            login: role.login,
            superuser: role.superuser,
            createdb: role.createdb,
            createrole: role.createrole,
            inherit: role.inherit,
            replication: role.replication,
            connection_limit: role.connection_limit,
            roles: role.roles,
        }
    }

    fn read_back(
        &self,
        session: &mut Session,
        lookup: Lookup<'_>,
        inputs: &RoleInputs,
    ) -> Result<RoleOutputs, ProviderError> {
        let (oid, role) = Role::fetch(session, lookup, inputs)?.ok_or_else(|| {
            ProviderError::failed(format!(
                "role `{}` is gone after it was written",
                inputs.name
            ))
        })?;
        Ok(Role::outputs(oid, role))
    }
}

/// The attribute clauses of `CREATE ROLE` and `ALTER ROLE`.
fn attributes(role: &RoleInputs) -> String {
    let flag = |on: bool, name: &str| {
        if on {
            format!(" {name}")
        } else {
            format!(" NO{name}")
        }
    };
    let mut sql = String::from(" WITH");
    sql += &flag(role.login, "LOGIN");
    sql += &flag(role.superuser, "SUPERUSER");
    sql += &flag(role.createdb, "CREATEDB");
    sql += &flag(role.createrole, "CREATEROLE");
    sql += &flag(role.inherit, "INHERIT");
    sql += &flag(role.replication, "REPLICATION");
    sql += &format!(" CONNECTION LIMIT {}", role.connection_limit);
    sql += &format!(
        " VALID UNTIL {}",
        literal(role.valid_until.as_deref().unwrap_or("infinity"))
    );
    sql
}

/// The `PASSWORD` clause: a SCRAM verifier, never the plaintext.
fn password(role: &RoleInputs) -> String {
    match role.password_wo.as_ref().or(role.password.as_ref()) {
        Some(secret) => format!(
            " PASSWORD {}",
            literal(&postgres_protocol::password::scram_sha_256(
                secret.expose().as_bytes()
            ))
        ),
        None => " PASSWORD NULL".to_owned(),
    }
}

fn same_set(a: &[String], b: &[String]) -> bool {
    let mut a = a.to_vec();
    let mut b = b.to_vec();
    a.sort();
    a.dedup();
    b.sort();
    b.dedup();
    a == b
}

impl TypedResource for Role {
    type Inputs = RoleInputs;
    type Outputs = RoleOutputs;

    fn schema(&self) -> ResourceSchema {
        ResourceSchema::derive::<Self>("postgresql:Role")
            .describe("A PostgreSQL role: a user (`login: true`) or a group.")
    }

    fn validate(&self, _: &ResourceContext<'_>, inputs: &RoleInputs) -> Vec<CheckFailure> {
        let mut failures = sql::check_names([("name", inputs.name.as_str())]);
        failures.extend(sql::check_names(
            inputs.roles.iter().map(|r| ("roles", r.as_str())),
        ));
        if inputs.connection_limit < -1 {
            failures.push(CheckFailure::new(
                "connection_limit",
                "must be -1 (no limit) or more",
            ));
        }
        if inputs.roles.contains(&inputs.name) {
            failures.push(CheckFailure::new(
                "roles",
                "a role cannot be a member of itself",
            ));
        }
        for (name, given) in [
            ("password", &inputs.password),
            ("password_wo", &inputs.password_wo),
        ] {
            if given.as_ref().is_some_and(|p| p.expose().is_empty()) {
                failures.push(CheckFailure::new(
                    name,
                    "must not be empty; leave it out for a role without a password",
                ));
            }
        }
        if inputs.password.is_some() && inputs.password_wo.is_some() {
            failures.push(CheckFailure::new(
                "password_wo",
                "give `password` (kept sealed in the state) or `password_wo` (never stored), \
                 not both",
            ));
        }
        failures
    }

    fn create(
        &self,
        _: &ResourceContext<'_>,
        inputs: RoleInputs,
    ) -> Result<Created<RoleOutputs>, ProviderError> {
        let mut session = self.0.connect(None)?;
        let mut sql = format!(
            "CREATE ROLE {}{}{};",
            ident(&inputs.name),
            attributes(&inputs),
            password(&inputs)
        );
        for group in &inputs.roles {
            sql += &format!("GRANT {} TO {};", ident(group), ident(&inputs.name));
        }
        catalog::write(
            &mut session,
            &format!("creating role `{}`", inputs.name),
            &sql,
        )?;
        let outputs = self.read_back(&mut session, Lookup::Name(&inputs.name), &inputs)?;
        Ok(Created {
            id: outputs.oid.to_string(),
            outputs,
        })
    }

    fn read(
        &self,
        _: &ResourceContext<'_>,
        id: String,
        inputs: RoleInputs,
        _: RoleOutputs,
    ) -> Result<Option<ReadResult<RoleInputs, RoleOutputs>>, ProviderError> {
        let mut session = self.0.connect(None)?;
        let Some((oid, role)) = Role::fetch(&mut session, Lookup::of(&id), &inputs)? else {
            return Ok(None);
        };
        Ok(Some(ReadResult {
            id: oid.to_string(),
            outputs: Role::outputs(oid, role.clone()),
            inputs: role,
        }))
    }

    /// Imports the role `id` (its OID or its name): nothing stored fills what cannot be read,
    /// so the password stays unset.
    fn import(
        &self,
        ctx: &ResourceContext<'_>,
        id: String,
    ) -> Result<Option<ReadResult<RoleInputs, RoleOutputs>>, ProviderError> {
        let nothing = RoleInputs {
            name: String::new(),
            login: false,
            password: None,
            password_wo: None,
            password_wo_version: None,
            superuser: false,
            createdb: false,
            createrole: false,
            inherit: yes(),
            replication: false,
            connection_limit: no_limit(),
            valid_until: None,
            roles: Vec::new(),
        };
        self.read(ctx, id, nothing, RoleOutputs::default())
    }

    fn update(
        &self,
        _: &ResourceContext<'_>,
        id: &str,
        old: RoleInputs,
        _: RoleOutputs,
        new: RoleInputs,
    ) -> Result<RoleOutputs, ProviderError> {
        let mut session = self.0.connect(None)?;
        let (_, current) = Role::fetch(&mut session, Lookup::of(id), &old)?.ok_or_else(|| {
            ProviderError::failed(format!(
                "role `{}` no longer exists; run `plinth refresh`",
                old.name
            ))
        })?;
        let mut sql = String::new();
        if current.name != new.name {
            sql += &format!(
                "ALTER ROLE {} RENAME TO {};",
                ident(&current.name),
                ident(&new.name)
            );
        }
        sql += &format!("ALTER ROLE {}{}", ident(&new.name), attributes(&new));
        // Renaming keeps a SCRAM password; only a changed one is sent again. plinth sends
        // `password_wo` to an update only when its version changed: then it is the new one.
        let password_changed =
            old.password.as_ref().map(Secret::expose) != new.password.as_ref().map(Secret::expose);
        let dropped_for_wo = new.password_wo.is_none() && new.password_wo_version.is_some();
        if new.password_wo.is_some() || (password_changed && !dropped_for_wo) {
            sql += &password(&new);
        }
        sql += ";";
        for group in current.roles.iter().filter(|g| !new.roles.contains(g)) {
            sql += &format!("REVOKE {} FROM {};", ident(group), ident(&new.name));
        }
        for group in new.roles.iter().filter(|g| !current.roles.contains(g)) {
            sql += &format!("GRANT {} TO {};", ident(group), ident(&new.name));
        }
        catalog::write(&mut session, &format!("updating role `{}`", new.name), &sql)?;
        self.read_back(&mut session, Lookup::of(id), &new)
    }

    fn delete(
        &self,
        _: &ResourceContext<'_>,
        id: &str,
        inputs: RoleInputs,
        _: RoleOutputs,
    ) -> Result<(), ProviderError> {
        let mut session = self.0.connect(None)?;
        let Some((_, current)) = Role::fetch(&mut session, Lookup::of(id), &inputs)? else {
            return Ok(());
        };
        session.run(
            &format!("dropping role `{}`", current.name),
            &format!("DROP ROLE {}", ident(&current.name)),
        )
    }
}

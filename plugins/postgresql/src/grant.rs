//! `postgresql:Grant`: the privileges a role holds on a database, a schema, or tables,
//! sequences or functions of a schema (named ones, or all of them).
//!
//! A grant is authoritative for its role and objects: creating or updating it revokes what else
//! the role held there, and deleting it revokes everything. The id is the JSON array
//! `[role, database, object_type, schema]` (schema `null` for a database), which is also what
//! import takes; the objects and privileges come from the program.

use std::collections::{BTreeMap, BTreeSet};

use plinth_sdk::{
    CheckFailure, Created, ProviderError, ReadResult, ResourceContext, ResourceSchema,
    TypedResource,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::catalog;
use crate::privilege::{self, Kind};
use crate::server::{Server, Session, text};
use crate::sql::{self, grantee, ident, literal, qualified};

/// The inputs of `postgresql:Grant`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub(crate) struct GrantInputs {
    /// The role granted the privileges; `public` for every role.
    #[schemars(extend("x-plinth-replace-on-change" = true))]
    pub(crate) role: String,
    /// The database the objects are in (for `object_type: database`, the database itself).
    #[schemars(extend("x-plinth-replace-on-change" = true))]
    pub(crate) database: String,
    /// `database`, `schema`, `table`, `sequence` or `function`.
    #[schemars(extend("x-plinth-replace-on-change" = true))]
    pub(crate) object_type: String,
    /// The schema: the object itself for `schema`, where the objects are for `table`,
    /// `sequence` and `function`; absent for `database`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-plinth-replace-on-change" = true))]
    pub(crate) schema: Option<String>,
    /// The tables, sequences or functions (by name); empty: all of them in the schema, as they
    /// are when the grant is applied.
    #[serde(default)]
    pub(crate) objects: Vec<String>,
    /// The privileges, such as `SELECT`, `USAGE`, `CONNECT`, or `ALL`.
    pub(crate) privileges: Vec<String>,
    /// The role may grant the privileges to others.
    #[serde(default)]
    pub(crate) with_grant_option: bool,
}

/// The outputs: the privileges held.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub(crate) struct GrantOutputs {
    pub(crate) role: String,
    pub(crate) database: String,
    pub(crate) object_type: String,
    pub(crate) schema: Option<String>,
    pub(crate) objects: Vec<String>,
    /// The privileges the role holds on every one of the objects.
    pub(crate) privileges: Vec<String>,
    pub(crate) with_grant_option: bool,
}

/// The id: what the grant is about.
#[derive(Debug, Serialize, Deserialize)]
struct GrantId(String, String, String, Option<String>);

/// The `postgresql:Grant` resource type.
pub(crate) struct Grant(pub(crate) Server);

fn kind_of(grant: &GrantInputs) -> Result<Kind, ProviderError> {
    match Kind::parse(&grant.object_type) {
        Some(kind) if kind != Kind::Type => Ok(kind),
        _ => Err(ProviderError::invalid(
            "object_type",
            "must be database, schema, table, sequence or function",
        )),
    }
}

/// The SQL condition selecting the role's oid in `aclexplode`'s `grantee`.
pub(crate) fn grantee_oid(role: &str) -> String {
    if role.eq_ignore_ascii_case("public") {
        "0".to_owned()
    } else {
        format!(
            "(SELECT oid FROM pg_roles WHERE rolname = {})",
            literal(role)
        )
    }
}

/// Whether `role` exists (`public` always does).
pub(crate) fn role_exists(session: &mut Session, role: &str) -> Result<bool, ProviderError> {
    if role.eq_ignore_ascii_case("public") {
        return Ok(true);
    }
    let sql = format!("SELECT 1 FROM pg_roles WHERE rolname = {}", literal(role));
    Ok(session.row("looking up the role", &sql)?.is_some())
}

/// `ON ...` of the grant's statements.
fn target(kind: Kind, grant: &GrantInputs) -> String {
    let schema = grant.schema.as_deref().unwrap_or_default();
    match kind {
        Kind::Database => format!("DATABASE {}", ident(&grant.database)),
        Kind::Schema => format!("SCHEMA {}", ident(schema)),
        _ if grant.objects.is_empty() => {
            format!("ALL {} IN SCHEMA {}", kind.plural(), ident(schema))
        }
        _ => format!(
            "{} {}",
            kind.singular(),
            (grant.objects.iter())
                .map(|o| qualified(schema, o))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// The ACL entries of the objects the grant covers: object name → its ACL expression.
fn acl_query(kind: Kind, grant: &GrantInputs) -> String {
    let schema = literal(grant.schema.as_deref().unwrap_or_default());
    let objects = (!grant.objects.is_empty()).then(|| {
        grant
            .objects
            .iter()
            .map(|o| literal(o))
            .collect::<Vec<_>>()
            .join(", ")
    });
    let (from, name, acl, filter) = match kind {
        Kind::Database => (
            "pg_database o".to_owned(),
            "o.datname",
            "coalesce(o.datacl, acldefault('d', o.datdba))",
            format!("o.datname = {}", literal(&grant.database)),
        ),
        Kind::Schema => (
            "pg_namespace o".to_owned(),
            "o.nspname",
            "coalesce(o.nspacl, acldefault('n', o.nspowner))",
            format!("o.nspname = {schema}"),
        ),
        Kind::Table | Kind::Sequence => (
            "pg_class o JOIN pg_namespace n ON n.oid = o.relnamespace".to_owned(),
            "o.relname",
            if kind == Kind::Table {
                "coalesce(o.relacl, acldefault('r', o.relowner))"
            } else {
                "coalesce(o.relacl, acldefault('s', o.relowner))"
            },
            format!(
                "n.nspname = {schema} AND o.relkind IN ({})",
                if kind == Kind::Table {
                    "'r', 'v', 'm', 'f', 'p'"
                } else {
                    "'S'"
                }
            ),
        ),
        Kind::Function | Kind::Type => (
            "pg_proc o JOIN pg_namespace n ON n.oid = o.pronamespace".to_owned(),
            "o.proname",
            "coalesce(o.proacl, acldefault('f', o.proowner))",
            format!("n.nspname = {schema} AND o.prokind IN ('f', 'a', 'w')"),
        ),
    };
    let filter = match (objects, kind) {
        (Some(list), Kind::Table | Kind::Sequence | Kind::Function) => {
            format!("{filter} AND {name} IN ({list})")
        }
        _ => filter,
    };
    format!(
        "SELECT {name}, a.privilege_type, a.is_grantable FROM {from} \
         LEFT JOIN LATERAL aclexplode({acl}) a ON a.grantee = {} WHERE {filter}",
        grantee_oid(&grant.role)
    )
}

/// What the role holds on every object the grant covers, and whether all of it is grantable;
/// `None` if the role, the database or the schema is gone.
fn held(
    server: &Server,
    kind: Kind,
    grant: &GrantInputs,
) -> Result<Option<(BTreeSet<String>, bool)>, ProviderError> {
    let Some(mut session) = server.connect_if_exists(&grant.database)? else {
        return Ok(None);
    };
    if !role_exists(&mut session, &grant.role)? {
        return Ok(None);
    }
    let rows = session.rows("reading the privileges", &acl_query(kind, grant))?;
    let mut per_object: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut grantable = true;
    for row in &rows {
        let privileges = per_object.entry(text(row, 0)).or_default();
        if let Some(privilege) = &row[1] {
            privileges.insert(privilege.clone());
            grantable &= sql::boolean(row[2].as_deref());
        }
    }
    if matches!(kind, Kind::Database | Kind::Schema) && per_object.is_empty() {
        return Ok(None);
    }
    // Named objects that are gone hold nothing.
    for object in &grant.objects {
        per_object.entry(object.clone()).or_default();
    }
    let mut sets = per_object.into_values();
    let Some(first) = sets.next() else {
        // "All" of no objects: nothing to hold, nothing missing.
        let wanted = privilege::expand(kind, &grant.privileges).unwrap_or_default();
        return Ok(Some((
            wanted.into_iter().map(String::from).collect(),
            grant.with_grant_option,
        )));
    };
    let common = sets.fold(first, |acc, set| &acc & &set);
    Ok(Some((common.clone(), grantable && !common.is_empty())))
}

impl Grant {
    fn apply(&self, kind: Kind, grant: &GrantInputs) -> Result<(), ProviderError> {
        let database = (kind != Kind::Database).then_some(grant.database.as_str());
        let mut session = self.0.connect(database)?;
        let on = target(kind, grant);
        let to = grantee(&grant.role);
        let privileges = privilege::expand(kind, &grant.privileges)
            .map_err(|reason| ProviderError::invalid("privileges", reason))?;
        let mut sql = format!("REVOKE ALL ON {on} FROM {to};");
        if !privileges.is_empty() {
            sql += &format!(
                "GRANT {} ON {on} TO {to}{};",
                privileges.into_iter().collect::<Vec<_>>().join(", "),
                if grant.with_grant_option {
                    " WITH GRANT OPTION"
                } else {
                    ""
                }
            );
        }
        catalog::write(
            &mut session,
            &format!("granting privileges to `{}`", grant.role),
            &sql,
        )
    }

    fn outputs(&self, kind: Kind, grant: &GrantInputs) -> Result<GrantOutputs, ProviderError> {
        let (held, grantable) = held(&self.0, kind, grant)?.ok_or_else(|| {
            ProviderError::failed(format!(
                "the role `{}`, database `{}` or schema of the grant is gone",
                grant.role, grant.database
            ))
        })?;
        Ok(GrantOutputs {
            role: grant.role.clone(),
            database: grant.database.clone(),
            object_type: grant.object_type.clone(),
            schema: grant.schema.clone(),
            objects: grant.objects.clone(),
            privileges: privilege::report(kind, &grant.privileges, &held),
            with_grant_option: grantable,
        })
    }
}

impl TypedResource for Grant {
    type Inputs = GrantInputs;
    type Outputs = GrantOutputs;

    fn schema(&self) -> ResourceSchema {
        ResourceSchema::derive::<Self>("postgresql:Grant").describe(
            "Privileges of a role on a database, a schema, or tables, sequences or functions.",
        )
    }

    fn validate(&self, _: &ResourceContext<'_>, grant: &GrantInputs) -> Vec<CheckFailure> {
        let mut names = vec![
            ("role", grant.role.as_str()),
            ("database", grant.database.as_str()),
        ];
        names.extend(grant.schema.as_deref().map(|s| ("schema", s)));
        names.extend(grant.objects.iter().map(|o| ("objects", o.as_str())));
        let mut failures = sql::check_names(names);
        let kind = match kind_of(grant) {
            Ok(kind) => kind,
            Err(ProviderError::Invalid(mut f)) => {
                failures.append(&mut f);
                return failures;
            }
            Err(_) => return failures,
        };
        match (kind, &grant.schema) {
            (Kind::Database, Some(_)) => failures.push(CheckFailure::new(
                "schema",
                "a grant on a database names no schema",
            )),
            (Kind::Database, None) => {}
            (_, None) => failures.push(CheckFailure::new(
                "schema",
                format!("a grant on a {} needs the schema", grant.object_type),
            )),
            _ => {}
        }
        if matches!(kind, Kind::Database | Kind::Schema) && !grant.objects.is_empty() {
            failures.push(CheckFailure::new(
                "objects",
                format!(
                    "a grant on a {} has no objects; `database`/`schema` name it",
                    grant.object_type
                ),
            ));
        }
        if grant.privileges.is_empty() {
            failures.push(CheckFailure::new(
                "privileges",
                "name at least one privilege (or `ALL`)",
            ));
        }
        if let Err(reason) = privilege::expand(kind, &grant.privileges) {
            failures.push(CheckFailure::new("privileges", reason));
        }
        failures
    }

    fn create(
        &self,
        _: &ResourceContext<'_>,
        grant: GrantInputs,
    ) -> Result<Created<GrantOutputs>, ProviderError> {
        let kind = kind_of(&grant)?;
        self.apply(kind, &grant)?;
        let id = GrantId(
            grant.role.clone(),
            grant.database.clone(),
            grant.object_type.clone(),
            grant.schema.clone(),
        );
        Ok(Created {
            id: serde_json::to_string(&id).map_err(|e| ProviderError::failed(e.to_string()))?,
            outputs: self.outputs(kind, &grant)?,
        })
    }

    fn read(
        &self,
        _: &ResourceContext<'_>,
        id: String,
        inputs: GrantInputs,
        _: GrantOutputs,
    ) -> Result<Option<ReadResult<GrantInputs, GrantOutputs>>, ProviderError> {
        let GrantId(role, database, object_type, schema) =
            serde_json::from_str(&id).map_err(|_| {
                ProviderError::failed(format!(
                    "`{id}` is not a grant id; it is a JSON array [role, database, \
                     object_type, schema or null]"
                ))
            })?;
        let grant = GrantInputs {
            role,
            database,
            object_type,
            schema,
            ..inputs
        };
        let kind = kind_of(&grant)?;
        let Some((held, grantable)) = held(&self.0, kind, &grant)? else {
            return Ok(None);
        };
        let privileges = privilege::report(kind, &grant.privileges, &held);
        let read = GrantInputs {
            privileges,
            with_grant_option: grantable,
            ..grant
        };
        Ok(Some(ReadResult {
            id,
            outputs: GrantOutputs {
                role: read.role.clone(),
                database: read.database.clone(),
                object_type: read.object_type.clone(),
                schema: read.schema.clone(),
                objects: read.objects.clone(),
                privileges: read.privileges.clone(),
                with_grant_option: read.with_grant_option,
            },
            inputs: read,
        }))
    }

    fn update(
        &self,
        _: &ResourceContext<'_>,
        _: &str,
        _: GrantInputs,
        _: GrantOutputs,
        new: GrantInputs,
    ) -> Result<GrantOutputs, ProviderError> {
        let kind = kind_of(&new)?;
        self.apply(kind, &new)?;
        self.outputs(kind, &new)
    }

    fn delete(
        &self,
        _: &ResourceContext<'_>,
        _: &str,
        grant: GrantInputs,
        _: GrantOutputs,
    ) -> Result<(), ProviderError> {
        let kind = kind_of(&grant)?;
        // Nothing to revoke when the role, the database or the schema is gone.
        if held(&self.0, kind, &grant)?.is_none() {
            return Ok(());
        }
        let database = (kind != Kind::Database).then_some(grant.database.as_str());
        let mut session = self.0.connect(database)?;
        let sql = format!(
            "REVOKE ALL ON {} FROM {}",
            target(kind, &grant),
            grantee(&grant.role)
        );
        catalog::write(
            &mut session,
            &format!("revoking privileges of `{}`", grant.role),
            &sql,
        )
    }
}

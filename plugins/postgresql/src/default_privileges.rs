//! `postgresql:DefaultPrivileges`: the privileges a role gets on the objects another role
//! (`owner`) creates from now on, in one schema or in the whole database
//! (`ALTER DEFAULT PRIVILEGES`).
//!
//! The id, which import takes too, is the JSON array
//! `[role, database, owner, schema or null, object_type]`.

use std::collections::BTreeSet;

use plinth_sdk::{
    CheckFailure, Created, ProviderError, ReadResult, ResourceContext, ResourceSchema,
    TypedResource,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::catalog;
use crate::grant::{grantee_oid, role_exists};
use crate::privilege::{self, Kind};
use crate::server::{Server, text};
use crate::sql::{self, grantee, ident, literal};

/// The inputs of `postgresql:DefaultPrivileges`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub(crate) struct DefaultPrivilegesInputs {
    /// The role that gets the privileges; `public` for every role.
    #[schemars(extend("x-plinth-replace-on-change" = true))]
    pub(crate) role: String,
    /// The database the defaults apply in.
    #[schemars(extend("x-plinth-replace-on-change" = true))]
    pub(crate) database: String,
    /// The role whose new objects the defaults apply to.
    #[schemars(extend("x-plinth-replace-on-change" = true))]
    pub(crate) owner: String,
    /// The schema the defaults apply in; absent: the whole database.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-plinth-replace-on-change" = true))]
    pub(crate) schema: Option<String>,
    /// `table`, `sequence`, `function`, `type` or `schema`.
    #[schemars(extend("x-plinth-replace-on-change" = true))]
    pub(crate) object_type: String,
    /// The privileges, such as `SELECT` or `ALL`.
    pub(crate) privileges: Vec<String>,
    /// The role may grant the privileges to others.
    #[serde(default)]
    pub(crate) with_grant_option: bool,
}

/// The outputs: the defaults as held (defaulted, so that an import, which has none yet, reads).
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub(crate) struct DefaultPrivilegesOutputs {
    pub(crate) role: String,
    pub(crate) database: String,
    pub(crate) owner: String,
    pub(crate) schema: Option<String>,
    pub(crate) object_type: String,
    pub(crate) privileges: Vec<String>,
    pub(crate) with_grant_option: bool,
}

impl From<DefaultPrivilegesInputs> for DefaultPrivilegesOutputs {
    fn from(d: DefaultPrivilegesInputs) -> DefaultPrivilegesOutputs {
        DefaultPrivilegesOutputs {
            role: d.role,
            database: d.database,
            owner: d.owner,
            schema: d.schema,
            object_type: d.object_type,
            privileges: d.privileges,
            with_grant_option: d.with_grant_option,
        }
    }
}

/// The `postgresql:DefaultPrivileges` resource type.
pub(crate) struct DefaultPrivileges(pub(crate) Server);

#[derive(Serialize, Deserialize)]
struct Id(String, String, String, Option<String>, String);

fn kind_of(d: &DefaultPrivilegesInputs) -> Result<Kind, ProviderError> {
    match Kind::parse(&d.object_type) {
        Some(kind) if kind != Kind::Database => Ok(kind),
        _ => Err(ProviderError::invalid(
            "object_type",
            "must be table, sequence, function, type or schema",
        )),
    }
}

/// The `pg_default_acl.defaclobjtype` of a kind.
fn objtype(kind: Kind) -> &'static str {
    match kind {
        Kind::Table => "r",
        Kind::Sequence => "S",
        Kind::Function => "f",
        Kind::Type => "T",
        Kind::Schema | Kind::Database => "n",
    }
}

/// `ALTER DEFAULT PRIVILEGES FOR ROLE owner [IN SCHEMA schema]`.
fn scope(d: &DefaultPrivilegesInputs) -> String {
    let mut sql = format!("ALTER DEFAULT PRIVILEGES FOR ROLE {}", ident(&d.owner));
    if let Some(schema) = &d.schema {
        sql += &format!(" IN SCHEMA {}", ident(schema));
    }
    sql
}

impl DefaultPrivileges {
    /// The default privileges held and whether all are grantable; `None` if a role, the
    /// database or the schema is gone.
    fn held(
        &self,
        d: &DefaultPrivilegesInputs,
    ) -> Result<Option<(BTreeSet<String>, bool)>, ProviderError> {
        let kind = kind_of(d)?;
        let Some(mut session) = self.0.connect_if_exists(&d.database)? else {
            return Ok(None);
        };
        if !role_exists(&mut session, &d.role)? || !role_exists(&mut session, &d.owner)? {
            return Ok(None);
        }
        let namespace = match &d.schema {
            Some(schema) => {
                let sql = format!(
                    "SELECT oid FROM pg_namespace WHERE nspname = {}",
                    literal(schema)
                );
                match session.row("looking up the schema", &sql)? {
                    Some(row) => text(&row, 0),
                    None => return Ok(None),
                }
            }
            None => "0".to_owned(),
        };
        let sql = format!(
            "SELECT a.privilege_type, a.is_grantable FROM pg_default_acl d, \
             aclexplode(d.defaclacl) a WHERE d.defaclrole = {} AND d.defaclnamespace = {namespace} \
             AND d.defaclobjtype = '{}' AND a.grantee = {}",
            grantee_oid(&d.owner),
            objtype(kind),
            grantee_oid(&d.role)
        );
        let rows = session.rows("reading the default privileges", &sql)?;
        let held: BTreeSet<String> = rows.iter().map(|r| text(r, 0)).collect();
        let grantable = !rows.is_empty() && rows.iter().all(|r| sql::boolean(r[1].as_deref()));
        Ok(Some((held, grantable)))
    }

    fn apply(&self, d: &DefaultPrivilegesInputs) -> Result<DefaultPrivilegesInputs, ProviderError> {
        let kind = kind_of(d)?;
        let privileges = privilege::expand(kind, &d.privileges)
            .map_err(|reason| ProviderError::invalid("privileges", reason))?;
        let mut session = self.0.connect(Some(&d.database))?;
        let on = kind.plural();
        let to = grantee(&d.role);
        let mut sql = format!("{} REVOKE ALL ON {on} FROM {to};", scope(d));
        sql += &format!(
            "{} GRANT {} ON {on} TO {to}{};",
            scope(d),
            privileges.into_iter().collect::<Vec<_>>().join(", "),
            if d.with_grant_option {
                " WITH GRANT OPTION"
            } else {
                ""
            }
        );
        catalog::write(
            &mut session,
            &format!("setting default privileges of `{}`", d.role),
            &sql,
        )?;
        self.observed(d)
    }

    /// `d` as the catalogs have it.
    fn observed(
        &self,
        d: &DefaultPrivilegesInputs,
    ) -> Result<DefaultPrivilegesInputs, ProviderError> {
        let kind = kind_of(d)?;
        let (held, grantable) = self.held(d)?.ok_or_else(|| {
            ProviderError::failed("a role, the database or the schema of the defaults is gone")
        })?;
        Ok(DefaultPrivilegesInputs {
            privileges: privilege::report(kind, &d.privileges, &held),
            with_grant_option: grantable,
            ..d.clone()
        })
    }
}

impl TypedResource for DefaultPrivileges {
    type Inputs = DefaultPrivilegesInputs;
    type Outputs = DefaultPrivilegesOutputs;

    fn schema(&self) -> ResourceSchema {
        ResourceSchema::derive::<Self>("postgresql:DefaultPrivileges")
            .describe("The privileges a role gets on the objects another role creates from now on.")
    }

    fn validate(&self, _: &ResourceContext<'_>, d: &DefaultPrivilegesInputs) -> Vec<CheckFailure> {
        let mut names = vec![
            ("role", d.role.as_str()),
            ("database", d.database.as_str()),
            ("owner", d.owner.as_str()),
        ];
        names.extend(d.schema.as_deref().map(|s| ("schema", s)));
        let mut failures = sql::check_names(names);
        match kind_of(d) {
            Ok(kind) => {
                if kind == Kind::Schema && d.schema.is_some() {
                    failures.push(CheckFailure::new(
                        "schema",
                        "default privileges on schemas apply to the whole database; leave \
                         `schema` out",
                    ));
                }
                if let Err(reason) = privilege::expand(kind, &d.privileges) {
                    failures.push(CheckFailure::new("privileges", reason));
                }
            }
            Err(ProviderError::Invalid(mut f)) => failures.append(&mut f),
            Err(_) => {}
        }
        if d.privileges.is_empty() {
            failures.push(CheckFailure::new(
                "privileges",
                "name at least one privilege (or `ALL`)",
            ));
        }
        failures
    }

    fn create(
        &self,
        _: &ResourceContext<'_>,
        d: DefaultPrivilegesInputs,
    ) -> Result<Created<DefaultPrivilegesOutputs>, ProviderError> {
        let outputs = self.apply(&d)?;
        let id = Id(
            d.role.clone(),
            d.database.clone(),
            d.owner.clone(),
            d.schema.clone(),
            d.object_type.clone(),
        );
        Ok(Created {
            id: serde_json::to_string(&id).map_err(|e| ProviderError::failed(e.to_string()))?,
            outputs: outputs.into(),
        })
    }

    fn read(
        &self,
        _: &ResourceContext<'_>,
        id: String,
        inputs: DefaultPrivilegesInputs,
        _: DefaultPrivilegesOutputs,
    ) -> Result<Option<ReadResult<DefaultPrivilegesInputs, DefaultPrivilegesOutputs>>, ProviderError>
    {
        let Id(role, database, owner, schema, object_type) =
            serde_json::from_str(&id).map_err(|_| {
                ProviderError::failed(format!(
                    "`{id}` is not a default privileges id; it is a JSON array [role, \
                     database, owner, schema or null, object_type]"
                ))
            })?;
        let d = DefaultPrivilegesInputs {
            role,
            database,
            owner,
            schema,
            object_type,
            ..inputs
        };
        if self.held(&d)?.is_none() {
            return Ok(None);
        }
        let read = self.observed(&d)?;
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
        _: DefaultPrivilegesInputs,
        _: DefaultPrivilegesOutputs,
        new: DefaultPrivilegesInputs,
    ) -> Result<DefaultPrivilegesOutputs, ProviderError> {
        self.apply(&new).map(Into::into)
    }

    fn delete(
        &self,
        _: &ResourceContext<'_>,
        _: &str,
        d: DefaultPrivilegesInputs,
        _: DefaultPrivilegesOutputs,
    ) -> Result<(), ProviderError> {
        let kind = kind_of(&d)?;
        if self.held(&d)?.is_none() {
            return Ok(());
        }
        let mut session = self.0.connect(Some(&d.database))?;
        let sql = format!(
            "{} REVOKE ALL ON {} FROM {}",
            scope(&d),
            kind.plural(),
            grantee(&d.role)
        );
        catalog::write(
            &mut session,
            &format!("revoking default privileges of `{}`", d.role),
            &sql,
        )
    }
}

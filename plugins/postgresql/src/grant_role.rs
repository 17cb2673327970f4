//! `postgresql:GrantRole`: membership of a role in another (`GRANT grant_role TO role`).
//!
//! The id, which import takes too, is the JSON array `[role, grant_role]`.

use plinth_sdk::{
    CheckFailure, Created, ProviderError, ReadResult, ResourceContext, ResourceSchema,
    TypedResource,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::catalog;
use crate::server::{Server, Session};
use crate::sql::{self, ident, literal};

/// The inputs of `postgresql:GrantRole`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub(crate) struct GrantRoleInputs {
    /// The role made a member.
    #[schemars(extend("x-plinth-replace-on-change" = true))]
    pub(crate) role: String,
    /// The role it becomes a member of.
    #[schemars(extend("x-plinth-replace-on-change" = true))]
    pub(crate) grant_role: String,
    /// The member may grant the membership to others.
    #[serde(default)]
    pub(crate) with_admin_option: bool,
}

/// The outputs: the membership (defaulted, so that an import, which has none yet, reads).
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub(crate) struct GrantRoleOutputs {
    pub(crate) role: String,
    pub(crate) grant_role: String,
    pub(crate) with_admin_option: bool,
}

impl From<GrantRoleInputs> for GrantRoleOutputs {
    fn from(m: GrantRoleInputs) -> GrantRoleOutputs {
        GrantRoleOutputs {
            role: m.role,
            grant_role: m.grant_role,
            with_admin_option: m.with_admin_option,
        }
    }
}

/// The `postgresql:GrantRole` resource type.
pub(crate) struct GrantRole(pub(crate) Server);

/// Whether the membership exists, and with the admin option.
fn fetch(session: &mut Session, m: &GrantRoleInputs) -> Result<Option<bool>, ProviderError> {
    let sql = format!(
        "SELECT m.admin_option FROM pg_auth_members m \
         JOIN pg_roles r ON r.oid = m.member JOIN pg_roles g ON g.oid = m.roleid \
         WHERE r.rolname = {} AND g.rolname = {}",
        literal(&m.role),
        literal(&m.grant_role)
    );
    Ok(session
        .row("reading the membership", &sql)?
        .map(|row| sql::boolean(row[0].as_deref())))
}

impl GrantRole {
    fn grant(&self, m: &GrantRoleInputs) -> Result<(), ProviderError> {
        let mut session = self.0.connect(None)?;
        let mut sql = format!(
            "REVOKE {0} FROM {1};GRANT {0} TO {1}",
            ident(&m.grant_role),
            ident(&m.role)
        );
        if m.with_admin_option {
            sql += " WITH ADMIN OPTION";
        }
        catalog::write(
            &mut session,
            &format!("granting `{}` to `{}`", m.grant_role, m.role),
            &sql,
        )
    }
}

impl TypedResource for GrantRole {
    type Inputs = GrantRoleInputs;
    type Outputs = GrantRoleOutputs;

    fn schema(&self) -> ResourceSchema {
        ResourceSchema::derive::<Self>("postgresql:GrantRole")
            .describe("Membership of a role in another role.")
    }

    fn validate(&self, _: &ResourceContext<'_>, m: &GrantRoleInputs) -> Vec<CheckFailure> {
        let mut failures = sql::check_names([
            ("role", m.role.as_str()),
            ("grant_role", m.grant_role.as_str()),
        ]);
        if m.role == m.grant_role {
            failures.push(CheckFailure::new(
                "grant_role",
                "a role cannot be a member of itself",
            ));
        }
        failures
    }

    fn create(
        &self,
        _: &ResourceContext<'_>,
        m: GrantRoleInputs,
    ) -> Result<Created<GrantRoleOutputs>, ProviderError> {
        self.grant(&m)?;
        let id = serde_json::to_string(&(&m.role, &m.grant_role))
            .map_err(|e| ProviderError::failed(e.to_string()))?;
        Ok(Created {
            id,
            outputs: m.into(),
        })
    }

    fn read(
        &self,
        _: &ResourceContext<'_>,
        id: String,
        inputs: GrantRoleInputs,
        _: GrantRoleOutputs,
    ) -> Result<Option<ReadResult<GrantRoleInputs, GrantRoleOutputs>>, ProviderError> {
        let (role, grant_role): (String, String) = serde_json::from_str(&id).map_err(|_| {
            ProviderError::failed(format!(
                "`{id}` is not a membership id; it is a JSON array [role, grant_role]"
            ))
        })?;
        let mut m = GrantRoleInputs {
            role,
            grant_role,
            ..inputs
        };
        let mut session = self.0.connect(None)?;
        let Some(admin) = fetch(&mut session, &m)? else {
            return Ok(None);
        };
        m.with_admin_option = admin;
        Ok(Some(ReadResult {
            id,
            inputs: m.clone(),
            outputs: m.into(),
        }))
    }

    fn update(
        &self,
        _: &ResourceContext<'_>,
        _: &str,
        _: GrantRoleInputs,
        _: GrantRoleOutputs,
        new: GrantRoleInputs,
    ) -> Result<GrantRoleOutputs, ProviderError> {
        self.grant(&new)?;
        Ok(new.into())
    }

    fn delete(
        &self,
        _: &ResourceContext<'_>,
        _: &str,
        m: GrantRoleInputs,
        _: GrantRoleOutputs,
    ) -> Result<(), ProviderError> {
        let mut session = self.0.connect(None)?;
        if fetch(&mut session, &m)?.is_none() {
            return Ok(());
        }
        catalog::write(
            &mut session,
            &format!("revoking `{}` from `{}`", m.grant_role, m.role),
            &format!("REVOKE {} FROM {}", ident(&m.grant_role), ident(&m.role)),
        )
    }
}

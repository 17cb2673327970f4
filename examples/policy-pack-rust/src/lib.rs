//! `postgres-guard`, a policy pack for the PostgreSQL provider:
//!
//! - `no-superuser` (mandatory): no `postgresql:Role` is a superuser;
//! - `no-public-grants` (mandatory): no `postgresql:Grant` or `postgresql:DefaultPrivileges`
//!   grants anything to `public`, the pseudo-role every role belongs to.
//!
//! ```sh
//! plinth preview --policy-pack ../../examples/policy-pack-rust
//! ```

use plinth_sdk::{EnforcementLevel, Policy, PolicyPack, PolicyResource, Value, Violation};

#[derive(Default)]
struct PostgresGuard;

impl PolicyPack for PostgresGuard {
    fn name(&self) -> &str {
        "postgres-guard"
    }
    fn version(&self) -> &str {
        env!("CARGO_PKG_VERSION")
    }
    fn policies(&self) -> Vec<Box<dyn Policy>> {
        vec![Box::new(NoSuperuser), Box::new(NoPublicGrants)]
    }
}

plinth_sdk::export_policy_pack!(PostgresGuard);

/// `no-superuser`.
struct NoSuperuser;

impl Policy for NoSuperuser {
    fn name(&self) -> &str {
        "no-superuser"
    }
    fn description(&self) -> &str {
        "No PostgreSQL role is a superuser: a superuser bypasses every permission check."
    }
    fn enforcement_level(&self) -> EnforcementLevel {
        EnforcementLevel::Mandatory
    }
    fn check_resource(&self, resource: &PolicyResource) -> Vec<Violation> {
        let superuser = resource.inputs.get("superuser").and_then(Value::as_bool);
        if resource.ty == "postgresql:Role" && superuser == Some(true) {
            vec![
                Violation::new(format!(
                    "role `{}` is a superuser; grant it the privileges it needs instead",
                    resource.name()
                ))
                .at("superuser"),
            ]
        } else {
            Vec::new()
        }
    }
}

/// `no-public-grants`.
struct NoPublicGrants;

impl Policy for NoPublicGrants {
    fn name(&self) -> &str {
        "no-public-grants"
    }
    fn description(&self) -> &str {
        "Nothing is granted to `public`, which every role (present and future) belongs to."
    }
    fn enforcement_level(&self) -> EnforcementLevel {
        EnforcementLevel::Mandatory
    }
    fn check_resource(&self, resource: &PolicyResource) -> Vec<Violation> {
        let grants = matches!(
            resource.ty.as_str(),
            "postgresql:Grant" | "postgresql:DefaultPrivileges"
        );
        let role = resource.inputs.get("role").and_then(Value::as_str);
        // The provider takes `public` in any case as the pseudo-role (and `public ` as a role).
        if grants && role.is_some_and(|r| r.eq_ignore_ascii_case("public")) {
            vec![
                Violation::new("grants to `public` reach every role; grant to a named role")
                    .at("role"),
            ]
        } else {
            Vec::new()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use plinth_sdk::PropertyMap;

    fn resource(ty: &str, inputs: &[(&str, Value)]) -> PolicyResource {
        PolicyResource {
            ty: ty.into(),
            urn: format!("urn:plinth:dev::db::{ty}::it"),
            inputs: (inputs.iter())
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect::<PropertyMap>(),
            old_inputs: None,
            provider: None,
            parent: None,
            dependencies: Vec::new(),
        }
    }

    #[test]
    fn a_superuser_role_is_refused_at_its_property() {
        let admin = resource("postgresql:Role", &[("superuser", Value::Bool(true))]);
        let violations = NoSuperuser.check_resource(&admin);
        assert_eq!(violations.len(), 1);
        assert_eq!(violations[0].property, "superuser");
        assert!(violations[0].message.contains("role `it` is a superuser"));
        let app = resource("postgresql:Role", &[("superuser", Value::Bool(false))]);
        assert!(NoSuperuser.check_resource(&app).is_empty());
        assert!(
            NoSuperuser
                .check_resource(&resource("postgresql:Role", &[]))
                .is_empty()
        );
    }

    #[test]
    fn grants_to_public_are_refused_in_any_case() {
        for ty in ["postgresql:Grant", "postgresql:DefaultPrivileges"] {
            for role in ["public", "PUBLIC", "Public"] {
                let grant = resource(ty, &[("role", Value::from(role))]);
                assert_eq!(
                    NoPublicGrants.check_resource(&grant).len(),
                    1,
                    "{ty} {role}"
                );
            }
            for role in ["app", "public "] {
                let grant = resource(ty, &[("role", Value::from(role))]);
                assert!(
                    NoPublicGrants.check_resource(&grant).is_empty(),
                    "{ty} {role}"
                );
            }
        }
        let role = resource("postgresql:Role", &[("role", Value::from("public"))]);
        assert!(NoPublicGrants.check_resource(&role).is_empty());
    }
}

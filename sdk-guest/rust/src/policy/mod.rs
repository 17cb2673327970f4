//! Policy packs: policies that judge each resource a deployment is about to create, update or
//! replace, and the whole stack once the program has ended. A pack runs sandboxed and granted
//! nothing; what it returns is masked by the host before anyone sees it.

pub mod bindings;
pub mod export;

use crate::value::PropertyMap;

/// What a violation of a policy does to a run. The user's `--policy-pack-config` may set
/// another level than the policy's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EnforcementLevel {
    /// Shown and recorded; the run goes on.
    #[default]
    Advisory,
    /// Fails `preview`, and stops `up` before the violating step runs.
    Mandatory,
    /// Not run.
    Disabled,
}

/// A resource as a policy sees it. Secrets in its inputs stay [`crate::Value::Secret`]: a
/// policy may look at them, and whatever it returns that holds one is masked by the host.
#[derive(Debug, Clone)]
pub struct PolicyResource {
    /// The type token, e.g. `random:RandomPassword`.
    pub ty: String,
    /// The resource's URN.
    pub urn: String,
    /// The inputs its provider checked; unknown where not known yet (in a preview).
    pub inputs: PropertyMap,
    /// The recorded inputs of a resource being updated or replaced.
    pub old_inputs: Option<PropertyMap>,
    /// The URN of the provider resource that manages it.
    pub provider: Option<String>,
    /// The URN of its parent.
    pub parent: Option<String>,
    /// The URNs of the resources it depends on.
    pub dependencies: Vec<String>,
}

impl PolicyResource {
    /// The resource's name: the last part of its URN.
    pub fn name(&self) -> &str {
        self.urn.rsplit("::").next().unwrap_or(&self.urn)
    }
}

/// One objection of a policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// What is wrong, and what to do about it.
    pub message: String,
    /// The offending property (`length`, `tags.owner`); empty for the whole resource.
    pub property: String,
    /// In [`Policy::check_stack`], the URN of the resource at fault; empty for the stack.
    pub urn: String,
}

impl Violation {
    /// A violation saying `message`.
    pub fn new(message: impl Into<String>) -> Violation {
        Violation {
            message: message.into(),
            property: String::new(),
            urn: String::new(),
        }
    }

    /// The violation, at `property`.
    pub fn at(mut self, property: impl Into<String>) -> Violation {
        self.property = property.into();
        self
    }

    /// The violation, of the resource `urn` (for [`Policy::check_stack`]).
    pub fn of(mut self, urn: impl Into<String>) -> Violation {
        self.urn = urn.into();
        self
    }
}

/// One policy. Only [`name`](Policy::name), [`description`](Policy::description) and one of
/// the checks are required.
pub trait Policy {
    /// Unique within the pack, e.g. `password-length`: the key of its configuration.
    fn name(&self) -> &str;
    /// What it enforces, for the user.
    fn description(&self) -> &str;
    /// Its level unless the user's configuration sets another.
    fn enforcement_level(&self) -> EnforcementLevel {
        EnforcementLevel::Advisory
    }
    /// A JSON Schema of its configuration object, if it takes one.
    fn config_schema(&self) -> Option<serde_json::Value> {
        None
    }
    /// Takes the configuration the user gave it (a JSON object); called once, before any
    /// check, and only if the user configured it. An error says what was wrong.
    fn configure(&mut self, config: serde_json::Value) -> Result<(), String> {
        let _ = config;
        Ok(())
    }
    /// The violations of `resource`, about to be created, updated or replaced.
    fn check_resource(&self, resource: &PolicyResource) -> Vec<Violation> {
        let _ = resource;
        Vec::new()
    }
    /// The violations of the stack whose resources are `resources`.
    fn check_stack(&self, resources: &[PolicyResource]) -> Vec<Violation> {
        let _ = resources;
        Vec::new()
    }
}

/// A policy pack: a name, a version and its policies. Export it with
/// [`export_policy_pack!`](crate::export_policy_pack).
pub trait PolicyPack {
    /// The pack's name, as errors and violations name it.
    fn name(&self) -> &str;
    /// Its version.
    fn version(&self) -> &str;
    /// Its policies, made once per instance.
    fn policies(&self) -> Vec<Box<dyn Policy>>;
}

/// Exports a [`PolicyPack`] (a type that is also `Default`) as the component's
/// `plinth:policy/analyzer`.
#[macro_export]
macro_rules! export_policy_pack {
    ($pack:ty) => {
        const _: () = {
            const fn assert_pack<P: $crate::PolicyPack + ::core::default::Default>() {}
            assert_pack::<$pack>();

            type PlinthPolicyExport = $crate::__private::PolicyExport<$pack>;
            $crate::__private::policy_bindings::export!(
                PlinthPolicyExport with_types_in $crate::__private::policy_bindings
            );
        };
    };
}

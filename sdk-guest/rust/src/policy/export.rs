//! The glue between the generated `analyzer` interface and a [`PolicyPack`]: one set of
//! policies per component instance, configured once.

use std::cell::RefCell;
use std::marker::PhantomData;

use super::bindings::exports::plinth::policy::analyzer as wit;
use super::{EnforcementLevel, Policy, PolicyPack, PolicyResource, Violation};
use crate::value::nodes::decode_map;

/// Implements the generated `Guest` trait for the pack `P`; named by `export_policy_pack!`.
pub struct PolicyExport<P>(PhantomData<P>);

/// The pack and its policies.
struct Runtime {
    pack: Box<dyn PolicyPack>,
    policies: Vec<Box<dyn Policy>>,
}

thread_local! {
    static RUNTIME: RefCell<Option<Runtime>> = const { RefCell::new(None) };
}

fn with_runtime<P: PolicyPack + Default + 'static, T>(f: impl FnOnce(&mut Runtime) -> T) -> T {
    RUNTIME.with_borrow_mut(|slot| {
        f(slot.get_or_insert_with(|| {
            let pack = P::default();
            let policies = pack.policies();
            Runtime {
                pack: Box::new(pack),
                policies,
            }
        }))
    })
}

fn level_to_wit(level: EnforcementLevel) -> wit::EnforcementLevel {
    match level {
        EnforcementLevel::Advisory => wit::EnforcementLevel::Advisory,
        EnforcementLevel::Mandatory => wit::EnforcementLevel::Mandatory,
        EnforcementLevel::Disabled => wit::EnforcementLevel::Disabled,
    }
}

/// The resource the host sent; a malformed value (which the host never sends) reads as empty.
fn resource_from_wit(resource: wit::Resource) -> PolicyResource {
    let wit::Resource {
        type_,
        urn,
        inputs,
        old_inputs,
        provider,
        parent,
        dependencies,
    } = resource;
    PolicyResource {
        ty: type_,
        urn,
        inputs: decode_map(inputs).unwrap_or_default(),
        old_inputs: old_inputs.map(|v| decode_map(v).unwrap_or_default()),
        provider,
        parent,
        dependencies,
    }
}

fn violations_to_wit(policy: &str, violations: Vec<Violation>) -> Vec<wit::Violation> {
    (violations.into_iter())
        .map(|v| wit::Violation {
            policy: policy.to_owned(),
            message: v.message,
            property: v.property,
            urn: v.urn,
        })
        .collect()
}

impl<P: PolicyPack + Default + 'static> wit::Guest for PolicyExport<P> {
    fn info() -> wit::PackInfo {
        with_runtime::<P, _>(|rt| wit::PackInfo {
            name: rt.pack.name().to_owned(),
            version: rt.pack.version().to_owned(),
            policies: (rt.policies.iter())
                .map(|p| wit::PolicyInfo {
                    name: p.name().to_owned(),
                    description: p.description().to_owned(),
                    enforcement_level: level_to_wit(p.enforcement_level()),
                    config_schema: p.config_schema().map(|s| s.to_string()).unwrap_or_default(),
                })
                .collect(),
        })
    }

    fn configure(config: Vec<wit::PolicyConfig>) -> Result<(), String> {
        with_runtime::<P, _>(|rt| {
            for wit::PolicyConfig { policy, config } in config {
                let Some(target) = rt.policies.iter_mut().find(|p| p.name() == policy) else {
                    return Err(format!("this pack has no policy `{policy}`"));
                };
                let value: serde_json::Value = serde_json::from_str(&config)
                    .map_err(|e| format!("`{policy}`: the configuration is not JSON: {e}"))?;
                target
                    .configure(value)
                    .map_err(|e| format!("`{policy}`: {e}"))?;
            }
            Ok(())
        })
    }

    fn analyze_resource(resource: wit::Resource) -> Vec<wit::Violation> {
        let resource = resource_from_wit(resource);
        with_runtime::<P, _>(|rt| {
            // Every policy runs: the host knows the levels in force, and drops what the
            // disabled ones say.
            (rt.policies.iter())
                .flat_map(|p| violations_to_wit(p.name(), p.check_resource(&resource)))
                .collect()
        })
    }

    fn analyze_stack(resources: Vec<wit::Resource>) -> Vec<wit::Violation> {
        let resources: Vec<PolicyResource> = resources.into_iter().map(resource_from_wit).collect();
        with_runtime::<P, _>(|rt| {
            (rt.policies.iter())
                .flat_map(|p| violations_to_wit(p.name(), p.check_stack(&resources)))
                .collect()
        })
    }
}

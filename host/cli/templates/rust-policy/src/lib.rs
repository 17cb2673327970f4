//! {{ name }}: a plinth policy pack. It judges each resource a deployment is about to create,
//! update or replace (and the whole stack once the program has ended); a mandatory violation
//! fails `preview` and stops `up` before the step runs. plinth runs it sandboxed, granted
//! nothing. From a project that uses the `random` provider:
//!
//! ```sh
//! plinth preview --policy-pack path/to/{{ name }}
//! echo '{"string-length": {"minimum": 12}}' > policy.json
//! plinth preview --policy-pack path/to/{{ name }} --policy-pack-config policy.json
//! ```

use plinth_sdk::{EnforcementLevel, Policy, PolicyPack, PolicyResource, Value, Violation};

#[derive(Default)]
struct Pack;

impl PolicyPack for Pack {
    fn name(&self) -> &str {
        "{{ name }}"
    }
    fn version(&self) -> &str {
        env!("CARGO_PKG_VERSION")
    }
    fn policies(&self) -> Vec<Box<dyn Policy>> {
        vec![Box::new(StringLength { minimum: 8 }), Box::new(OnePet)]
    }
}

plinth_sdk::export_policy_pack!(Pack);

/// `string-length` (mandatory): a `random:RandomString` is at least `minimum` characters long.
struct StringLength {
    minimum: i64,
}

impl Policy for StringLength {
    fn name(&self) -> &str {
        "string-length"
    }
    fn description(&self) -> &str {
        "A random:RandomString is at least `minimum` (default 8) characters long."
    }
    fn enforcement_level(&self) -> EnforcementLevel {
        EnforcementLevel::Mandatory
    }
    fn config_schema(&self) -> Option<serde_json::Value> {
        Some(serde_json::json!({
            "type": "object",
            "properties": { "minimum": { "type": "integer", "minimum": 1 } },
            "additionalProperties": false
        }))
    }
    fn configure(&mut self, config: serde_json::Value) -> Result<(), String> {
        if let Some(minimum) = config.get("minimum") {
            self.minimum = (minimum.as_i64())
                .filter(|m| *m >= 1)
                .ok_or_else(|| format!("`minimum` must be a positive integer, not {minimum}"))?;
        }
        Ok(())
    }
    fn check_resource(&self, resource: &PolicyResource) -> Vec<Violation> {
        if resource.ty != "random:RandomString" {
            return Vec::new();
        }
        // In a preview, a length computed from another resource's output is not known yet:
        // `up` judges it again once it is.
        match resource.inputs.get("length").and_then(Value::as_i64) {
            Some(length) if length < self.minimum => vec![
                Violation::new(format!(
                    "`{}` is {length} characters long; make it at least {}",
                    resource.name(),
                    self.minimum
                ))
                .at("length"),
            ],
            _ => Vec::new(),
        }
    }
}

/// `one-pet` (advisory): a stack has at most one `random:RandomPet`, judged on the whole stack.
struct OnePet;

impl Policy for OnePet {
    fn name(&self) -> &str {
        "one-pet"
    }
    fn description(&self) -> &str {
        "A stack names itself with at most one random:RandomPet."
    }
    fn check_stack(&self, resources: &[PolicyResource]) -> Vec<Violation> {
        let pets: Vec<&PolicyResource> = (resources.iter())
            .filter(|r| r.ty == "random:RandomPet")
            .collect();
        (pets.iter().skip(1))
            .map(|pet| {
                Violation::new(format!("`{}` is one pet too many: keep one", pet.name()))
                    .of(pet.urn.clone())
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resource(ty: &str, name: &str, inputs: &[(&str, Value)]) -> PolicyResource {
        PolicyResource {
            ty: ty.into(),
            urn: format!("urn:plinth:dev::demo::{ty}::{name}"),
            inputs: (inputs.iter())
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
            old_inputs: None,
            provider: None,
            parent: None,
            dependencies: Vec::new(),
        }
    }

    #[test]
    fn a_short_string_is_refused_at_its_length() {
        let policy = StringLength { minimum: 8 };
        let short = resource("random:RandomString", "suffix", &[("length", Value::from(6))]);
        let violations = policy.check_resource(&short);
        assert_eq!(violations.len(), 1);
        assert_eq!(violations[0].property, "length");
        assert!(violations[0].message.contains("`suffix` is 6 characters long"));
        let long = resource("random:RandomString", "suffix", &[("length", Value::from(8))]);
        assert!(policy.check_resource(&long).is_empty());
        // Not known yet in a preview: judged at `up`.
        let unknown = resource("random:RandomString", "suffix", &[]);
        assert!(policy.check_resource(&unknown).is_empty());
    }

    #[test]
    fn the_minimum_is_configured_and_checked() {
        let mut policy = StringLength { minimum: 8 };
        policy.configure(serde_json::json!({"minimum": 12})).unwrap();
        let string = resource("random:RandomString", "s", &[("length", Value::from(10))]);
        assert_eq!(policy.check_resource(&string).len(), 1);
        let err = policy.configure(serde_json::json!({"minimum": 0})).unwrap_err();
        assert!(err.contains("positive integer"), "{err}");
    }

    #[test]
    fn a_second_pet_is_reported() {
        let pets = [
            resource("random:RandomPet", "a", &[]),
            resource("random:RandomPet", "b", &[]),
            resource("random:RandomString", "s", &[]),
        ];
        let violations = OnePet.check_stack(&pets);
        assert_eq!(violations.len(), 1);
        assert_eq!(violations[0].urn, pets[1].urn);
    }
}

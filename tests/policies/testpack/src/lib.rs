//! The end-to-end tests' policy pack, `testpack`:
//!
//! - `password-length` (mandatory): a `random:RandomPassword`'s `length` is at least the
//!   configured `minimum` (default 16);
//! - `value-length` (advisory): a `testkit:Echo`'s `value` has at least 3 characters;
//! - `hostile` (advisory): does what its configured `mode` says on every resource it judges:
//!   `loop` spins forever, `trap` panics, `allocate` allocates without bound, `open-file`
//!   reads the file `path`, `socket` connects to `address`, `leak` returns every secret input
//!   in its message. `open-file` and `socket` report what they got as a violation. Without a
//!   mode it does nothing.

use std::hint::black_box;

use plinth_sdk::{EnforcementLevel, Policy, PolicyPack, PolicyResource, Value, Violation};

#[derive(Default)]
struct TestPack;

impl PolicyPack for TestPack {
    fn name(&self) -> &str {
        "testpack"
    }
    fn version(&self) -> &str {
        env!("CARGO_PKG_VERSION")
    }
    fn policies(&self) -> Vec<Box<dyn Policy>> {
        vec![
            Box::new(PasswordLength { minimum: 16 }),
            Box::new(ValueLength),
            Box::new(Hostile::default()),
        ]
    }
}

plinth_sdk::export_policy_pack!(TestPack);

/// `password-length`: passwords at least `minimum` long.
struct PasswordLength {
    minimum: i64,
}

impl Policy for PasswordLength {
    fn name(&self) -> &str {
        "password-length"
    }
    fn description(&self) -> &str {
        "A random:RandomPassword is at least `minimum` (default 16) characters long."
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
        if resource.ty != "random:RandomPassword" {
            return Vec::new();
        }
        match resource.inputs.get("length").and_then(Value::as_i64) {
            Some(length) if length < self.minimum => vec![
                Violation::new(format!(
                    "the password is {length} characters long; make it at least {}",
                    self.minimum
                ))
                .at("length"),
            ],
            _ => Vec::new(),
        }
    }
}

/// `value-length`: echo values of at least 3 characters.
struct ValueLength;

impl Policy for ValueLength {
    fn name(&self) -> &str {
        "value-length"
    }
    fn description(&self) -> &str {
        "A testkit:Echo's `value` has at least 3 characters."
    }
    fn check_resource(&self, resource: &PolicyResource) -> Vec<Violation> {
        if resource.ty != "testkit:Echo" {
            return Vec::new();
        }
        match resource.inputs.get("value").and_then(Value::as_str) {
            Some(value) if value.chars().count() < 3 => {
                vec![Violation::new(format!("`{value}` is a short value")).at("value")]
            }
            _ => Vec::new(),
        }
    }
    fn check_stack(&self, resources: &[PolicyResource]) -> Vec<Violation> {
        let echoes = resources.iter().filter(|r| r.ty == "testkit:Echo").count();
        vec![Violation::new(format!("the stack holds {echoes} echoes"))]
    }
}

/// `hostile`: attacks the host as its configuration says.
#[derive(Default)]
struct Hostile {
    config: serde_json::Value,
}

impl Policy for Hostile {
    fn name(&self) -> &str {
        "hostile"
    }
    fn description(&self) -> &str {
        "Attacks the host as its `mode` says."
    }
    fn configure(&mut self, config: serde_json::Value) -> Result<(), String> {
        self.config = config;
        Ok(())
    }
    fn check_resource(&self, resource: &PolicyResource) -> Vec<Violation> {
        let text = |key: &str| self.config.get(key).and_then(|v| v.as_str()).unwrap_or("");
        let report = |what: String| vec![Violation::new(what)];
        match text("mode") {
            "loop" => spin(),
            "trap" => panic!("the hostile policy gives up"),
            "allocate" => hoard(),
            "open-file" => report(match std::fs::read_to_string(text("path")) {
                Ok(content) => format!("read the file: {content}"),
                Err(e) => format!("could not read the file: {e}"),
            }),
            "socket" => report(match std::net::TcpStream::connect(text("address")) {
                Ok(_) => "connected".to_owned(),
                Err(e) => format!("could not connect: {e}"),
            }),
            "leak" => {
                let secrets: Vec<String> = (resource.inputs.values())
                    .filter_map(|v| match v {
                        Value::Secret(inner) => inner.as_str().map(str::to_owned),
                        _ => None,
                    })
                    .collect();
                report(format!("the secrets are: {}", secrets.join(", ")))
            }
            _ => Vec::new(),
        }
    }
}

fn spin() -> ! {
    let mut n: u64 = 0;
    loop {
        n = black_box(n.wrapping_add(1));
    }
}

/// Allocates 1 MiB blocks and keeps them all, until the allocator fails.
fn hoard() -> ! {
    let mut blocks: Vec<Vec<u8>> = Vec::new();
    loop {
        blocks.push(black_box(vec![1u8; 1 << 20]));
    }
}

//! `shapes`: one resource type, `shapes:Firewall`, whose inputs and outputs use every kind of
//! property type, and a function, `shapes:portsOf`. It keeps nothing anywhere: the outputs are
//! computed from the inputs, so tests can tell that each value crossed intact.

use std::collections::BTreeMap;

use plinth_sdk::{
    Created, FunctionSchema, PropertyMap, Provider, ProviderError, ReadResult, ResourceContext,
    ResourceSchema, ResourceType, Secret, Type, Typed, TypedResource, Value, from_value,
    properties_of, to_value,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Default)]
struct Shapes;

impl Provider for Shapes {
    fn name(&self) -> &str {
        "shapes"
    }

    fn version(&self) -> &str {
        env!("CARGO_PKG_VERSION")
    }

    fn resource_types(&self) -> Vec<Box<dyn ResourceType>> {
        vec![Box::new(Typed(Firewall))]
    }

    fn functions(&self) -> Vec<FunctionSchema> {
        let mut function = FunctionSchema::new("shapes:portsOf")
            .describe("The ports of some rules, in order.")
            .returns(Type::Array(Box::new(Type::Integer)));
        function.inputs = properties_of::<PortsOfArgs>();
        vec![function]
    }

    fn invoke(&self, token: &str, args: PropertyMap) -> Result<Value, ProviderError> {
        if token != "shapes:portsOf" {
            return Err(ProviderError::UnknownType(token.to_owned()));
        }
        let args: PortsOfArgs = from_value(Value::Object(args))
            .map_err(|e| ProviderError::invalid("rules", e.to_string()))?;
        let ports: Vec<u16> = args.rules.iter().map(|r| r.port).collect();
        Ok(to_value(&ports)?)
    }
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct PortsOfArgs {
    rules: Vec<Rule>,
}

/// A rule of a firewall.
#[derive(Clone, Serialize, Deserialize, JsonSchema)]
struct Rule {
    /// The port it opens.
    port: u16,
    protocol: Protocol,
    /// A pattern of sources (`match` is a Rust keyword).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    r#match: Option<String>,
}

#[derive(Clone, Copy, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Protocol {
    Tcp,
    Udp,
}

/// What the firewall does with what no rule matches.
#[derive(Clone, Copy, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
enum Policy {
    AllowAll,
    DenyAll,
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct FirewallInputs {
    /// The rules, in order.
    rules: Vec<Rule>,
    /// Named after a keyword: `type`.
    r#type: Policy,
    #[serde(default)]
    labels: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    token: Option<Secret<String>>,
    /// Anything at all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    extra: Option<Value>,
    #[serde(default)]
    weight: f64,
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct FirewallOutputs {
    rules: Vec<Rule>,
    r#type: Policy,
    labels: BTreeMap<String, String>,
    /// The first rule, or none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    first: Option<Rule>,
    rule_count: i64,
    /// The token, reversed: a secret.
    fingerprint: Secret<String>,
    weight: f64,
}

struct Firewall;

impl TypedResource for Firewall {
    type Inputs = FirewallInputs;
    type Outputs = FirewallOutputs;

    fn schema(&self) -> ResourceSchema {
        ResourceSchema::derive::<Self>("shapes:Firewall").describe("Rules, computed on.")
    }

    fn create(
        &self,
        ctx: &ResourceContext<'_>,
        inputs: FirewallInputs,
    ) -> Result<Created<FirewallOutputs>, ProviderError> {
        let token = inputs.token.as_ref().map_or("", |t| t.expose().as_str());
        Ok(Created {
            id: ctx.name().to_owned(),
            outputs: FirewallOutputs {
                first: inputs.rules.first().cloned(),
                rule_count: inputs.rules.len() as i64,
                fingerprint: Secret::new(token.chars().rev().collect()),
                rules: inputs.rules,
                r#type: inputs.r#type,
                labels: inputs.labels,
                weight: inputs.weight,
            },
        })
    }

    /// Imports the firewall its id describes: the id is its inputs as JSON, so that a test can
    /// import any inputs at all (`plinth import`); its `token` is reversed, so that the secret's
    /// plaintext is in no id.
    fn import(
        &self,
        ctx: &ResourceContext<'_>,
        id: String,
    ) -> Result<Option<ReadResult<FirewallInputs, FirewallOutputs>>, ProviderError> {
        let parse = || {
            let mut json: serde_json::Value = serde_json::from_str(&id).map_err(|e| {
                ProviderError::failed(format!("the id is no firewall's inputs as JSON: {e}"))
            })?;
            if let Some(token) = json.get_mut("token")
                && let Some(reversed) = token.as_str()
            {
                *token = reversed.chars().rev().collect::<String>().into();
            }
            serde_json::from_value::<FirewallInputs>(json).map_err(|e| {
                ProviderError::failed(format!("the id is no firewall's inputs as JSON: {e}"))
            })
        };
        let outputs = self.create(ctx, parse()?)?.outputs;
        Ok(Some(ReadResult {
            inputs: parse()?,
            outputs,
            id,
        }))
    }
}

plinth_sdk::export_provider!(Shapes);

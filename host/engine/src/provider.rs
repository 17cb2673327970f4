//! The engine's view of a resource provider. The runtime implements it over Wasm components;
//! tests implement it in process.

use std::sync::Arc;

use async_trait::async_trait;

pub use crate::schema::{FunctionSchema, ObjectType, PropertySchema, PropertyType, ResourceSchema};
use crate::shown::escape_controls;
use crate::urn::Urn;
use crate::value::{PropertyMap, Value};

/// A problem with one input or configuration property.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckFailure {
    /// The property at fault; empty when the failure concerns the whole input.
    pub property: String,
    pub reason: String,
}

/// Why a provider call failed. What the plugin wrote shows escaped ([`escape_controls`]), on one
/// line: a message cannot move the cursor or start a line of its own in plinth's output. A
/// `Failed` message is escaped where the plugin's text enters it (the runtime's conversion),
/// since plinth's own failures (a grant refused, with the lines to add) keep their lines.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ProviderError {
    #[error("invalid inputs: {}", format_failures(.0))]
    Invalid(Vec<CheckFailure>),
    #[error("unknown resource type or function `{}`", escape_controls(.0))]
    UnknownType(String),
    #[error("the resource does not exist")]
    NotFound,
    #[error("created, but failed to initialize: {}", escape_controls(&.0.reasons.join("; ")))]
    PartiallyCreated(PartialState),
    #[error("{0}")]
    Failed(String),
    /// The plugin itself broke: it trapped, panicked, ran out of time or memory.
    #[error("plugin crashed: {0}")]
    Crashed(String),
}

fn format_failures(failures: &[CheckFailure]) -> String {
    let joined = failures
        .iter()
        .map(|f| {
            if f.property.is_empty() {
                f.reason.clone()
            } else {
                format!("{}: {}", f.property, f.reason)
            }
        })
        .collect::<Vec<_>>()
        .join("; ");
    escape_controls(&joined).into_owned()
}

/// The state of a resource that was created but failed to initialize.
#[derive(Debug, Clone)]
pub struct PartialState {
    pub id: String,
    pub outputs: PropertyMap,
    pub reasons: Vec<String>,
}

/// The result of `check`.
#[derive(Debug, Clone)]
pub struct CheckResult {
    pub inputs: PropertyMap,
    pub failures: Vec<CheckFailure>,
}

/// The result of `diff`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DiffResult {
    /// Top-level properties whose change requires an update or replacement.
    pub changed: Vec<String>,
    /// The subset of `changed` that requires a replacement.
    pub replaces: Vec<String>,
    pub delete_before_replace: bool,
}

#[derive(Debug, Clone)]
pub struct Created {
    pub id: String,
    pub outputs: PropertyMap,
}

#[derive(Debug, Clone)]
pub struct ReadResult {
    pub id: String,
    pub inputs: PropertyMap,
    pub outputs: PropertyMap,
}

/// Who a provider is and what it manages.
#[derive(Debug, Clone, Default)]
pub struct ProviderInfo {
    pub name: String,
    pub version: String,
    /// What the provider is, for documentation.
    pub description: String,
    /// The provider's configuration properties; a change to one marked `replace_on_change`
    /// replaces every resource the provider manages.
    pub config: Vec<PropertySchema>,
    pub resources: Vec<ResourceSchema>,
    pub functions: Vec<FunctionSchema>,
}

impl ProviderInfo {
    /// Why `ty` is not a resource type of this provider, naming the closest one and every one
    /// it offers; `None` if it is one, or if the provider declares none (it decides at `check`).
    pub fn unknown_resource_type(&self, ty: &str) -> Option<String> {
        if self.resources.is_empty() || self.resources.iter().any(|r| r.token == ty) {
            return None;
        }
        let tokens: Vec<&str> = self.resources.iter().map(|r| r.token.as_str()).collect();
        // Compared without the package, which every token shares.
        let name = |token: &str| token.rsplit(':').next().unwrap_or(token).to_lowercase();
        let closest = (tokens.iter())
            .map(|t| (strsim::jaro_winkler(&name(t), &name(ty)), *t))
            .filter(|(score, _)| *score >= 0.8)
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, t)| format!("; did you mean {t}?"))
            .unwrap_or_else(|| ".".to_owned());
        Some(format!(
            "unknown resource type {ty}{closest} The provider {} offers: {}",
            self.name,
            tokens.join(", ")
        ))
    }
}

/// The operations of a resource provider. Calls may run concurrently.
#[async_trait]
pub trait Provider: Send + Sync {
    fn info(&self) -> &ProviderInfo;
    async fn check_config(&self, config: &PropertyMap) -> Result<CheckResult, ProviderError>;
    async fn configure(&self, config: &PropertyMap) -> Result<(), ProviderError>;
    async fn check(
        &self,
        urn: &Urn,
        olds: Option<&PropertyMap>,
        news: &PropertyMap,
    ) -> Result<CheckResult, ProviderError>;
    async fn diff(
        &self,
        urn: &Urn,
        id: &str,
        old_inputs: &PropertyMap,
        old_outputs: &PropertyMap,
        new_inputs: &PropertyMap,
    ) -> Result<DiffResult, ProviderError>;
    async fn create(
        &self,
        urn: &Urn,
        inputs: &PropertyMap,
        preview: bool,
    ) -> Result<Created, ProviderError>;
    /// `None` means the resource is gone.
    async fn read(
        &self,
        urn: &Urn,
        id: &str,
        inputs: &PropertyMap,
        outputs: &PropertyMap,
    ) -> Result<Option<ReadResult>, ProviderError>;
    async fn update(
        &self,
        urn: &Urn,
        id: &str,
        old_inputs: &PropertyMap,
        old_outputs: &PropertyMap,
        new_inputs: &PropertyMap,
        preview: bool,
    ) -> Result<PropertyMap, ProviderError>;
    async fn delete(
        &self,
        urn: &Urn,
        id: &str,
        inputs: &PropertyMap,
        outputs: &PropertyMap,
    ) -> Result<(), ProviderError>;
    async fn invoke(&self, token: &str, args: &PropertyMap) -> Result<Value, ProviderError>;
}

/// Why a provider could not be made available.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct LoadError(pub String);

/// Supplies configured providers by package name (`random` for `random:RandomPet`).
#[async_trait]
pub trait ProviderSource: Send + Sync {
    /// The package's provider configured from the stack's configuration.
    async fn provider(&self, package: &str) -> Result<Arc<dyn Provider>, LoadError>;
    /// The package's provider configured with `config` (a provider resource's): one instance
    /// per distinct configuration.
    async fn configured(
        &self,
        package: &str,
        config: &PropertyMap,
    ) -> Result<Arc<dyn Provider>, LoadError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kv() -> ProviderInfo {
        let resource = |token: &str| ResourceSchema {
            token: token.into(),
            ..ResourceSchema::default()
        };
        ProviderInfo {
            name: "kv".into(),
            resources: vec![resource("kv:Entry"), resource("kv:Other")],
            ..ProviderInfo::default()
        }
    }

    #[test]
    fn an_unknown_type_names_the_closest_and_every_offered_one() {
        assert_eq!(kv().unknown_resource_type("kv:Entry"), None);
        assert_eq!(
            kv().unknown_resource_type("kv:Entyr").as_deref(),
            Some(
                "unknown resource type kv:Entyr; did you mean kv:Entry? The provider kv offers: kv:Entry, kv:Other"
            )
        );
        assert_eq!(
            kv().unknown_resource_type("kv:Zebra").as_deref(),
            Some("unknown resource type kv:Zebra. The provider kv offers: kv:Entry, kv:Other")
        );
        // A provider that declares no types decides for itself.
        assert_eq!(
            ProviderInfo::default().unknown_resource_type("kv:Any"),
            None
        );
    }
}

//! Converts what a provider built against `plinth:plugin@0.1.0` returns into the current
//! version's types, so that the rest of the host speaks one version. The value types are shared
//! by every version already (see [`crate::bindings`]); only the provider interface's own records
//! and variants are converted here, field by field.

use crate::bindings::types;
use crate::bindings::v0_1::provider::exports::plinth::plugin::provider as old;
use crate::bindings::v0_2::provider::exports::plinth::plugin::provider as current;

/// A value of an older version's types, converted into the current version's.
pub(crate) trait Upgrade {
    type Current;
    fn upgrade(self) -> Self::Current;
}

impl<T: Upgrade> Upgrade for Vec<T> {
    type Current = Vec<T::Current>;
    fn upgrade(self) -> Self::Current {
        self.into_iter().map(Upgrade::upgrade).collect()
    }
}

impl<T: Upgrade> Upgrade for Option<T> {
    type Current = Option<T::Current>;
    fn upgrade(self) -> Self::Current {
        self.map(Upgrade::upgrade)
    }
}

impl<T: Upgrade, E: Upgrade> Upgrade for Result<T, E> {
    type Current = Result<T::Current, E::Current>;
    fn upgrade(self) -> Self::Current {
        self.map(Upgrade::upgrade).map_err(Upgrade::upgrade)
    }
}

/// Types every version shares: nothing to convert.
macro_rules! unchanged {
    ($($ty:ty),* $(,)?) => {
        $(impl Upgrade for $ty {
            type Current = $ty;
            fn upgrade(self) -> $ty {
                self
            }
        })*
    };
}

unchanged!((), bool, String, types::Value, types::CheckFailure);

/// Records with the same fields in the old and the current version.
macro_rules! same_fields {
    ($($record:ident { $($field:ident),* $(,)? })*) => {
        $(impl Upgrade for old::$record {
            type Current = current::$record;
            fn upgrade(self) -> current::$record {
                current::$record {
                    $($field: self.$field.upgrade()),*
                }
            }
        })*
    };
}

same_fields! {
    PropertySchema { name, description, required, secret, replace_on_change }
    ResourceSchema { token, description, inputs, outputs }
    PartialState { id, outputs, reasons }
    CheckResult { inputs, failures }
    DiffResult { changed, replaces, delete_before_replace }
    Created { id, outputs }
    ReadResult { id, inputs, outputs }
}

impl Upgrade for old::ProviderError {
    type Current = current::ProviderError;
    fn upgrade(self) -> current::ProviderError {
        match self {
            old::ProviderError::Invalid(failures) => current::ProviderError::Invalid(failures),
            old::ProviderError::UnknownType(token) => current::ProviderError::UnknownType(token),
            old::ProviderError::NotFound => current::ProviderError::NotFound,
            old::ProviderError::PartiallyCreated(partial) => {
                current::ProviderError::PartiallyCreated(partial.upgrade())
            }
            old::ProviderError::Failed(message) => current::ProviderError::Failed(message),
        }
    }
}

/// 0.1 had no capabilities: a 0.1 provider asks for nothing.
impl Upgrade for old::PluginInfo {
    type Current = current::PluginInfo;
    fn upgrade(self) -> current::PluginInfo {
        current::PluginInfo {
            name: self.name,
            version: self.version,
            capabilities: current::Capabilities {
                dirs: Vec::new(),
                env: Vec::new(),
                tcp: Vec::new(),
                udp: Vec::new(),
                http: Vec::new(),
            },
            config: Vec::new(),
            resources: self.resources.upgrade(),
            functions: self.functions,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plugin_info_keeps_its_schemas_and_asks_for_nothing() {
        let info = old::PluginInfo {
            name: "legacy".into(),
            version: "0.1.0".into(),
            resources: vec![old::ResourceSchema {
                token: "legacy:Thing".into(),
                description: "A thing.".into(),
                inputs: vec![old::PropertySchema {
                    name: "size".into(),
                    description: String::new(),
                    required: true,
                    secret: false,
                    replace_on_change: true,
                }],
                outputs: Vec::new(),
            }],
            functions: vec!["legacy:f".into()],
        };
        let info = info.upgrade();
        assert_eq!(
            (info.name.as_str(), info.version.as_str()),
            ("legacy", "0.1.0")
        );
        assert!(info.capabilities.dirs.is_empty() && info.capabilities.env.is_empty());
        let input = &info.resources[0].inputs[0];
        assert!(input.required && input.replace_on_change && !input.secret);
        assert_eq!(info.functions, ["legacy:f"]);
    }

    #[test]
    fn errors_keep_their_case_and_payload() {
        let value = types::Value {
            nodes: vec![types::Node::Null],
        };
        let partial: Result<(), _> = Err(old::ProviderError::PartiallyCreated(old::PartialState {
            id: "p".into(),
            outputs: value.clone(),
            reasons: vec!["half".into()],
        }));
        assert_eq!(
            partial.upgrade(),
            Err(current::ProviderError::PartiallyCreated(
                current::PartialState {
                    id: "p".into(),
                    outputs: value,
                    reasons: vec!["half".into()],
                }
            ))
        );
        let missing: Result<Option<old::ReadResult>, _> = Err(old::ProviderError::NotFound);
        assert_eq!(missing.upgrade(), Err(current::ProviderError::NotFound));
    }
}

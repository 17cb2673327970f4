//! Converts between the types of the versions of `plinth:plugin`, so that the rest of the host
//! speaks the current one (0.3).
//!
//! - Up, what an older guest returns or sends: its records field by field, its values node by
//!   node (a number stays a number: an older guest has only floats), its untyped property schemas
//!   as properties of type `any`, its function tokens as untyped functions; a 0.1 provider asks
//!   for nothing and describes no configuration.
//! - Down, what the host sends an older guest: values node by node, an integer as the float it
//!   would have been (exact up to 2^53).

use crate::abi::bindings::v0_3::provider::exports::plinth::plugin::provider as current;
use crate::abi::bindings::v0_3::provider::plinth::plugin::schema;
use crate::abi::bindings::{legacy_types as old_types, types};

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

unchanged!((), bool, String);

impl Upgrade for old_types::Value {
    type Current = types::Value;
    fn upgrade(self) -> types::Value {
        types::Value {
            nodes: self.nodes.into_iter().map(node_up).collect(),
        }
    }
}

impl Upgrade for old_types::CheckFailure {
    type Current = types::CheckFailure;
    fn upgrade(self) -> types::CheckFailure {
        types::CheckFailure {
            property: self.property,
            reason: self.reason,
        }
    }
}

fn node_up(node: old_types::Node) -> types::Node {
    use old_types::Node as Old;
    use types::Node as New;
    match node {
        Old::Null => New::Null,
        Old::Boolean(b) => New::Boolean(b),
        Old::Number(n) => New::Number(n),
        Old::Text(s) => New::Text(s),
        Old::Array(children) => New::Array(children),
        Old::Object(entries) => New::Object(entries),
        Old::Secret(child) => New::Secret(child),
        Old::Unknown => New::Unknown,
        Old::Output(r) => New::Output(types::OutputRef {
            handle: r.handle,
            field: match r.field {
                old_types::OutputField::Property(path) => types::OutputField::Property(path),
                old_types::OutputField::Id => types::OutputField::Id,
                old_types::OutputField::Urn => types::OutputField::Urn,
            },
        }),
    }
}

/// `value` for a guest built against 0.1 or 0.2.
pub(crate) fn downgrade(value: &types::Value) -> old_types::Value {
    old_types::Value {
        nodes: value.nodes.iter().map(node_down).collect(),
    }
}

fn node_down(node: &types::Node) -> old_types::Node {
    use old_types::Node as Old;
    use types::Node as New;
    match node {
        New::Null => Old::Null,
        New::Boolean(b) => Old::Boolean(*b),
        New::Integer(n) => Old::Number(*n as f64),
        New::Number(n) => Old::Number(*n),
        New::Text(s) => Old::Text(s.clone()),
        New::Array(children) => Old::Array(children.clone()),
        New::Object(entries) => Old::Object(entries.clone()),
        New::Secret(child) => Old::Secret(*child),
        New::Unknown => Old::Unknown,
        New::Output(r) => Old::Output(old_types::OutputRef {
            handle: r.handle,
            field: match &r.field {
                types::OutputField::Property(path) => {
                    old_types::OutputField::Property(path.clone())
                }
                types::OutputField::Id => old_types::OutputField::Id,
                types::OutputField::Urn => old_types::OutputField::Urn,
            },
        }),
    }
}

/// A type tree of one node: `any`, what an untyped schema says.
fn any_type() -> schema::TypeTree {
    schema::TypeTree {
        nodes: vec![schema::TypeNode::Any],
    }
}

/// Records of the module `$old` with the same fields as the current version's.
macro_rules! same_fields {
    ($old:ident; $($old_record:ident => $record:path { $($field:ident),* $(,)? })*) => {
        $(impl Upgrade for $old::$old_record {
            type Current = $record;
            fn upgrade(self) -> $record {
                $record {
                    $($field: self.$field.upgrade()),*
                }
            }
        })*
    };
}

/// The conversions of a provider interface before 0.3 (`$old`), whose records differ from the
/// current ones only in `plugin-info` and the untyped schemas.
macro_rules! provider_upgrades {
    ($old:path) => {
        use $old as old;

        use super::{Upgrade, any_type, current, schema};

        same_fields! {
            old;
            ResourceSchema => schema::ResourceSchema { token, description, inputs, outputs }
            PartialState => current::PartialState { id, outputs, reasons }
            CheckResult => current::CheckResult { inputs, failures }
            DiffResult => current::DiffResult { changed, replaces, delete_before_replace }
            Created => current::Created { id, outputs }
            ReadResult => current::ReadResult { id, inputs, outputs }
        }

        /// An untyped property: of type `any`, without a default.
        impl Upgrade for old::PropertySchema {
            type Current = schema::PropertySchema;
            fn upgrade(self) -> schema::PropertySchema {
                schema::PropertySchema {
                    name: self.name,
                    description: self.description,
                    required: self.required,
                    secret: self.secret,
                    replace_on_change: self.replace_on_change,
                    type_: any_type(),
                    default: None,
                }
            }
        }

        impl Upgrade for old::ProviderError {
            type Current = current::ProviderError;
            fn upgrade(self) -> current::ProviderError {
                match self {
                    old::ProviderError::Invalid(failures) => {
                        current::ProviderError::Invalid(failures.upgrade())
                    }
                    old::ProviderError::UnknownType(token) => {
                        current::ProviderError::UnknownType(token)
                    }
                    old::ProviderError::NotFound => current::ProviderError::NotFound,
                    old::ProviderError::PartiallyCreated(partial) => {
                        current::ProviderError::PartiallyCreated(partial.upgrade())
                    }
                    old::ProviderError::Failed(message) => current::ProviderError::Failed(message),
                }
            }
        }

        /// A function known by its token only: untyped arguments and result.
        fn untyped_function(token: String) -> schema::FunctionSchema {
            schema::FunctionSchema {
                token,
                description: String::new(),
                inputs: Vec::new(),
                output: any_type(),
            }
        }
    };
}

/// From 0.2, whose provider declares its capabilities and configuration.
mod from_0_2 {
    provider_upgrades!(crate::abi::bindings::v0_2::provider::exports::plinth::plugin::provider);

    impl Upgrade for old::PluginInfo {
        type Current = current::PluginInfo;
        fn upgrade(self) -> current::PluginInfo {
            let asked = self.capabilities;
            current::PluginInfo {
                name: self.name,
                version: self.version,
                capabilities: current::Capabilities {
                    dirs: asked
                        .dirs
                        .into_iter()
                        .map(|d| current::DirRequest {
                            guest: d.guest,
                            write: d.write,
                            why: d.why,
                        })
                        .collect(),
                    env: asked.env,
                    tcp: asked.tcp,
                    udp: asked.udp,
                    http: asked.http,
                },
                description: String::new(),
                config: self.config.upgrade(),
                resources: self.resources.upgrade(),
                functions: self.functions.into_iter().map(untyped_function).collect(),
            }
        }
    }
}

/// From 0.1, which had no capabilities: a 0.1 provider asks for nothing.
mod from_0_1 {
    provider_upgrades!(crate::abi::bindings::v0_1::provider::exports::plinth::plugin::provider);

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
                description: String::new(),
                config: Vec::new(),
                resources: self.resources.upgrade(),
                functions: self.functions.into_iter().map(untyped_function).collect(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::bindings::v0_1::provider::exports::plinth::plugin::provider as v0_1;
    use crate::abi::bindings::v0_2::provider::exports::plinth::plugin::provider as v0_2;

    #[test]
    fn a_0_1_plugin_info_keeps_its_schemas_untyped_and_asks_for_nothing() {
        let info = v0_1::PluginInfo {
            name: "legacy".into(),
            version: "0.1.0".into(),
            resources: vec![v0_1::ResourceSchema {
                token: "legacy:Thing".into(),
                description: "A thing.".into(),
                inputs: vec![v0_1::PropertySchema {
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
        assert_eq!(input.type_.nodes, [schema::TypeNode::Any]);
        assert_eq!(input.default, None);
        assert_eq!(info.functions[0].token, "legacy:f");
        assert_eq!(info.functions[0].output.nodes, [schema::TypeNode::Any]);
    }

    #[test]
    fn a_0_2_plugin_info_keeps_its_capabilities_and_config() {
        let info = v0_2::PluginInfo {
            name: "notes".into(),
            version: "0.2.0".into(),
            capabilities: v0_2::Capabilities {
                dirs: vec![v0_2::DirRequest {
                    guest: "/notes".into(),
                    write: true,
                    why: "notes".into(),
                }],
                env: vec!["TOKEN".into()],
                tcp: Vec::new(),
                udp: Vec::new(),
                http: vec!["api.example.com".into()],
            },
            config: vec![v0_2::PropertySchema {
                name: "region".into(),
                description: "Where.".into(),
                required: false,
                secret: false,
                replace_on_change: true,
            }],
            resources: Vec::new(),
            functions: Vec::new(),
        };
        let info = info.upgrade();
        assert_eq!(info.capabilities.dirs[0].guest, "/notes");
        assert!(info.capabilities.dirs[0].write);
        assert_eq!(info.capabilities.env, ["TOKEN"]);
        assert_eq!(info.capabilities.http, ["api.example.com"]);
        assert_eq!(info.config[0].name, "region");
        assert!(info.config[0].replace_on_change);
        assert_eq!(info.config[0].type_.nodes, [schema::TypeNode::Any]);
    }

    #[test]
    fn errors_keep_their_case_and_payload() {
        let value = old_types::Value {
            nodes: vec![old_types::Node::Number(2.0)],
        };
        let partial: Result<(), _> =
            Err(v0_2::ProviderError::PartiallyCreated(v0_2::PartialState {
                id: "p".into(),
                outputs: value.clone(),
                reasons: vec!["half".into()],
            }));
        assert_eq!(
            partial.upgrade(),
            Err(current::ProviderError::PartiallyCreated(
                current::PartialState {
                    id: "p".into(),
                    outputs: types::Value {
                        nodes: vec![types::Node::Number(2.0)]
                    },
                    reasons: vec!["half".into()],
                }
            ))
        );
        let missing: Result<Option<v0_1::ReadResult>, _> = Err(v0_1::ProviderError::NotFound);
        assert_eq!(missing.upgrade(), Err(current::ProviderError::NotFound));
    }

    #[test]
    fn integers_go_down_as_floats_and_floats_come_up_as_numbers() {
        let value = types::Value {
            nodes: vec![
                types::Node::Array(vec![1, 2, 3]),
                types::Node::Integer(8402),
                types::Node::Secret(4),
                types::Node::Output(types::OutputRef {
                    handle: 3,
                    field: types::OutputField::Property(vec!["a".into()]),
                }),
                types::Node::Number(0.5),
            ],
        };
        let old = downgrade(&value);
        assert_eq!(old.nodes[1], old_types::Node::Number(8402.0));
        assert_eq!(old.nodes[2], old_types::Node::Secret(4));
        let back = old.upgrade();
        assert_eq!(back.nodes[1], types::Node::Number(8402.0));
        assert_eq!(back.nodes[3], value.nodes[3]);
        assert_eq!(back.nodes[4], types::Node::Number(0.5));
    }
}

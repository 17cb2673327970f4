//! The glue between the generated `provider` interface and a [`Provider`]: one provider instance
//! per component instance, calls dispatched to resource types by the token in the URN.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::marker::PhantomData;

use super::bindings::exports::plinth::hints::provider_hints as wit_hints;
use super::bindings::exports::plinth::inputs::write_only as wit_write_only;
use super::bindings::exports::plinth::plugin::provider as wit;
use super::bindings::plinth::plugin::schema as wit_schema;
use super::{
    Capabilities, Checked, Created, Diff, DirRequest, FunctionSchema, PropertySchema, Provider,
    ProviderError, ReadResult, ResourceContext, ResourceSchema, ResourceType, Type, Urn,
};
use crate::value::nodes::{decode_map, encode, encode_map};
use crate::wire;

/// Implements the generated `Guest` trait for the provider `P`; named by `export_provider!`.
pub struct ProviderExport<P>(PhantomData<P>);

/// A resource type with its schema, computed once.
struct Registered {
    schema: ResourceSchema,
    imp: Box<dyn ResourceType>,
}

/// The provider and its resource types, indexed by token.
struct Runtime {
    provider: Box<dyn Provider>,
    types: BTreeMap<String, Registered>,
}

thread_local! {
    static RUNTIME: RefCell<Option<Runtime>> = const { RefCell::new(None) };
}

impl Runtime {
    fn new(provider: Box<dyn Provider>) -> Runtime {
        let mut runtime = Runtime {
            provider,
            types: BTreeMap::new(),
        };
        runtime.index_types();
        runtime
    }

    fn index_types(&mut self) {
        self.types = self
            .provider
            .resource_types()
            .into_iter()
            .map(|imp| {
                let schema = imp.schema();
                (schema.token.clone(), Registered { schema, imp })
            })
            .collect();
    }

    /// The context and implementation for the resource `urn` names.
    fn resource(
        &self,
        urn: String,
        preview: bool,
    ) -> Result<(ResourceContext<'_>, &dyn ResourceType), ProviderError> {
        let urn = Urn::parse(urn)?;
        let registered = self
            .types
            .get(urn.type_token())
            .ok_or_else(|| ProviderError::UnknownType(urn.type_token().to_owned()))?;
        Ok((
            ResourceContext::new(urn, &registered.schema, preview),
            registered.imp.as_ref(),
        ))
    }

    fn info(&self) -> wit::PluginInfo {
        wit::PluginInfo {
            name: self.provider.name().to_owned(),
            version: self.provider.version().to_owned(),
            capabilities: capabilities_to_wit(self.provider.capabilities()),
            description: self.provider.description().to_owned(),
            config: properties_to_wit(&self.provider.config_schema()),
            resources: self
                .types
                .values()
                .map(|r| schema_to_wit(&r.schema))
                .collect(),
            functions: (self.provider.functions().iter())
                .map(function_to_wit)
                .collect(),
        }
    }
}

/// Runs `f` on the runtime, creating it on first use.
fn with_runtime<P: Provider + Default, T>(f: impl FnOnce(&mut Runtime) -> T) -> T {
    RUNTIME
        .with_borrow_mut(|slot| f(slot.get_or_insert_with(|| Runtime::new(Box::new(P::default())))))
}

/// Runs a fallible call on the runtime and converts its error for the host.
fn call<P: Provider + Default, T>(
    f: impl FnOnce(&mut Runtime) -> Result<T, ProviderError>,
) -> Result<T, wit::ProviderError> {
    with_runtime::<P, _>(f).map_err(error_to_wit)
}

impl<P: Provider + Default> wit::Guest for ProviderExport<P> {
    fn info() -> wit::PluginInfo {
        with_runtime::<P, _>(|rt| rt.info())
    }

    fn check_config(config: wire::Value) -> Result<wit::CheckResult, wit::ProviderError> {
        call::<P, _>(|rt| {
            Ok(checked_to_wit(
                rt.provider.check_config(decode_map(config)?)?,
            ))
        })
    }

    fn configure(config: wire::Value) -> Result<(), wit::ProviderError> {
        call::<P, _>(|rt| {
            rt.provider.configure(decode_map(config)?)?;
            rt.index_types();
            Ok(())
        })
    }

    fn check(
        urn: String,
        olds: Option<wire::Value>,
        news: wire::Value,
    ) -> Result<wit::CheckResult, wit::ProviderError> {
        call::<P, _>(|rt| {
            let (ctx, imp) = rt.resource(urn, false)?;
            let olds = olds.map(decode_map).transpose()?;
            let checked = imp.check(&ctx, olds.as_ref(), decode_map(news)?)?;
            Ok(checked_to_wit(checked))
        })
    }

    fn diff(
        urn: String,
        id: String,
        old_inputs: wire::Value,
        old_outputs: wire::Value,
        new_inputs: wire::Value,
    ) -> Result<wit::DiffResult, wit::ProviderError> {
        call::<P, _>(|rt| {
            let (ctx, imp) = rt.resource(urn, false)?;
            let Diff {
                changed,
                replaces,
                delete_before_replace,
            } = imp.diff(
                &ctx,
                &id,
                &decode_map(old_inputs)?,
                &decode_map(old_outputs)?,
                &decode_map(new_inputs)?,
            )?;
            Ok(wit::DiffResult {
                changed,
                replaces,
                delete_before_replace,
            })
        })
    }

    fn create(
        urn: String,
        inputs: wire::Value,
        preview: bool,
    ) -> Result<wit::Created, wit::ProviderError> {
        call::<P, _>(|rt| {
            let (ctx, imp) = rt.resource(urn, preview)?;
            let Created { id, outputs } = imp.create(&ctx, decode_map(inputs)?)?;
            Ok(wit::Created {
                id,
                outputs: encode_map(outputs),
            })
        })
    }

    fn read(
        urn: String,
        id: String,
        inputs: wire::Value,
        outputs: wire::Value,
    ) -> Result<Option<wit::ReadResult>, wit::ProviderError> {
        call::<P, _>(|rt| {
            let (ctx, imp) = rt.resource(urn, false)?;
            let read = imp.read(&ctx, id, decode_map(inputs)?, decode_map(outputs)?)?;
            Ok(read.map(
                |ReadResult {
                     id,
                     inputs,
                     outputs,
                 }| wit::ReadResult {
                    id,
                    inputs: encode_map(inputs),
                    outputs: encode_map(outputs),
                },
            ))
        })
    }

    fn update(
        urn: String,
        id: String,
        old_inputs: wire::Value,
        old_outputs: wire::Value,
        new_inputs: wire::Value,
        preview: bool,
    ) -> Result<wire::Value, wit::ProviderError> {
        call::<P, _>(|rt| {
            let (ctx, imp) = rt.resource(urn, preview)?;
            let outputs = imp.update(
                &ctx,
                &id,
                decode_map(old_inputs)?,
                decode_map(old_outputs)?,
                decode_map(new_inputs)?,
            )?;
            Ok(encode_map(outputs))
        })
    }

    fn delete(
        urn: String,
        id: String,
        inputs: wire::Value,
        outputs: wire::Value,
    ) -> Result<(), wit::ProviderError> {
        call::<P, _>(|rt| {
            let (ctx, imp) = rt.resource(urn, false)?;
            imp.delete(&ctx, &id, decode_map(inputs)?, decode_map(outputs)?)
        })
    }

    fn invoke(token: String, args: wire::Value) -> Result<wire::Value, wit::ProviderError> {
        call::<P, _>(|rt| Ok(encode(rt.provider.invoke(&token, decode_map(args)?)?)))
    }
}

impl<P: Provider + Default> wit_hints::Guest for ProviderExport<P> {
    fn equal_inputs_mean_no_change() -> Vec<String> {
        with_runtime::<P, _>(|rt| {
            (rt.types.values())
                .filter(|r| r.schema.equal_inputs_mean_no_change)
                .map(|r| r.schema.token.clone())
                .collect()
        })
    }
}

impl<P: Provider + Default> wit_write_only::Guest for ProviderExport<P> {
    fn write_only_inputs() -> Vec<wit_write_only::WriteOnlyInput> {
        with_runtime::<P, _>(|rt| {
            (rt.types.values())
                .flat_map(|r| {
                    (r.schema.inputs.iter()).filter_map(|p| {
                        Some(wit_write_only::WriteOnlyInput {
                            type_: r.schema.token.clone(),
                            name: p.name.clone(),
                            version: p.write_only_version.clone()?,
                        })
                    })
                })
                .collect()
        })
    }
}

fn properties_to_wit(list: &[PropertySchema]) -> Vec<wit_schema::PropertySchema> {
    list.iter()
        .map(|p| wit_schema::PropertySchema {
            name: p.name.clone(),
            description: p.description.clone(),
            required: p.required,
            secret: p.secret,
            replace_on_change: p.replace_on_change,
            type_: type_tree(&p.ty),
            default: p.default.clone().map(encode),
        })
        .collect()
}

fn schema_to_wit(schema: &ResourceSchema) -> wit_schema::ResourceSchema {
    wit_schema::ResourceSchema {
        token: schema.token.clone(),
        description: schema.description.clone(),
        inputs: properties_to_wit(&schema.inputs),
        outputs: properties_to_wit(&schema.outputs),
    }
}

fn function_to_wit(function: &FunctionSchema) -> wit_schema::FunctionSchema {
    wit_schema::FunctionSchema {
        token: function.token.clone(),
        description: function.description.clone(),
        inputs: properties_to_wit(&function.inputs),
        output: type_tree(&function.output),
    }
}

/// Flattens a type: `nodes[0]` is the root, parents before their children.
fn type_tree(ty: &Type) -> wit_schema::TypeTree {
    let mut nodes = Vec::new();
    push_type(ty, &mut nodes);
    wit_schema::TypeTree { nodes }
}

/// Appends `ty` and its element types; returns the index of `ty`'s node.
fn push_type(ty: &Type, nodes: &mut Vec<wit_schema::TypeNode>) -> u32 {
    use wit_schema::TypeNode as Node;
    let index = nodes.len();
    // Reserve the slot so that the parent precedes its children.
    nodes.push(Node::Any);
    let node = match ty {
        Type::Any => Node::Any,
        Type::String => Node::String,
        Type::Integer => Node::Integer,
        Type::Number => Node::Number,
        Type::Boolean => Node::Boolean,
        Type::Array(items) => Node::Array(push_type(items, nodes)),
        Type::Map(values) => Node::Map(push_type(values, nodes)),
        Type::Enum(values) => Node::Enum(values.clone()),
        Type::Object(object) => Node::Object(wit_schema::ObjectType {
            name: object.name.clone(),
            description: object.description.clone(),
            properties: (object.properties.iter())
                .map(|p| wit_schema::FieldSchema {
                    name: p.name.clone(),
                    description: p.description.clone(),
                    required: p.required,
                    secret: p.secret,
                    default: p.default.clone().map(encode),
                    type_: push_type(&p.ty, nodes),
                })
                .collect(),
        }),
    };
    nodes[index] = node;
    // A wasm32 guest cannot hold more than u32::MAX nodes.
    index as u32
}

fn capabilities_to_wit(capabilities: Capabilities) -> wit::Capabilities {
    let Capabilities {
        dirs,
        env,
        tcp,
        udp,
        http,
    } = capabilities;
    wit::Capabilities {
        dirs: dirs
            .into_iter()
            .map(|DirRequest { guest, write, why }| wit::DirRequest { guest, write, why })
            .collect(),
        env,
        tcp,
        udp,
        http,
    }
}

fn checked_to_wit(Checked { inputs, failures }: Checked) -> wit::CheckResult {
    wit::CheckResult {
        inputs: encode_map(inputs),
        failures,
    }
}

fn error_to_wit(error: ProviderError) -> wit::ProviderError {
    match error {
        ProviderError::Invalid(failures) => wit::ProviderError::Invalid(failures),
        ProviderError::UnknownType(token) => wit::ProviderError::UnknownType(token),
        ProviderError::NotFound => wit::ProviderError::NotFound,
        ProviderError::PartiallyCreated {
            id,
            outputs,
            reasons,
        } => wit::ProviderError::PartiallyCreated(wit::PartialState {
            id,
            outputs: encode_map(outputs),
            reasons,
        }),
        ProviderError::Failed(message) => wit::ProviderError::Failed(message),
    }
}

#[cfg(test)]
mod tests {
    use super::wit::Guest;
    use super::*;
    use crate::value::nodes::decode;
    use crate::{PropertyMap, PropertySchema, Value};

    /// A provider whose one type echoes its inputs, tagged with the configured `tag`.
    #[derive(Default)]
    struct Test {
        tag: String,
    }

    impl Provider for Test {
        fn name(&self) -> &str {
            "test"
        }
        fn version(&self) -> &str {
            "1.2.3"
        }
        fn capabilities(&self) -> Capabilities {
            Capabilities::new()
                .dir("/data", true, "things live there")
                .env("TOKEN")
        }
        fn resource_types(&self) -> Vec<Box<dyn ResourceType>> {
            vec![
                Box::new(Thing {
                    tag: self.tag.clone(),
                }),
                Box::new(Plain),
            ]
        }
        fn configure(&mut self, config: PropertyMap) -> Result<(), ProviderError> {
            self.tag = config
                .get("tag")
                .and_then(Value::as_str)
                .unwrap_or("")
                .into();
            Ok(())
        }
    }

    struct Thing {
        tag: String,
    }

    impl ResourceType for Thing {
        fn schema(&self) -> ResourceSchema {
            ResourceSchema::new("test:Thing")
                .input(PropertySchema::new("size").required().replace_on_change())
                .input(PropertySchema::new("label"))
                .input(PropertySchema::new("token").write_only("token_version"))
                .input(PropertySchema::new("token_version"))
                .equal_inputs_mean_no_change()
        }
        fn create(
            &self,
            ctx: &ResourceContext<'_>,
            mut inputs: PropertyMap,
        ) -> Result<Created, ProviderError> {
            if inputs.contains_key("partial") {
                return Err(ProviderError::PartiallyCreated {
                    id: "p1".into(),
                    outputs: inputs,
                    reasons: vec!["half done".into()],
                });
            }
            inputs.insert("tag".into(), self.tag.as_str().into());
            inputs.insert("name".into(), ctx.name().into());
            Ok(Created {
                id: format!("{}-{}", ctx.stack(), ctx.project()),
                outputs: inputs,
            })
        }
    }

    /// A type that states no hint.
    struct Plain;

    impl ResourceType for Plain {
        fn schema(&self) -> ResourceSchema {
            ResourceSchema::new("test:Plain")
        }
        fn create(
            &self,
            _: &ResourceContext<'_>,
            inputs: PropertyMap,
        ) -> Result<Created, ProviderError> {
            Ok(Created {
                id: "plain".into(),
                outputs: inputs,
            })
        }
    }

    type Export = ProviderExport<Test>;
    const URN: &str = "urn:plinth:dev::proj::test:Thing::a";

    fn value(entries: &[(&str, Value)]) -> wire::Value {
        encode(Value::object(entries.iter().cloned()))
    }

    #[test]
    fn info_describes_the_provider() {
        let info = Export::info();
        assert_eq!(
            (info.name.as_str(), info.version.as_str()),
            ("test", "1.2.3")
        );
        assert_eq!(info.resources.len(), 2);
        assert_eq!(info.resources[1].token, "test:Thing");
        assert!(info.resources[1].inputs[0].replace_on_change);
        let asked = info.capabilities;
        let dir = &asked.dirs[0];
        assert_eq!(
            (dir.guest.as_str(), dir.write, dir.why.as_str()),
            ("/data", true, "things live there")
        );
        assert_eq!(asked.env, vec!["TOKEN".to_owned()]);
        assert!(asked.tcp.is_empty() && asked.udp.is_empty() && asked.http.is_empty());
    }

    #[test]
    fn create_dispatches_on_the_resource_own_type() {
        let urn = "urn:plinth:dev::proj::my:Group$test:Thing::a";
        let created = Export::create(urn.into(), value(&[("size", 1.into())]), false).unwrap();
        assert_eq!(created.id, "dev-proj");
        let outputs = decode(created.outputs).unwrap();
        assert_eq!(outputs.get("name"), Some(&Value::from("a")));
    }

    #[test]
    fn configure_rebuilds_the_types() {
        Export::configure(value(&[("tag", "blue".into())])).unwrap();
        let created = Export::create(URN.into(), value(&[("size", 1.into())]), false).unwrap();
        let outputs = decode(created.outputs).unwrap();
        assert_eq!(outputs.get("tag"), Some(&Value::from("blue")));
    }

    #[test]
    fn unknown_types_and_malformed_urns_are_errors() {
        let err = Export::create("urn:plinth:dev::p::test:Nope::a".into(), value(&[]), false);
        assert!(matches!(err, Err(wit::ProviderError::UnknownType(t)) if t == "test:Nope"));
        let err = Export::delete("nope".into(), "id".into(), value(&[]), value(&[]));
        assert!(matches!(err, Err(wit::ProviderError::Failed(_))));
    }

    #[test]
    fn default_check_reports_missing_required_inputs() {
        let result = Export::check(URN.into(), None, value(&[("label", "x".into())])).unwrap();
        assert_eq!(result.failures.len(), 1);
        assert_eq!(result.failures[0].property, "size");
        let result = Export::check(URN.into(), None, value(&[("size", 2.into())])).unwrap();
        assert!(result.failures.is_empty());
    }

    #[test]
    fn hints_name_the_types_whose_equal_inputs_mean_no_change() {
        use super::wit_hints::Guest as _;
        assert_eq!(Export::equal_inputs_mean_no_change(), vec!["test:Thing"]);
    }

    #[test]
    fn write_only_inputs_are_stated_with_their_version() {
        use super::wit_write_only::Guest as _;
        let stated = Export::write_only_inputs();
        assert_eq!(stated.len(), 1);
        let input = &stated[0];
        let fields = (
            input.type_.as_str(),
            input.name.as_str(),
            input.version.as_str(),
        );
        assert_eq!(fields, ("test:Thing", "token", "token_version"));
    }

    #[test]
    fn default_diff_uses_the_schema() {
        let olds = || value(&[("size", 1.into()), ("label", "x".into())]);
        let diff = Export::diff(
            URN.into(),
            "id".into(),
            olds(),
            olds(),
            value(&[("size", 2.into()), ("label", "y".into())]),
        )
        .unwrap();
        assert_eq!(diff.changed, vec!["label", "size"]);
        assert_eq!(diff.replaces, vec!["size"]);
    }

    #[test]
    fn default_read_update_and_delete() {
        let state = || value(&[("size", 1.into())]);
        let read = Export::read(URN.into(), "id".into(), state(), state())
            .unwrap()
            .unwrap();
        assert_eq!((read.id.as_str(), read.inputs), ("id", state()));
        let err = Export::update(URN.into(), "id".into(), state(), state(), state(), false);
        assert!(
            matches!(err, Err(wit::ProviderError::Failed(m)) if m.contains("cannot be updated"))
        );
        assert!(Export::delete(URN.into(), "id".into(), state(), state()).is_ok());
    }

    #[test]
    fn partial_creation_keeps_its_state() {
        let err = Export::create(URN.into(), value(&[("partial", true.into())]), false);
        let Err(wit::ProviderError::PartiallyCreated(state)) = err else {
            panic!("expected a partial state, got {err:?}");
        };
        assert_eq!(state.id, "p1");
        assert_eq!(state.reasons, vec!["half done"]);
        assert_eq!(
            decode(state.outputs).unwrap().get("partial"),
            Some(&true.into())
        );
    }

    #[test]
    fn invoke_defaults_to_unknown_function() {
        let err = Export::invoke("test:fn".into(), value(&[]));
        assert!(matches!(err, Err(wit::ProviderError::UnknownType(t)) if t == "test:fn"));
    }
}

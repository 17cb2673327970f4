//! Typed resources: a resource type declared from Rust structs. The schema is derived from the
//! structs (with `schemars`), inputs arrive deserialized and outputs are returned as a struct;
//! [`Typed`] adapts such a resource to the untyped [`ResourceType`] the provider exports.

use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{
    CheckFailure, Checked, Created, Diff, ProviderError, ReadResult, ResourceContext,
    ResourceSchema, ResourceType, normalize_stored,
};
use crate::value::serialization::from_value_at;
use crate::{PropertyMap, Value, to_value};

/// A resource type whose inputs and outputs are Rust types.
///
/// `Inputs` and `Outputs` are structs deriving `Serialize`, `Deserialize` and
/// `schemars::JsonSchema`; the schema is derived from them ([`ResourceSchema::derive`]): field
/// types become property types, doc comments descriptions, `Option` fields and fields with a
/// serde default are optional (and the default is shown), [`Secret`](crate::Secret) fields are
/// secret, and a field marked `#[schemars(extend("x-plinth-replace-on-change" = true))]`
/// replaces the resource when it changes.
///
/// Compared with [`ResourceType`]:
/// - `check` validates the inputs against the schema, then deserializes them and calls
///   [`validate`](Self::validate) for the rules types cannot say;
/// - `create` and `update` are **never called during a preview**: the planned outputs are the
///   inputs of the same names, and unknown for the rest, unless [`plan`](Self::plan) says more;
/// - secrets stay secret: a [`Secret`](crate::Secret) output is one, and an output of the same
///   name as an input that held a secret is made one;
/// - `read` returns `Ok(None)` for a resource that is gone.
///
/// Export it by wrapping it in [`Typed`]:
///
/// ```
/// # fn main() {}
/// # #[cfg(feature = "provider")]
/// # mod example {
/// use plinth_sdk::{
///     CheckFailure, Created, Provider, ProviderError, ResourceContext, ResourceSchema,
///     ResourceType, Typed, TypedResource,
/// };
/// use schemars::JsonSchema;
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Default)]
/// struct Dice;
///
/// impl Provider for Dice {
///     fn name(&self) -> &str {
///         "dice"
///     }
///     fn version(&self) -> &str {
///         "0.1.0"
///     }
///     fn resource_types(&self) -> Vec<Box<dyn ResourceType>> {
///         vec![Box::new(Typed(Roll))]
///     }
/// }
///
/// /// What to roll.
/// #[derive(Serialize, Deserialize, JsonSchema)]
/// struct RollInputs {
///     /// The number of faces.
///     #[schemars(extend("x-plinth-replace-on-change" = true))]
///     faces: u32,
/// }
///
/// #[derive(Serialize, Deserialize, JsonSchema)]
/// struct RollOutputs {
///     faces: u32,
///     /// What came up.
///     result: u32,
/// }
///
/// struct Roll;
///
/// impl TypedResource for Roll {
///     type Inputs = RollInputs;
///     type Outputs = RollOutputs;
///
///     fn schema(&self) -> ResourceSchema {
///         ResourceSchema::derive::<Self>("dice:Roll").describe("A die, rolled once.")
///     }
///
///     fn validate(&self, _: &ResourceContext<'_>, inputs: &RollInputs) -> Vec<CheckFailure> {
///         match inputs.faces {
///             0 => vec![CheckFailure::new("faces", "a die has at least one face")],
///             _ => Vec::new(),
///         }
///     }
///
///     fn create(
///         &self,
///         ctx: &ResourceContext<'_>,
///         inputs: RollInputs,
///     ) -> Result<Created<RollOutputs>, ProviderError> {
///         let result = 1 + ctx.name().len() as u32 % inputs.faces;
///         Ok(Created {
///             id: ctx.name().to_owned(),
///             outputs: RollOutputs { faces: inputs.faces, result },
///         })
///     }
/// }
///
/// plinth_sdk::export_provider!(Dice);
/// # }
/// ```
pub trait TypedResource: 'static {
    /// The inputs, as a program gives them.
    type Inputs: Serialize + DeserializeOwned + JsonSchema;
    /// The outputs, as the provider returns them.
    type Outputs: Serialize + DeserializeOwned + JsonSchema;

    /// The type's token and properties: usually
    /// `ResourceSchema::derive::<Self>("pkg:Type").describe("...")`.
    fn schema(&self) -> ResourceSchema;

    /// Rules beyond what the types say (`min <= max`), checked once the inputs are valid and
    /// known. The default has none.
    fn validate(&self, ctx: &ResourceContext<'_>, inputs: &Self::Inputs) -> Vec<CheckFailure> {
        let _ = (ctx, inputs);
        Vec::new()
    }

    /// Tells what changed between the stored inputs and the new ones, and whether the change
    /// replaces the resource. `schema_diff` is the default answer: the properties that differ,
    /// replacing where the schema marks them replace-on-change. Override this to compare by
    /// meaning rather than by value (`"0644"` and `"644"` are one mode) or to replace on
    /// changes the schema cannot express; the default returns `schema_diff`.
    ///
    /// Called only when every new input is known: during a preview with unknown inputs, the
    /// schema's diff decides.
    fn diff(
        &self,
        ctx: &ResourceContext<'_>,
        id: &str,
        old_inputs: &Self::Inputs,
        old_outputs: &Self::Outputs,
        new_inputs: &Self::Inputs,
        schema_diff: Diff,
    ) -> Result<Diff, ProviderError> {
        let _ = (ctx, id, old_inputs, old_outputs, new_inputs);
        Ok(schema_diff)
    }

    /// Creates the resource; returns its id and outputs. Not called during a preview.
    fn create(
        &self,
        ctx: &ResourceContext<'_>,
        inputs: Self::Inputs,
    ) -> Result<Created<Self::Outputs>, ProviderError>;

    /// Reads the resource as it is now; `Ok(None)` means it is gone. The default returns the
    /// stored state unchanged.
    // Spelled out, as implementations write it.
    #[allow(clippy::type_complexity)]
    fn read(
        &self,
        ctx: &ResourceContext<'_>,
        id: String,
        inputs: Self::Inputs,
        outputs: Self::Outputs,
    ) -> Result<Option<ReadResult<Self::Inputs, Self::Outputs>>, ProviderError> {
        let _ = ctx;
        Ok(Some(ReadResult {
            id,
            inputs,
            outputs,
        }))
    }

    /// Reads an existing resource by its id alone, with nothing stored for it (`plinth
    /// import`, or a program's `import` option): its inputs as a program would declare them,
    /// and its outputs; `Ok(None)` means no resource has that id. Called by `read` when no
    /// outputs are stored and the stored inputs or outputs do not read as the types'. The
    /// default refuses: the type can be read back only from its stored state.
    #[allow(clippy::type_complexity)]
    fn import(
        &self,
        ctx: &ResourceContext<'_>,
        id: String,
    ) -> Result<Option<ReadResult<Self::Inputs, Self::Outputs>>, ProviderError> {
        let _ = id;
        Err(ProviderError::Failed(format!(
            "`{}` cannot be imported: its provider reads one back only from its stored state",
            ctx.type_token()
        )))
    }

    /// Updates the resource in place; returns its new outputs. Not called during a preview. The
    /// default fails: the type cannot be updated in place (mark its inputs replace-on-change).
    fn update(
        &self,
        ctx: &ResourceContext<'_>,
        id: &str,
        old_inputs: Self::Inputs,
        old_outputs: Self::Outputs,
        new_inputs: Self::Inputs,
    ) -> Result<Self::Outputs, ProviderError> {
        let _ = (id, old_inputs, old_outputs, new_inputs);
        Err(ProviderError::Failed(format!(
            "`{}` cannot be updated in place; mark the changed properties replace-on-change",
            ctx.type_token()
        )))
    }

    /// Deletes the resource. The default does nothing.
    fn delete(
        &self,
        ctx: &ResourceContext<'_>,
        id: &str,
        inputs: Self::Inputs,
        outputs: Self::Outputs,
    ) -> Result<(), ProviderError> {
        let _ = (ctx, id, inputs, outputs);
        Ok(())
    }

    /// During a preview, with every input known: the outputs the resource will have after a
    /// create (`old_outputs` is `None`) or an update, if they can be told without changing
    /// anything. The default cannot tell: outputs named like an input are planned as that
    /// input, the others as unknown.
    fn plan(
        &self,
        ctx: &ResourceContext<'_>,
        inputs: &Self::Inputs,
        old_outputs: Option<&Self::Outputs>,
    ) -> Result<Option<Self::Outputs>, ProviderError> {
        let _ = (ctx, inputs, old_outputs);
        Ok(None)
    }
}

/// Exports a [`TypedResource`] as a [`ResourceType`]:
/// `vec![Box::new(Typed(MyResource))]` in [`Provider::resource_types`](super::Provider::resource_types).
pub struct Typed<R>(pub R);

impl<R: TypedResource> Typed<R> {
    /// The typed inputs of checked `inputs`.
    fn inputs(&self, inputs: &PropertyMap) -> Result<R::Inputs, ProviderError> {
        from_value_at(Value::Object(inputs.clone()))
            .map_err(|e| ProviderError::Invalid(vec![CheckFailure::new(e.path(), e.message())]))
    }

    /// The typed outputs of the outputs stored for the resource.
    fn stored_outputs(
        &self,
        ctx: &ResourceContext<'_>,
        outputs: &PropertyMap,
    ) -> Result<R::Outputs, ProviderError> {
        let stored = normalize_stored(&ctx.schema().outputs, outputs.clone());
        from_value_at(Value::Object(stored)).map_err(|e| {
            ProviderError::Failed(format!(
                "the stored outputs of `{}` do not read as {}'s outputs: {e}",
                ctx.name(),
                ctx.type_token()
            ))
        })
    }

    /// The typed inputs of the inputs stored for the resource.
    fn stored_inputs(
        &self,
        ctx: &ResourceContext<'_>,
        inputs: &PropertyMap,
    ) -> Result<R::Inputs, ProviderError> {
        let stored = normalize_stored(&ctx.schema().inputs, inputs.clone());
        from_value_at(Value::Object(stored)).map_err(|e| {
            ProviderError::Failed(format!(
                "the stored inputs of `{}` do not read as {}'s inputs: {e}",
                ctx.name(),
                ctx.type_token()
            ))
        })
    }

    /// `value` as the property map it must serialize to, made secret where the schema or the
    /// secret `inputs` of the same names say.
    fn to_map(
        &self,
        ctx: &ResourceContext<'_>,
        what: &str,
        value: &impl Serialize,
        inputs: &PropertyMap,
        declared: &[super::PropertySchema],
    ) -> Result<PropertyMap, ProviderError> {
        let map = match to_value(value)? {
            Value::Object(map) => map,
            other => {
                return Err(ProviderError::Failed(format!(
                    "{}'s {what} must serialize to an object, not {}",
                    ctx.type_token(),
                    other.kind()
                )));
            }
        };
        Ok(keep_secrets(map, inputs, declared))
    }

    fn outputs(
        &self,
        ctx: &ResourceContext<'_>,
        outputs: &R::Outputs,
        inputs: &PropertyMap,
    ) -> Result<PropertyMap, ProviderError> {
        self.to_map(ctx, "outputs", outputs, inputs, &ctx.schema().outputs)
    }

    /// The outputs a preview plans for `inputs` (`old_outputs` for an update).
    fn planned(
        &self,
        ctx: &ResourceContext<'_>,
        inputs: &PropertyMap,
        old_outputs: Option<&PropertyMap>,
    ) -> Result<PropertyMap, ProviderError> {
        if inputs.values().all(Value::is_known) {
            let typed = self.inputs(inputs)?;
            let old = old_outputs.and_then(|o| self.stored_outputs(ctx, o).ok());
            if let Some(outputs) = self.0.plan(ctx, &typed, old.as_ref())? {
                return self.outputs(ctx, &outputs, inputs);
            }
        }
        let schema = ctx.schema();
        let is_input = |name: &str| schema.inputs.iter().any(|p| p.name == name);
        let planned = (schema.outputs.iter())
            .filter_map(|p| match inputs.get(&p.name) {
                Some(value) => Some((p.name.clone(), value.clone())),
                // An input not given: the output of its name will not be set either.
                None if is_input(&p.name) => None,
                None => Some((p.name.clone(), Value::Unknown)),
            })
            .collect();
        Ok(keep_secrets(planned, inputs, &ctx.schema().outputs))
    }
}

/// Makes secret each property of `map` that `declared` marks secret or whose input of the same
/// name held a secret.
fn keep_secrets(
    mut map: PropertyMap,
    inputs: &PropertyMap,
    declared: &[super::PropertySchema],
) -> PropertyMap {
    for (name, value) in map.iter_mut() {
        let secret = declared.iter().any(|p| &p.name == name && p.secret)
            || inputs.get(name).is_some_and(contains_secret);
        let plain = !matches!(value, Value::Null | Value::Unknown) && !contains_secret(value);
        if secret && plain {
            *value = Value::secret(std::mem::take(value));
        }
    }
    map
}

fn contains_secret(value: &Value) -> bool {
    value.is_secret()
        || value
            .as_array()
            .is_some_and(|items| items.iter().any(contains_secret))
        || value
            .as_object()
            .is_some_and(|map| map.values().any(contains_secret))
}

impl<R: TypedResource> ResourceType for Typed<R> {
    fn schema(&self) -> ResourceSchema {
        self.0.schema()
    }

    fn check(
        &self,
        ctx: &ResourceContext<'_>,
        _olds: Option<&PropertyMap>,
        news: PropertyMap,
    ) -> Result<Checked, ProviderError> {
        let mut checked = ctx.schema().validate(news);
        if checked.failures.is_empty() && checked.inputs.values().all(Value::is_known) {
            match from_value_at::<R::Inputs>(Value::Object(checked.inputs.clone())) {
                Ok(inputs) => checked.failures = self.0.validate(ctx, &inputs),
                Err(e) => checked.fail(e.path(), e.message()),
            }
        }
        Ok(checked)
    }

    fn diff(
        &self,
        ctx: &ResourceContext<'_>,
        id: &str,
        old_inputs: &PropertyMap,
        old_outputs: &PropertyMap,
        new_inputs: &PropertyMap,
    ) -> Result<Diff, ProviderError> {
        let schema_diff = ctx.schema().diff(old_inputs, new_inputs);
        if !new_inputs.values().all(Value::is_known) {
            return Ok(schema_diff);
        }
        self.0.diff(
            ctx,
            id,
            &self.stored_inputs(ctx, old_inputs)?,
            &self.stored_outputs(ctx, old_outputs)?,
            &self.inputs(new_inputs)?,
            schema_diff,
        )
    }

    fn create(
        &self,
        ctx: &ResourceContext<'_>,
        inputs: PropertyMap,
    ) -> Result<Created, ProviderError> {
        if ctx.preview() {
            return Ok(Created {
                id: String::new(),
                outputs: self.planned(ctx, &inputs, None)?,
            });
        }
        let Created { id, outputs } = self.0.create(ctx, self.inputs(&inputs)?)?;
        Ok(Created {
            id,
            outputs: self.outputs(ctx, &outputs, &inputs)?,
        })
    }

    fn read(
        &self,
        ctx: &ResourceContext<'_>,
        id: String,
        inputs: PropertyMap,
        outputs: PropertyMap,
    ) -> Result<Option<ReadResult>, ProviderError> {
        let stored = (
            self.stored_inputs(ctx, &inputs),
            self.stored_outputs(ctx, &outputs),
        );
        let read = match stored {
            (Ok(typed_inputs), Ok(typed_outputs)) => {
                self.0.read(ctx, id, typed_inputs, typed_outputs)?
            }
            // Nothing stored: an import by id, which the inputs given cannot describe alone.
            _ if outputs.is_empty() => self.0.import(ctx, id)?,
            (Err(e), _) | (_, Err(e)) => return Err(e),
        };
        let Some(read) = read else {
            return Ok(None);
        };
        Ok(Some(ReadResult {
            id: read.id,
            inputs: self.to_map(ctx, "inputs", &read.inputs, &inputs, &ctx.schema().inputs)?,
            outputs: self.outputs(ctx, &read.outputs, &inputs)?,
        }))
    }

    fn update(
        &self,
        ctx: &ResourceContext<'_>,
        id: &str,
        old_inputs: PropertyMap,
        old_outputs: PropertyMap,
        new_inputs: PropertyMap,
    ) -> Result<PropertyMap, ProviderError> {
        if ctx.preview() {
            return self.planned(ctx, &new_inputs, Some(&old_outputs));
        }
        let outputs = self.0.update(
            ctx,
            id,
            self.stored_inputs(ctx, &old_inputs)?,
            self.stored_outputs(ctx, &old_outputs)?,
            self.inputs(&new_inputs)?,
        )?;
        self.outputs(ctx, &outputs, &new_inputs)
    }

    fn delete(
        &self,
        ctx: &ResourceContext<'_>,
        id: &str,
        inputs: PropertyMap,
        outputs: PropertyMap,
    ) -> Result<(), ProviderError> {
        self.0.delete(
            ctx,
            id,
            self.stored_inputs(ctx, &inputs)?,
            self.stored_outputs(ctx, &outputs)?,
        )
    }
}

#[cfg(test)]
mod tests {
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};

    use super::*;
    use crate::provider::Urn;
    use crate::{Secret, Type};

    /// A counter file: `start` and a secret `token` in, `value` and a copy of `token` out.
    #[derive(Serialize, Deserialize, JsonSchema)]
    struct CounterInputs {
        /// Where counting starts.
        #[schemars(extend("x-plinth-replace-on-change" = true))]
        start: u8,
        #[serde(default)]
        step: i64,
        token: Option<String>,
    }

    #[derive(Serialize, Deserialize, JsonSchema)]
    struct CounterOutputs {
        start: u8,
        value: i64,
        token: Option<String>,
        key: Secret<String>,
    }

    struct Counter {
        plans: bool,
    }

    impl TypedResource for Counter {
        type Inputs = CounterInputs;
        type Outputs = CounterOutputs;

        fn schema(&self) -> ResourceSchema {
            ResourceSchema::derive::<Self>("test:Counter").describe("A counter.")
        }

        fn validate(&self, _: &ResourceContext<'_>, inputs: &CounterInputs) -> Vec<CheckFailure> {
            match inputs.step {
                0 if inputs.start == 13 => vec![CheckFailure::new("start", "unlucky")],
                _ => Vec::new(),
            }
        }

        fn create(
            &self,
            ctx: &ResourceContext<'_>,
            inputs: CounterInputs,
        ) -> Result<Created<CounterOutputs>, ProviderError> {
            assert!(!ctx.preview(), "typed create is never called in a preview");
            Ok(Created {
                id: "c1".into(),
                outputs: CounterOutputs {
                    start: inputs.start,
                    value: i64::from(inputs.start) + inputs.step,
                    token: inputs.token,
                    key: Secret::new("k".into()),
                },
            })
        }

        fn update(
            &self,
            _: &ResourceContext<'_>,
            _: &str,
            _: CounterInputs,
            old: CounterOutputs,
            news: CounterInputs,
        ) -> Result<CounterOutputs, ProviderError> {
            Ok(CounterOutputs {
                value: old.value + news.step,
                ..old
            })
        }

        /// A step that changes sign replaces the counter; the schema cannot say that.
        fn diff(
            &self,
            _: &ResourceContext<'_>,
            _: &str,
            old: &CounterInputs,
            _: &CounterOutputs,
            new: &CounterInputs,
            mut schema_diff: Diff,
        ) -> Result<Diff, ProviderError> {
            if old.step.signum() * new.step.signum() < 0 {
                schema_diff.replaces.push("step".into());
            }
            Ok(schema_diff)
        }

        fn plan(
            &self,
            _: &ResourceContext<'_>,
            inputs: &CounterInputs,
            old: Option<&CounterOutputs>,
        ) -> Result<Option<CounterOutputs>, ProviderError> {
            Ok(self.plans.then(|| CounterOutputs {
                start: inputs.start,
                value: old.map_or(0, |o| o.value) + inputs.step,
                token: inputs.token.clone(),
                key: Secret::new(String::new()),
            }))
        }
    }

    const URN: &str = "urn:plinth:dev::proj::test:Counter::c";

    fn map(entries: Vec<(&str, Value)>) -> PropertyMap {
        entries
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect()
    }

    /// Runs `f` with the resource, its schema and a context (a preview if `preview`).
    fn with<T>(
        plans: bool,
        preview: bool,
        f: impl FnOnce(&Typed<Counter>, &ResourceContext<'_>) -> T,
    ) -> T {
        let typed = Typed(Counter { plans });
        let schema = typed.schema();
        let ctx = ResourceContext::new(Urn::parse(URN.into()).unwrap(), &schema, preview);
        f(&typed, &ctx)
    }

    fn reasons(checked: &Checked) -> Vec<String> {
        checked.failures.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn the_schema_comes_from_the_structs() {
        with(false, false, |typed, _| {
            let schema = typed.schema();
            assert_eq!(schema.token, "test:Counter");
            let start = &schema.inputs[0];
            assert_eq!((start.name.as_str(), &start.ty), ("start", &Type::Integer));
            assert!(start.required && start.replace_on_change);
            assert_eq!(start.description, "Where counting starts.");
            assert!(!schema.inputs[1].required);
            let key = schema.outputs.iter().find(|p| p.name == "key").unwrap();
            assert!(key.secret && key.required);
        });
    }

    #[test]
    fn check_validates_the_schema_then_the_types_then_the_rules() {
        with(false, false, |typed, ctx| {
            let checked = typed
                .check(
                    ctx,
                    None,
                    map(vec![("start", "one".into()), ("stpe", 1.into())]),
                )
                .unwrap();
            assert_eq!(
                reasons(&checked),
                [
                    "stpe: is not an input of test:Counter; did you mean `step`?",
                    r#"start: expected an integer, got the string "one""#,
                ]
            );
            // A u8 out of range passes the schema (an integer) and fails deserialization.
            let checked = typed
                .check(ctx, None, map(vec![("start", 300.into())]))
                .unwrap();
            assert_eq!(checked.failures.len(), 1);
            assert_eq!(checked.failures[0].property, "start");
            assert!(checked.failures[0].reason.contains("300"), "{checked:?}");
            let checked = typed
                .check(ctx, None, map(vec![("start", 13.into())]))
                .unwrap();
            assert_eq!(reasons(&checked), ["start: unlucky"]);
            let checked = typed
                .check(ctx, None, map(vec![("start", Value::Number(3.0))]))
                .unwrap();
            assert!(checked.failures.is_empty());
            assert!(matches!(checked.inputs["start"], Value::Integer(3)));
            assert!(matches!(checked.inputs["step"], Value::Integer(0)));
            // Unknown inputs are not deserialized.
            let checked = typed
                .check(ctx, None, map(vec![("start", Value::Unknown)]))
                .unwrap();
            assert!(checked.failures.is_empty());
        });
    }

    #[test]
    fn diff_is_the_schemas_unless_the_typed_hook_says_more() {
        with(false, false, |typed, ctx| {
            let outputs = map(vec![
                ("start", 2.into()),
                ("value", 3.into()),
                ("key", Value::secret("k")),
            ]);
            let olds = map(vec![("start", 2.into()), ("step", 1.into())]);
            let diff = |news| typed.diff(ctx, "c1", &olds, &outputs, &news).unwrap();
            // The default: what the schema says, property by property.
            let same_sign = diff(map(vec![("start", 2.into()), ("step", 5.into())]));
            assert_eq!(
                (same_sign.changed, same_sign.replaces),
                (vec!["step".to_owned()], vec![])
            );
            let start = diff(map(vec![("start", 3.into()), ("step", 1.into())]));
            assert_eq!(start.replaces, ["start"]);
            // The typed hook sees the structs and replaces on a change of sign.
            let flipped = diff(map(vec![("start", 2.into()), ("step", (-1).into())]));
            assert_eq!(flipped.replaces, ["step"]);
            // With an unknown input, the schema decides.
            let unknown = diff(map(vec![("start", 2.into()), ("step", Value::Unknown)]));
            assert!(unknown.replaces.is_empty(), "{unknown:?}");
        });
    }

    #[test]
    fn a_preview_plans_without_creating() {
        let inputs = map(vec![("start", 2.into()), ("step", 1.into())]);
        with(false, true, |typed, ctx| {
            let planned = typed.create(ctx, inputs.clone()).unwrap();
            assert_eq!(planned.outputs["start"], Value::from(2));
            assert_eq!(planned.outputs["value"], Value::Unknown);
            assert_eq!(planned.outputs["key"], Value::Unknown);
            assert!(!planned.outputs.contains_key("token"), "{planned:?}");
        });
        with(true, true, |typed, ctx| {
            let planned = typed.create(ctx, inputs.clone()).unwrap();
            assert_eq!(planned.outputs["value"], Value::from(1));
            assert!(planned.outputs["key"].is_secret());
            let unknown = map(vec![("start", Value::Unknown)]);
            let planned = typed.create(ctx, unknown).unwrap();
            assert_eq!(planned.outputs["start"], Value::Unknown);
            assert_eq!(planned.outputs["value"], Value::Unknown);
        });
    }

    #[test]
    fn outputs_keep_integers_and_secrets() {
        with(false, false, |typed, ctx| {
            let inputs = map(vec![
                ("start", 2.into()),
                ("step", 40.into()),
                ("token", Value::secret("t")),
            ]);
            let created = typed.create(ctx, inputs).unwrap();
            assert_eq!(created.id, "c1");
            assert!(matches!(created.outputs["value"], Value::Integer(42)));
            assert_eq!(created.outputs["key"], Value::secret("k"));
            // An output named like a secret input is secret.
            assert_eq!(created.outputs["token"], Value::secret("t"));
        });
    }

    #[test]
    fn stored_state_from_before_integers_reads_and_updates() {
        with(false, false, |typed, ctx| {
            let olds = map(vec![
                ("start", Value::Number(2.0)),
                ("step", Value::Number(1.0)),
            ]);
            let outputs = map(vec![
                ("start", Value::Number(2.0)),
                ("value", Value::Number(3.0)),
                ("token", Value::Null),
                ("key", Value::secret("k")),
            ]);
            let news = map(vec![("start", 2.into()), ("step", 5.into())]);
            let updated = typed
                .update(ctx, "c1", olds.clone(), outputs.clone(), news)
                .unwrap();
            assert!(matches!(updated["value"], Value::Integer(8)));
            let read = typed
                .read(ctx, "c1".into(), olds, outputs.clone())
                .unwrap()
                .unwrap();
            assert!(matches!(read.outputs["value"], Value::Integer(3)));
            assert!(read.outputs["key"].is_secret());
            assert!(
                typed
                    .delete(ctx, "c1", map(vec![("start", 2.into())]), outputs)
                    .is_ok()
            );
            let broken = typed.delete(ctx, "c1", map(vec![]), map(vec![]));
            let Err(ProviderError::Failed(message)) = broken else {
                panic!("expected a failure, got {broken:?}");
            };
            assert!(message.contains("stored inputs of `c`"), "{message}");
        });
    }
}

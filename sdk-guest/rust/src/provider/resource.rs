//! The [`ResourceType`] trait that a provider implements once per resource type, and the values
//! its methods take and return.

use super::{CheckFailure, ProviderError, ResourceSchema, Urn};
use crate::PropertyMap;

/// What a call is about: the resource's URN, its name and type, and whether this is a preview.
#[derive(Debug)]
pub struct ResourceContext<'a> {
    urn: Urn,
    schema: &'a ResourceSchema,
    preview: bool,
}

impl<'a> ResourceContext<'a> {
    pub(crate) fn new(urn: Urn, schema: &'a ResourceSchema, preview: bool) -> Self {
        ResourceContext {
            urn,
            schema,
            preview,
        }
    }

    /// The resource's URN, `urn:plinth:<stack>::<project>::<type>::<name>`.
    pub fn urn(&self) -> &str {
        self.urn.as_str()
    }

    /// The resource's name, as the program gave it.
    pub fn name(&self) -> &str {
        self.urn.name()
    }

    /// The stack the resource belongs to.
    pub fn stack(&self) -> &str {
        self.urn.stack()
    }

    /// The project the resource belongs to.
    pub fn project(&self) -> &str {
        self.urn.project()
    }

    /// The resource's type token, e.g. `random:RandomString`.
    pub fn type_token(&self) -> &str {
        &self.schema.token
    }

    /// The schema of the resource's type.
    pub fn schema(&self) -> &ResourceSchema {
        self.schema
    }

    /// True when the engine only plans (`create` and `update` during a preview): change nothing
    /// and return [`Value::Unknown`](crate::Value::Unknown) for outputs not known yet.
    pub fn preview(&self) -> bool {
        self.preview
    }
}

/// The result of `check`: the normalized inputs, and the reasons to reject them if any.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Checked {
    /// The inputs as they will be stored and passed to the other calls (defaults applied).
    pub inputs: PropertyMap,
    /// Why the inputs are rejected; empty when they are valid.
    pub failures: Vec<CheckFailure>,
}

impl Checked {
    /// Valid inputs.
    pub fn new(inputs: PropertyMap) -> Checked {
        Checked {
            inputs,
            failures: Vec::new(),
        }
    }

    /// Adds a failure of `property` (empty for the inputs as a whole).
    pub fn fail(&mut self, property: impl Into<String>, reason: impl Into<String>) {
        self.failures.push(CheckFailure::new(property, reason));
    }
}

/// The result of `diff`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Diff {
    /// Top-level input properties whose change requires an update or a replacement.
    pub changed: Vec<String>,
    /// The subset of `changed` that requires a replacement.
    pub replaces: Vec<String>,
    /// Delete the old resource before creating its replacement.
    pub delete_before_replace: bool,
}

/// The result of `create`: a property map of outputs, or a typed resource's `Outputs`.
#[derive(Debug, Clone, PartialEq)]
pub struct Created<O = PropertyMap> {
    /// The provider-assigned id (ignored by the engine in a preview).
    pub id: String,
    /// The outputs.
    pub outputs: O,
}

/// The result of `read`: the resource as it is now. Property maps, or a typed resource's
/// `Inputs` and `Outputs`.
#[derive(Debug, Clone, PartialEq)]
pub struct ReadResult<I = PropertyMap, O = PropertyMap> {
    /// The provider-assigned id.
    pub id: String,
    /// The inputs that would produce the resource as it is.
    pub inputs: I,
    /// The outputs.
    pub outputs: O,
}

/// One type of resource a provider manages.
///
/// This is the untyped interface, on property maps, for resources whose inputs are only known at
/// run time (dynamic providers); most resources are easier to write as a
/// [`TypedResource`](super::TypedResource).
///
/// Only [`schema`](Self::schema) and [`create`](Self::create) are required. The defaults:
/// `check` validates the inputs against the schema ([`ResourceSchema::validate`]), `diff`
/// compares inputs key by key using the schema's `replace_on_change` flags, `read` returns the
/// stored state unchanged, `update` fails (the type cannot be updated in place), `delete` does
/// nothing.
///
/// `create` and `update` are called during a preview too, with
/// [`ctx.preview()`](ResourceContext::preview) true: they must change nothing then. `read`
/// returns `Ok(None)` for a resource that is gone (not an error).
pub trait ResourceType: 'static {
    /// The type's token and properties. Called once, when the provider starts (and again after
    /// each `configure`).
    fn schema(&self) -> ResourceSchema;

    /// Validates and normalizes the inputs. `olds` are the inputs stored for the resource, if it
    /// exists. Inputs may hold unknown values during a preview: do not reject those.
    ///
    /// The default validates them against the schema. An override replaces that validation:
    /// call [`ctx.schema().validate(news)`](ResourceSchema::validate) first to keep it, then
    /// add your own rules to the result.
    fn check(
        &self,
        ctx: &ResourceContext<'_>,
        olds: Option<&PropertyMap>,
        news: PropertyMap,
    ) -> Result<Checked, ProviderError> {
        let _ = olds;
        Ok(ctx.schema().validate(news))
    }

    /// Tells what changed between the stored inputs and the new (checked) ones, and whether the
    /// change replaces the resource.
    fn diff(
        &self,
        ctx: &ResourceContext<'_>,
        id: &str,
        old_inputs: &PropertyMap,
        old_outputs: &PropertyMap,
        new_inputs: &PropertyMap,
    ) -> Result<Diff, ProviderError> {
        let _ = (id, old_outputs);
        Ok(ctx.schema().diff(old_inputs, new_inputs))
    }

    /// Creates the resource and returns its id and outputs. With
    /// [`ctx.preview()`](ResourceContext::preview), create nothing: return the outputs the
    /// resource would have, unknown where not known yet.
    fn create(
        &self,
        ctx: &ResourceContext<'_>,
        inputs: PropertyMap,
    ) -> Result<Created, ProviderError>;

    /// Reads the resource as it is now; `Ok(None)` means it is gone.
    fn read(
        &self,
        ctx: &ResourceContext<'_>,
        id: String,
        inputs: PropertyMap,
        outputs: PropertyMap,
    ) -> Result<Option<ReadResult>, ProviderError> {
        let _ = ctx;
        Ok(Some(ReadResult {
            id,
            inputs,
            outputs,
        }))
    }

    /// Updates the resource in place and returns its new outputs (planned ones during a
    /// preview).
    fn update(
        &self,
        ctx: &ResourceContext<'_>,
        id: &str,
        old_inputs: PropertyMap,
        old_outputs: PropertyMap,
        new_inputs: PropertyMap,
    ) -> Result<PropertyMap, ProviderError> {
        let _ = (id, old_inputs, old_outputs, new_inputs);
        Err(ProviderError::Failed(format!(
            "`{}` cannot be updated in place; mark the changed properties replace_on_change",
            ctx.type_token()
        )))
    }

    /// Deletes the resource.
    fn delete(
        &self,
        ctx: &ResourceContext<'_>,
        id: &str,
        inputs: PropertyMap,
        outputs: PropertyMap,
    ) -> Result<(), ProviderError> {
        let _ = (ctx, id, inputs, outputs);
        Ok(())
    }
}

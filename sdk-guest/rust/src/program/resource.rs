//! Declaring resources: [`ResourceBuilder`] collects a registration's inputs and options;
//! [`Resource`] is the handle a registration returns.

use std::time::Duration;

use super::Output;
use super::bindings::plinth::plugin::monitor::{
    self, CustomTimeouts, RegisterRequest, ResourceOptions,
};
use crate::value::nodes::encode_map;
use crate::wire::{OutputField, OutputRef};
use crate::{Error, PropertyMap, Value};

/// What a builder registers.
#[derive(Debug)]
enum Kind {
    /// A resource managed by a provider.
    Custom,
    /// A component resource, which only groups children.
    Component,
    /// An existing resource read by id, not managed.
    Read { id: String },
}

/// A resource registration being prepared: set inputs and options, then call
/// [`register`](ResourceBuilder::register). Made by
/// [`Context::resource`](super::Context::resource), [`Context::component`](super::Context::component)
/// and [`Context::read`](super::Context::read).
#[must_use = "a resource is declared only when `register` is called"]
pub struct ResourceBuilder {
    kind: Kind,
    ty: String,
    name: String,
    inputs: PropertyMap,
    options: ResourceOptions,
}

impl ResourceBuilder {
    pub(crate) fn custom(ty: &str, name: &str) -> ResourceBuilder {
        ResourceBuilder::with_kind(Kind::Custom, ty, name)
    }

    pub(crate) fn component(ty: &str, name: &str) -> ResourceBuilder {
        ResourceBuilder::with_kind(Kind::Component, ty, name)
    }

    pub(crate) fn read(ty: &str, name: &str, id: &str) -> ResourceBuilder {
        ResourceBuilder::with_kind(Kind::Read { id: id.to_owned() }, ty, name)
    }

    fn with_kind(kind: Kind, ty: &str, name: &str) -> ResourceBuilder {
        ResourceBuilder {
            kind,
            ty: ty.to_owned(),
            name: name.to_owned(),
            inputs: PropertyMap::new(),
            options: ResourceOptions {
                depends_on: Vec::new(),
                parent: None,
                provider: None,
                protect: false,
                retain_on_delete: false,
                delete_before_replace: false,
                ignore_changes: Vec::new(),
                replace_on_changes: Vec::new(),
                aliases: Vec::new(),
                custom_timeouts: None,
                import_id: None,
            },
        }
    }

    /// Sets the input `key`: a plain value or another resource's [`Output`].
    pub fn input(mut self, key: impl Into<String>, value: impl Into<Value>) -> ResourceBuilder {
        self.inputs.insert(key.into(), value.into());
        self
    }

    /// Sets the inputs from a struct (or any value that serializes to an object): its fields
    /// become inputs, integers stay integers, [`Secret`](crate::Secret) fields stay secret and
    /// [`Output`] fields refer to other resources' outputs.
    ///
    /// ```
    /// # fn main() {}
    /// # mod example {
    /// use plinth_sdk::{Context, Error, Output};
    /// use serde::Serialize;
    ///
    /// #[derive(Serialize)]
    /// struct EntryArgs {
    ///     key: String,
    ///     ttl: i64,
    ///     value: Output,
    /// }
    ///
    /// fn main(ctx: &Context) -> Result<(), Error> {
    ///     let pet = ctx.resource("random:RandomPet", "pet").register();
    ///     let args = EntryArgs { key: "pet".into(), ttl: 60, value: pet.output("result") };
    ///     ctx.resource("kv:Entry", "entry").inputs_from(&args)?.register();
    ///     Ok(())
    /// }
    ///
    /// plinth_sdk::export_program!(main);
    /// # }
    /// ```
    pub fn inputs_from<T: serde::Serialize + ?Sized>(
        mut self,
        inputs: &T,
    ) -> Result<ResourceBuilder, Error> {
        match crate::to_value(inputs)? {
            Value::Object(map) => {
                self.inputs.extend(map);
                Ok(self)
            }
            other => Err(Error::new(format!(
                "the inputs of `{}` must be an object (a struct or a map), not {}",
                self.name,
                other.kind()
            ))),
        }
    }

    /// Sets several inputs.
    pub fn inputs<K: Into<String>, V: Into<Value>>(
        mut self,
        inputs: impl IntoIterator<Item = (K, V)>,
    ) -> ResourceBuilder {
        self.inputs
            .extend(inputs.into_iter().map(|(k, v)| (k.into(), v.into())));
        self
    }

    /// Orders this resource after `resource`, beyond what its inputs already refer to.
    pub fn depends_on(mut self, resource: &Resource) -> ResourceBuilder {
        self.options.depends_on.push(resource.handle);
        self
    }

    /// Makes this resource a child of the component `parent`.
    pub fn parent(mut self, parent: &Resource) -> ResourceBuilder {
        self.options.parent = Some(parent.handle);
        self
    }

    /// Manages this resource with an explicitly registered provider resource.
    pub fn provider(mut self, provider: &Resource) -> ResourceBuilder {
        self.options.provider = Some(provider.handle);
        self
    }

    /// Refuses to delete the resource while set.
    pub fn protect(mut self, protect: bool) -> ResourceBuilder {
        self.options.protect = protect;
        self
    }

    /// Leaves the real resource in place when plinth deletes it from the stack.
    pub fn retain_on_delete(mut self, retain: bool) -> ResourceBuilder {
        self.options.retain_on_delete = retain;
        self
    }

    /// Deletes the old resource before creating its replacement (instead of after).
    pub fn delete_before_replace(mut self, delete_first: bool) -> ResourceBuilder {
        self.options.delete_before_replace = delete_first;
        self
    }

    /// Ignores changes to these input properties.
    pub fn ignore_changes<S: Into<String>>(
        mut self,
        properties: impl IntoIterator<Item = S>,
    ) -> ResourceBuilder {
        self.options
            .ignore_changes
            .extend(properties.into_iter().map(Into::into));
        self
    }

    /// Replaces the resource when any of these input properties changes.
    pub fn replace_on_changes<S: Into<String>>(
        mut self,
        properties: impl IntoIterator<Item = S>,
    ) -> ResourceBuilder {
        self.options
            .replace_on_changes
            .extend(properties.into_iter().map(Into::into));
        self
    }

    /// Adds an old URN this resource was known by, so that renaming it does not replace it.
    pub fn alias(mut self, urn: impl Into<String>) -> ResourceBuilder {
        self.options.aliases.push(urn.into());
        self
    }

    /// Limits how long creating the resource may take (whole seconds, rounded up).
    pub fn create_timeout(mut self, timeout: Duration) -> ResourceBuilder {
        self.timeouts().create_seconds = Some(seconds(timeout));
        self
    }

    /// Limits how long updating the resource may take (whole seconds, rounded up).
    pub fn update_timeout(mut self, timeout: Duration) -> ResourceBuilder {
        self.timeouts().update_seconds = Some(seconds(timeout));
        self
    }

    /// Limits how long deleting the resource may take (whole seconds, rounded up).
    pub fn delete_timeout(mut self, timeout: Duration) -> ResourceBuilder {
        self.timeouts().delete_seconds = Some(seconds(timeout));
        self
    }

    fn timeouts(&mut self) -> &mut CustomTimeouts {
        self.options.custom_timeouts.get_or_insert(CustomTimeouts {
            create_seconds: None,
            update_seconds: None,
            delete_seconds: None,
        })
    }

    /// Adopts the existing resource with this provider id instead of creating it.
    pub fn import(mut self, id: impl Into<String>) -> ResourceBuilder {
        self.options.import_id = Some(id.into());
        self
    }

    /// Sends the registration to the engine. Returns at once with a handle; the engine creates,
    /// updates or reads the resource in the background.
    pub fn register(self) -> Resource {
        let inputs = encode_map(self.inputs);
        let handle = match self.kind {
            Kind::Read { id } => {
                monitor::read_resource(&self.ty, &self.name, &id, &inputs, &self.options)
            }
            Kind::Custom | Kind::Component => monitor::register_resource(&RegisterRequest {
                custom: matches!(self.kind, Kind::Custom),
                type_: self.ty,
                name: self.name,
                inputs,
                options: self.options,
            }),
        };
        Resource { handle }
    }
}

/// Whole seconds, rounded up and capped at `u32::MAX`.
fn seconds(timeout: Duration) -> u32 {
    let secs = timeout.as_secs() + u64::from(timeout.subsec_nanos() > 0);
    u32::try_from(secs).unwrap_or(u32::MAX)
}

/// A registered resource. Its outputs are [`Output`]s that the engine resolves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Resource {
    handle: u64,
}

impl Resource {
    /// The output property `name`.
    pub fn output(&self, name: impl Into<String>) -> Output {
        self.field(OutputField::Property(vec![name.into()]))
    }

    /// The provider-assigned id.
    pub fn id(&self) -> Output {
        self.field(OutputField::Id)
    }

    /// The URN.
    pub fn urn(&self) -> Output {
        self.field(OutputField::Urn)
    }

    /// The handle the engine gave this registration.
    pub fn handle(&self) -> u64 {
        self.handle
    }

    /// Sets the outputs of a component resource.
    pub fn register_outputs<K: Into<String>, V: Into<Value>>(
        &self,
        outputs: impl IntoIterator<Item = (K, V)>,
    ) {
        let map: PropertyMap = outputs
            .into_iter()
            .map(|(k, v)| (k.into(), v.into()))
            .collect();
        monitor::register_outputs(Some(self.handle), &encode_map(map));
    }

    fn field(&self, field: OutputField) -> Output {
        Output::new(Value::Output(OutputRef {
            handle: self.handle,
            field,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_refer_to_the_handle() {
        let r = Resource { handle: 9 };
        assert_eq!(
            Value::from(r.output("result")),
            Value::Output(OutputRef {
                handle: 9,
                field: OutputField::Property(vec!["result".into()]),
            })
        );
        assert!(!r.id().is_known());
        assert!(!r.urn().is_known());
    }

    #[test]
    fn builder_collects_inputs_and_options() {
        let parent = Resource { handle: 1 };
        let dep = Resource { handle: 2 };
        let b = ResourceBuilder::custom("random:RandomString", "s")
            .input("length", 8)
            .inputs([("special", false), ("upper", true)])
            .depends_on(&dep)
            .parent(&parent)
            .protect(true)
            .ignore_changes(["special"])
            .alias("urn:plinth:dev::p::random:RandomString::old")
            .create_timeout(Duration::from_millis(1500))
            .import("abc");
        assert_eq!(b.inputs.len(), 3);
        assert_eq!(b.options.depends_on, vec![2]);
        assert_eq!(b.options.parent, Some(1));
        assert!(b.options.protect);
        assert_eq!(b.options.ignore_changes, vec!["special"]);
        assert_eq!(b.options.aliases.len(), 1);
        assert_eq!(
            b.options.custom_timeouts.map(|t| t.create_seconds),
            Some(Some(2))
        );
        assert_eq!(b.options.import_id.as_deref(), Some("abc"));
    }
}

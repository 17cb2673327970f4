//! Write-only inputs: a value (a password) the provider is sent but plinth never records. The
//! provider's schema marks the input write-only and pairs it with a version input
//! ([`PropertySchema::write_only_version`](crate::schema::PropertySchema)). The engine takes
//! such a value out of the checked inputs before anything is recorded, diffed or shown, and
//! hands it to the provider's `create`, and to its `update` only when the version input
//! changed: changing the value alone changes nothing, as the old state has no value to compare.
//! Whatever the provider returns under that name is dropped.

use std::sync::Arc;

use async_trait::async_trait;

use crate::provider::{
    CheckResult, Created, DiffResult, Provider, ProviderError, ProviderInfo, ReadResult,
};
use crate::urn::Urn;
use crate::value::{PropertyMap, Value};

/// The write-only inputs of resource type `ty`, each with its version input.
pub fn of<'a>(info: &'a ProviderInfo, ty: &str) -> Vec<(&'a str, &'a str)> {
    (info.resources.iter())
        .find(|r| r.token == ty)
        .map(|r| r.write_only().collect())
        .unwrap_or_default()
}

/// Removes the write-only properties of resource type `ty` from `map`: what a provider returned
/// (outputs, inputs read back) or what a state file holds.
pub fn strip(info: &ProviderInfo, ty: &str, map: &mut PropertyMap) {
    for (name, _) in of(info, ty) {
        map.remove(name);
    }
}

/// The write-only values one step sends, taken out of its checked inputs.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Sent {
    /// Every write-only value the program gave: what a create sends.
    on_create: PropertyMap,
    /// Those whose version input changed from the recorded inputs: what an update sends.
    on_update: PropertyMap,
}

impl Sent {
    /// Takes the write-only values of resource type `ty` out of `inputs`, which then hold only
    /// what may be recorded; `old` is the recorded inputs, if the resource exists. Each value
    /// is kept secret, whatever the program marked it. A value given without its version input
    /// is an error naming it.
    pub(crate) fn take(
        info: &ProviderInfo,
        ty: &str,
        old: Option<&PropertyMap>,
        inputs: &mut PropertyMap,
    ) -> Result<Sent, String> {
        let mut sent = Sent::default();
        for (name, version) in of(info, ty) {
            let Some(value) = inputs.remove(name) else {
                continue;
            };
            if !inputs.contains_key(version) {
                return Err(format!(
                    "input {name} is write-only (sent to the provider, never recorded): give \
                     {version} too, and change {version} whenever {name} changes so that the \
                     new value is sent"
                ));
            }
            let value = match value {
                v @ (Value::Secret(_) | Value::Unknown) => v,
                v => Value::Secret(Box::new(v)),
            };
            if old.is_none_or(|old| old.get(version) != inputs.get(version)) {
                sent.on_update.insert(name.to_owned(), value.clone());
            }
            sent.on_create.insert(name.to_owned(), value);
        }
        Ok(sent)
    }

    /// The write-only inputs an update sends: the display names them.
    pub(crate) fn updated(&self) -> Vec<String> {
        self.on_update.keys().cloned().collect()
    }

    /// The write-only inputs a create sends.
    pub(crate) fn created(&self) -> Vec<String> {
        self.on_create.keys().cloned().collect()
    }

    /// `provider`, sending these values; `provider` itself when there are none.
    pub(crate) fn through(self, provider: Arc<dyn Provider>) -> Arc<dyn Provider> {
        if self.on_create.is_empty() {
            provider
        } else {
            Arc::new(Sending {
                inner: provider,
                sent: self,
            })
        }
    }
}

/// A provider that also sends one resource's write-only values, beside its recorded inputs.
struct Sending {
    inner: Arc<dyn Provider>,
    sent: Sent,
}

/// `inputs` with `values` beside them.
fn with(inputs: &PropertyMap, values: &PropertyMap) -> PropertyMap {
    let mut all = inputs.clone();
    all.extend(values.iter().map(|(k, v)| (k.clone(), v.clone())));
    all
}

#[async_trait]
impl Provider for Sending {
    fn info(&self) -> &ProviderInfo {
        self.inner.info()
    }

    async fn check_config(&self, config: &PropertyMap) -> Result<CheckResult, ProviderError> {
        self.inner.check_config(config).await
    }

    async fn configure(&self, config: &PropertyMap) -> Result<(), ProviderError> {
        self.inner.configure(config).await
    }

    async fn check(
        &self,
        urn: &Urn,
        olds: Option<&PropertyMap>,
        news: &PropertyMap,
    ) -> Result<CheckResult, ProviderError> {
        self.inner.check(urn, olds, news).await
    }

    async fn diff(
        &self,
        urn: &Urn,
        id: &str,
        old_inputs: &PropertyMap,
        old_outputs: &PropertyMap,
        new_inputs: &PropertyMap,
    ) -> Result<DiffResult, ProviderError> {
        (self.inner)
            .diff(urn, id, old_inputs, old_outputs, new_inputs)
            .await
    }

    async fn create(
        &self,
        urn: &Urn,
        inputs: &PropertyMap,
        preview: bool,
    ) -> Result<Created, ProviderError> {
        let inputs = with(inputs, &self.sent.on_create);
        match self.inner.create(urn, &inputs, preview).await {
            Ok(mut created) => {
                strip(self.info(), urn.ty(), &mut created.outputs);
                Ok(created)
            }
            Err(ProviderError::PartiallyCreated(mut partial)) => {
                strip(self.info(), urn.ty(), &mut partial.outputs);
                Err(ProviderError::PartiallyCreated(partial))
            }
            Err(e) => Err(e),
        }
    }

    async fn read(
        &self,
        urn: &Urn,
        id: &str,
        inputs: &PropertyMap,
        outputs: &PropertyMap,
    ) -> Result<Option<ReadResult>, ProviderError> {
        let read = self.inner.read(urn, id, inputs, outputs).await?;
        Ok(read.map(|mut read| {
            strip(self.info(), urn.ty(), &mut read.inputs);
            strip(self.info(), urn.ty(), &mut read.outputs);
            read
        }))
    }

    async fn update(
        &self,
        urn: &Urn,
        id: &str,
        old_inputs: &PropertyMap,
        old_outputs: &PropertyMap,
        new_inputs: &PropertyMap,
        preview: bool,
    ) -> Result<PropertyMap, ProviderError> {
        let new_inputs = with(new_inputs, &self.sent.on_update);
        let mut outputs = (self.inner)
            .update(urn, id, old_inputs, old_outputs, &new_inputs, preview)
            .await?;
        strip(self.info(), urn.ty(), &mut outputs);
        Ok(outputs)
    }

    async fn delete(
        &self,
        urn: &Urn,
        id: &str,
        inputs: &PropertyMap,
        outputs: &PropertyMap,
    ) -> Result<(), ProviderError> {
        self.inner.delete(urn, id, inputs, outputs).await
    }

    async fn invoke(&self, token: &str, args: &PropertyMap) -> Result<Value, ProviderError> {
        self.inner.invoke(token, args).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{PropertySchema, PropertyType, ResourceSchema};

    fn info() -> ProviderInfo {
        let input = |name: &str, version: Option<&str>| PropertySchema {
            write_only_version: version.map(str::to_owned),
            ..PropertySchema::new(name, PropertyType::String)
        };
        ProviderInfo {
            resources: vec![ResourceSchema {
                token: "db:Role".into(),
                inputs: vec![
                    input("name", None),
                    input("passwordWo", Some("passwordWoVersion")),
                    input("passwordWoVersion", None),
                ],
                ..ResourceSchema::default()
            }],
            ..ProviderInfo::default()
        }
    }

    fn inputs(pairs: &[(&str, &str)]) -> PropertyMap {
        (pairs.iter())
            .map(|(k, v)| ((*k).to_owned(), Value::from(*v)))
            .collect()
    }

    #[test]
    fn the_value_leaves_the_inputs_secret_and_goes_to_a_create() {
        let mut news = inputs(&[
            ("name", "app"),
            ("passwordWo", "hunter2"),
            ("passwordWoVersion", "1"),
        ]);
        let sent = Sent::take(&info(), "db:Role", None, &mut news).unwrap();
        assert_eq!(news, inputs(&[("name", "app"), ("passwordWoVersion", "1")]));
        assert_eq!(
            sent.on_create.get("passwordWo"),
            Some(&Value::Secret(Box::new(Value::from("hunter2"))))
        );
        assert_eq!(sent.created(), ["passwordWo"]);
        assert_eq!(sent.updated(), ["passwordWo"]);
    }

    #[test]
    fn an_update_sends_it_only_when_the_version_changes() {
        let old = inputs(&[("name", "app"), ("passwordWoVersion", "1")]);
        let mut same = inputs(&[("passwordWo", "other"), ("passwordWoVersion", "1")]);
        let sent = Sent::take(&info(), "db:Role", Some(&old), &mut same).unwrap();
        assert!(sent.updated().is_empty());
        assert_eq!(sent.created(), ["passwordWo"]);
        let mut bumped = inputs(&[("passwordWo", "other"), ("passwordWoVersion", "2")]);
        let sent = Sent::take(&info(), "db:Role", Some(&old), &mut bumped).unwrap();
        assert_eq!(sent.updated(), ["passwordWo"]);
    }

    #[test]
    fn a_value_without_its_version_is_refused_by_name() {
        let mut news = inputs(&[("passwordWo", "hunter2")]);
        let error = Sent::take(&info(), "db:Role", None, &mut news).unwrap_err();
        assert!(error.contains("give passwordWoVersion too"), "{error}");
    }

    #[test]
    fn other_types_and_providers_without_marks_are_untouched() {
        let mut news = inputs(&[("passwordWo", "x")]);
        let sent = Sent::take(&info(), "db:Other", None, &mut news).unwrap();
        assert_eq!(sent, Sent::default());
        assert_eq!(news, inputs(&[("passwordWo", "x")]));
    }

    #[test]
    fn a_version_input_must_exist_and_be_recorded() {
        let mut schema = info().resources.remove(0);
        assert_eq!(schema.check_write_only(), Ok(()));
        schema.inputs[1].write_only_version = Some("nope".into());
        assert!(
            schema
                .check_write_only()
                .unwrap_err()
                .contains("not an input")
        );
        schema.inputs[1].write_only_version = Some("passwordWo".into());
        assert!(
            schema
                .check_write_only()
                .unwrap_err()
                .contains("write-only itself")
        );
    }
}

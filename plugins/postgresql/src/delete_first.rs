//! Replacements delete the old object first: PostgreSQL names are unique, so a database,
//! schema or extension of the same name cannot be created beside the one it replaces, and a
//! new grant would be revoked by the old one's delete.

use plinth_sdk::{
    Checked, Created, Diff, PropertyMap, ProviderError, ReadResult, ResourceContext,
    ResourceSchema, ResourceType,
};

/// `R`, whose replacements delete before they create.
pub(crate) struct DeleteFirst<R>(pub(crate) R);

impl<R: ResourceType> ResourceType for DeleteFirst<R> {
    fn schema(&self) -> ResourceSchema {
        self.0.schema()
    }

    fn check(
        &self,
        ctx: &ResourceContext<'_>,
        olds: Option<&PropertyMap>,
        news: PropertyMap,
    ) -> Result<Checked, ProviderError> {
        self.0.check(ctx, olds, news)
    }

    fn diff(
        &self,
        ctx: &ResourceContext<'_>,
        id: &str,
        old_inputs: &PropertyMap,
        old_outputs: &PropertyMap,
        new_inputs: &PropertyMap,
    ) -> Result<Diff, ProviderError> {
        let mut diff = self.0.diff(ctx, id, old_inputs, old_outputs, new_inputs)?;
        diff.delete_before_replace = !diff.replaces.is_empty();
        Ok(diff)
    }

    fn create(
        &self,
        ctx: &ResourceContext<'_>,
        inputs: PropertyMap,
    ) -> Result<Created, ProviderError> {
        self.0.create(ctx, inputs)
    }

    fn read(
        &self,
        ctx: &ResourceContext<'_>,
        id: String,
        inputs: PropertyMap,
        outputs: PropertyMap,
    ) -> Result<Option<ReadResult>, ProviderError> {
        self.0.read(ctx, id, inputs, outputs)
    }

    fn update(
        &self,
        ctx: &ResourceContext<'_>,
        id: &str,
        old_inputs: PropertyMap,
        old_outputs: PropertyMap,
        new_inputs: PropertyMap,
    ) -> Result<PropertyMap, ProviderError> {
        self.0.update(ctx, id, old_inputs, old_outputs, new_inputs)
    }

    fn delete(
        &self,
        ctx: &ResourceContext<'_>,
        id: &str,
        inputs: PropertyMap,
        outputs: PropertyMap,
    ) -> Result<(), ProviderError> {
        self.0.delete(ctx, id, inputs, outputs)
    }
}

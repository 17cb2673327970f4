//! `file:Directory`: a directory inside the root. Creating it creates missing parents and keeps
//! a directory that is already there. Deleting it removes it only if it is empty: what it holds
//! may not be this stack's, so a directory that still holds something is kept and the delete
//! fails, naming what is in it. The id is the path; a change of `path` replaces it.

use plinth_sdk::{
    Checked, Created, Diff, PropertyMap, ProviderError, ReadResult, ResourceContext,
    ResourceSchema, ResourceType, Type,
};

use crate::inputs::{self, PATH, id_path};
use crate::root::Root;

/// The `file:Directory` resource type.
pub(crate) struct Directory {
    pub(crate) root: Root,
}

impl ResourceType for Directory {
    fn schema(&self) -> ResourceSchema {
        inputs::schema(
            "file:Directory",
            "A directory inside the root; deleted only if empty.",
            &[PATH],
            &[(
                "path",
                Type::String,
                "The directory's path, relative to the root.",
            )],
        )
    }

    fn check(
        &self,
        ctx: &ResourceContext<'_>,
        _olds: Option<&PropertyMap>,
        news: PropertyMap,
    ) -> Result<Checked, ProviderError> {
        Ok(inputs::check(ctx.schema(), &[PATH], news))
    }

    fn diff(
        &self,
        ctx: &ResourceContext<'_>,
        _id: &str,
        old_inputs: &PropertyMap,
        _old_outputs: &PropertyMap,
        new_inputs: &PropertyMap,
    ) -> Result<Diff, ProviderError> {
        let mut diff = ctx.schema().diff(old_inputs, new_inputs);
        // A replacement at the same path (through `replace_on_changes`) must delete first.
        diff.delete_before_replace = !diff.changed.iter().any(|k| k == PATH.name);
        Ok(diff)
    }

    fn create(
        &self,
        ctx: &ResourceContext<'_>,
        inputs: PropertyMap,
    ) -> Result<Created, ProviderError> {
        let outputs = outputs(&inputs);
        if ctx.preview() {
            return Ok(Created {
                id: String::new(),
                outputs,
            });
        }
        let path = inputs::path(&inputs)?;
        self.root.create_dir(&path)?;
        Ok(Created {
            id: path.to_string(),
            outputs,
        })
    }

    fn read(
        &self,
        _ctx: &ResourceContext<'_>,
        id: String,
        mut inputs: PropertyMap,
        _outputs: PropertyMap,
    ) -> Result<Option<ReadResult>, ProviderError> {
        let path = id_path(&id)?;
        if !self.root.dir_exists(&path)? {
            return Ok(None);
        }
        inputs.insert(PATH.name.to_owned(), path.to_string().into());
        Ok(Some(ReadResult {
            id,
            outputs: outputs(&inputs),
            inputs,
        }))
    }

    fn delete(
        &self,
        _ctx: &ResourceContext<'_>,
        id: &str,
        _inputs: PropertyMap,
        _outputs: PropertyMap,
    ) -> Result<(), ProviderError> {
        self.root.remove_dir(&id_path(id)?)
    }
}

fn outputs(inputs: &PropertyMap) -> PropertyMap {
    inputs
        .get(PATH.name)
        .map(|path| (PATH.name.to_owned(), path.clone()))
        .into_iter()
        .collect()
}

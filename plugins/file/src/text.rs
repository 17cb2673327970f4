//! `file:File` and `file:Template`: a text file inside the root, its text given literally
//! (`content`) or rendered from a template and variables (`template`, `vars`). Both are the same
//! resource apart from where the text comes from.
//!
//! The id is the path. A change of `path` replaces the file (the new one is written before the
//! old one is deleted); any other change rewrites it in place. `read` reports the file as it is:
//! its digest and size, and for `file:File` its content as an input, so that `refresh` shows an
//! edit made out of band; a file deleted out of band is gone.

use plinth_sdk::{
    CheckFailure, Checked, Created, Diff, PropertyMap, ProviderError, ReadResult, ResourceContext,
    ResourceSchema, ResourceType, Type, Value,
};
use sha2::{Digest, Sha256};

use crate::inputs::{self, Input, Kind, MODE, PATH};
use crate::render::{self, RenderError};
use crate::root::Root;

const CONTENT: Input = Input {
    name: "content",
    description: "The text of the file.",
    kind: Kind::Str,
    required: true,
    replaces: false,
    normalize: None,
};

const TEMPLATE: Input = Input {
    name: "template",
    description: "The text of the file with `{{ name }}` placeholders (Jinja syntax: filters, \
                  conditions and loops work). Nothing is escaped unless the template says so.",
    kind: Kind::Str,
    required: true,
    replaces: false,
    normalize: None,
};

const VARS: Input = Input {
    name: "vars",
    description: "The values of the template's variables; every variable it uses must be given.",
    kind: Kind::Object,
    required: false,
    replaces: false,
    normalize: None,
};

const OUTPUTS: &[(&str, Type, &str)] = &[
    (
        "path",
        Type::String,
        "The file's path, relative to the root.",
    ),
    ("size", Type::Integer, "The file's size in bytes."),
    (
        "sha256",
        Type::String,
        "The SHA-256 digest of the file's content, in hex; secret if the content is.",
    ),
    (
        "mode",
        Type::String,
        "The mode asked for, as desired state only.",
    ),
];

/// Where the text of the file comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    /// `file:File`: the `content` input.
    Content,
    /// `file:Template`: `template` rendered with `vars`.
    Template,
}

impl Source {
    fn inputs(self) -> &'static [Input] {
        match self {
            Source::Content => &[PATH, CONTENT, MODE],
            Source::Template => &[PATH, TEMPLATE, VARS, MODE],
        }
    }

    /// The input a change of the file's text is attributed to.
    fn text_input(self) -> &'static str {
        match self {
            Source::Content => CONTENT.name,
            Source::Template => TEMPLATE.name,
        }
    }

    /// The text to write, or `None` while the inputs it depends on are not known.
    fn text(self, inputs: &PropertyMap) -> Result<Option<String>, ProviderError> {
        let known = |name: &str| inputs.get(name).is_none_or(|v| !v.contains_unknowns());
        match self {
            Source::Content if known(CONTENT.name) => {
                Ok(Some(inputs::text(inputs, CONTENT.name)?.to_owned()))
            }
            Source::Template if known(TEMPLATE.name) && known(VARS.name) => {
                let template = inputs::text(inputs, TEMPLATE.name)?;
                render::render(template, &vars(inputs))
                    .map(Some)
                    .map_err(|e| ProviderError::Invalid(vec![render_failure(e)]))
            }
            Source::Content | Source::Template => Ok(None),
        }
    }

    /// True if the text is made from a secret, so that its digest must stay secret too.
    fn secret(self, inputs: &PropertyMap) -> bool {
        let names: &[&str] = match self {
            Source::Content => &[CONTENT.name],
            Source::Template => &[TEMPLATE.name, VARS.name],
        };
        names
            .iter()
            .filter_map(|name| inputs.get(*name))
            .any(inputs::has_secret)
    }
}

/// The `vars` input; absent means none.
fn vars(inputs: &PropertyMap) -> PropertyMap {
    inputs
        .get(VARS.name)
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

/// A rendering problem, blamed on the input at fault.
fn render_failure(error: RenderError) -> CheckFailure {
    match error {
        RenderError::Template(reason) | RenderError::Render(reason) => {
            CheckFailure::new(TEMPLATE.name, reason)
        }
        RenderError::Missing(names) => CheckFailure::new(
            VARS.name,
            format!(
                "the template uses {} but `vars` does not give {}: add {} to `vars`, or give a \
                 fallback in the template, like `{{{{ {} | default('') }}}}`",
                names
                    .iter()
                    .map(|n| format!("`{n}`"))
                    .collect::<Vec<_>>()
                    .join(", "),
                if names.len() == 1 { "it" } else { "them" },
                if names.len() == 1 { "it" } else { "them" },
                names[0],
            ),
        ),
    }
}

/// The SHA-256 digest of `bytes`, in hex.
fn sha256(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// A text file resource type: [`TextFile::file`] or [`TextFile::template`].
pub(crate) struct TextFile {
    source: Source,
    root: Root,
}

impl TextFile {
    /// `file:File`.
    pub(crate) fn file(root: Root) -> TextFile {
        TextFile {
            source: Source::Content,
            root,
        }
    }

    /// `file:Template`.
    pub(crate) fn template(root: Root) -> TextFile {
        TextFile {
            source: Source::Template,
            root,
        }
    }

    /// The outputs of the file written from `inputs`, whose text is `text` (`None`: unknown).
    fn outputs(&self, inputs: &PropertyMap, text: Option<&[u8]>) -> PropertyMap {
        let secret = self.source.secret(inputs);
        let mut outputs = PropertyMap::new();
        let path = inputs.get(PATH.name).cloned().unwrap_or(Value::Unknown);
        outputs.insert("path".to_owned(), path);
        let (size, digest) = match text {
            Some(bytes) => (Value::from(bytes.len()), Value::from(sha256(bytes))),
            None => (Value::Unknown, Value::Unknown),
        };
        outputs.insert("size".to_owned(), size);
        outputs.insert(
            "sha256".to_owned(),
            if secret {
                Value::secret(digest)
            } else {
                digest
            },
        );
        if let Some(mode) = inputs.get(MODE.name) {
            outputs.insert("mode".to_owned(), mode.clone());
        }
        outputs
    }

    /// Writes the file (unless previewing) and returns its outputs.
    fn apply(
        &self,
        ctx: &ResourceContext<'_>,
        inputs: &PropertyMap,
    ) -> Result<PropertyMap, ProviderError> {
        let text = self.source.text(inputs)?;
        if !ctx.preview() {
            let text = text.as_deref().ok_or_else(|| {
                ProviderError::failed("the file's text is not known yet; run the update again")
            })?;
            self.root.write(&inputs::path(inputs)?, text)?;
        }
        Ok(self.outputs(inputs, text.as_deref().map(str::as_bytes)))
    }
}

impl ResourceType for TextFile {
    fn schema(&self) -> ResourceSchema {
        match self.source {
            Source::Content => inputs::schema(
                "file:File",
                "A text file inside the root, with the given content.",
                self.source.inputs(),
                OUTPUTS,
            ),
            Source::Template => inputs::schema(
                "file:Template",
                "A text file inside the root, rendered from a template and variables.",
                self.source.inputs(),
                OUTPUTS,
            ),
        }
    }

    fn check(
        &self,
        ctx: &ResourceContext<'_>,
        _olds: Option<&PropertyMap>,
        news: PropertyMap,
    ) -> Result<Checked, ProviderError> {
        let Checked {
            inputs,
            mut failures,
        } = inputs::check(ctx.schema(), self.source.inputs(), news);
        if failures.is_empty() && self.source == Source::Template {
            let template = inputs.get(TEMPLATE.name).filter(|v| !v.contains_unknowns());
            let rendered = match template.and_then(Value::as_str) {
                Some(template) if inputs.get(VARS.name).is_none_or(Value::is_known) => {
                    render::render(template, &vars(&inputs)).map(|_| ())
                }
                Some(template) => render::parse(template),
                None => Ok(()),
            };
            if let Err(e) = rendered {
                failures.push(render_failure(e));
            }
        }
        Ok(Checked { inputs, failures })
    }

    fn diff(
        &self,
        ctx: &ResourceContext<'_>,
        _id: &str,
        old_inputs: &PropertyMap,
        old_outputs: &PropertyMap,
        new_inputs: &PropertyMap,
    ) -> Result<Diff, ProviderError> {
        let mut diff = ctx.schema().diff(old_inputs, new_inputs);
        // A file found changed by `refresh` differs from what the inputs ask for even when the
        // inputs did not change (a template's output cannot be turned back into inputs).
        let text_input = self.source.text_input().to_owned();
        if !diff.changed.contains(&text_input) {
            let recorded = old_outputs.get("sha256").and_then(Value::as_str);
            if let (Some(recorded), Some(text)) = (recorded, self.source.text(new_inputs)?)
                && recorded != sha256(text.as_bytes())
            {
                diff.changed.push(text_input);
                diff.changed.sort();
            }
        }
        // Replacing a file by one at the same path (asked for with `replace_on_changes`) must
        // delete the old one first, or deleting it would delete the new one.
        diff.delete_before_replace = !diff.changed.iter().any(|k| k == PATH.name);
        Ok(diff)
    }

    fn create(
        &self,
        ctx: &ResourceContext<'_>,
        inputs: PropertyMap,
    ) -> Result<Created, ProviderError> {
        let outputs = self.apply(ctx, &inputs)?;
        let id = match inputs.get(PATH.name).and_then(Value::as_str) {
            Some(path) if !ctx.preview() => path.to_owned(),
            _ => String::new(),
        };
        Ok(Created { id, outputs })
    }

    fn read(
        &self,
        _ctx: &ResourceContext<'_>,
        id: String,
        mut inputs: PropertyMap,
        _outputs: PropertyMap,
    ) -> Result<Option<ReadResult>, ProviderError> {
        let path = inputs::id_path(&id)?;
        let Some(bytes) = self.root.read(&path)? else {
            return Ok(None);
        };
        let secret = self.source.secret(&inputs);
        inputs.insert(PATH.name.to_owned(), path.to_string().into());
        if self.source == Source::Content {
            let content = Value::from(String::from_utf8_lossy(&bytes).into_owned());
            let content = if secret {
                Value::secret(content)
            } else {
                content
            };
            inputs.insert(CONTENT.name.to_owned(), content);
        }
        let outputs = self.outputs(&inputs, Some(&bytes));
        Ok(Some(ReadResult {
            id,
            inputs,
            outputs,
        }))
    }

    fn update(
        &self,
        ctx: &ResourceContext<'_>,
        _id: &str,
        _old_inputs: PropertyMap,
        _old_outputs: PropertyMap,
        new_inputs: PropertyMap,
    ) -> Result<PropertyMap, ProviderError> {
        self.apply(ctx, &new_inputs)
    }

    fn delete(
        &self,
        _ctx: &ResourceContext<'_>,
        id: &str,
        _inputs: PropertyMap,
        _outputs: PropertyMap,
    ) -> Result<(), ProviderError> {
        self.root.remove_file(&inputs::id_path(id)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(entries: &[(&str, Value)]) -> PropertyMap {
        entries
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect()
    }

    #[test]
    fn file_text_is_the_content_once_known() {
        let inputs = map(&[("content", "hi".into())]);
        assert_eq!(Source::Content.text(&inputs), Ok(Some("hi".into())));
        let inputs = map(&[("content", Value::Unknown)]);
        assert_eq!(Source::Content.text(&inputs), Ok(None));
    }

    #[test]
    fn template_text_is_rendered_once_every_var_is_known() {
        let inputs = map(&[
            ("template", "{{ a }}-{{ b }}".into()),
            (
                "vars",
                Value::object([("a", Value::from(1)), ("b", "x".into())]),
            ),
        ]);
        assert_eq!(Source::Template.text(&inputs), Ok(Some("1-x".into())));
        let inputs = map(&[
            ("template", "{{ a }}".into()),
            ("vars", Value::object([("a", Value::Unknown)])),
        ]);
        assert_eq!(Source::Template.text(&inputs), Ok(None));
    }

    #[test]
    fn missing_vars_are_blamed_on_vars_by_name() {
        let inputs = map(&[("template", "{{ title }}".into())]);
        let Err(ProviderError::Invalid(failures)) = Source::Template.text(&inputs) else {
            panic!("expected invalid inputs");
        };
        assert_eq!(failures[0].property, "vars");
        assert!(
            failures[0]
                .reason
                .starts_with("the template uses `title` but `vars` does not give it"),
            "{}",
            failures[0].reason
        );
    }

    #[test]
    fn digests_are_secret_when_the_text_is() {
        let file = TextFile::file(Root::default());
        let inputs = map(&[("path", "k".into()), ("content", Value::secret("pw"))]);
        let outputs = file.outputs(&inputs, Some(b"pw"));
        assert!(outputs["sha256"].is_secret());
        assert_eq!(outputs["size"], Value::from(2));
        let template = TextFile::template(Root::default());
        let inputs = map(&[
            ("template", "{{ k }}".into()),
            ("vars", Value::object([("k", Value::secret("pw"))])),
        ]);
        assert!(template.outputs(&inputs, Some(b"pw"))["sha256"].is_secret());
        assert_eq!(
            sha256(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}

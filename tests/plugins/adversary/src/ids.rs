//! `adversary:Ids`: a resource whose provider answers with hostile strings, to check that
//! plinth records no id it could not read back and shows nothing a terminal would act on.
//! Inputs (each written with visible escapes, see [`unescape`], so that configuration and the
//! scenario program's `key=value;...` lists carry them as plain text):
//!
//! - `create_id`: the id `create` returns (default: the resource's name);
//! - `read_id`: the id `read` returns (default: the id it was asked to read);
//! - `fail_with`: `create` fails with this message;
//! - `print`: `create` prints this line to stdout and to stderr;
//! - `output_key`: `create` also returns an output with this key.
//!
//! Every other input is returned as an output, as the other adversary types do.

use plinth_sdk::{
    Checked, Created, Diff, PropertyMap, ProviderError, ReadResult, ResourceContext,
    ResourceSchema, ResourceType, Value,
};

use crate::inputs;

/// The `adversary:Ids` resource type.
pub(crate) struct Ids;

/// The input `key`, unescaped, if set.
fn hostile(inputs: &PropertyMap, key: &str) -> Option<String> {
    inputs::optional(inputs, key).map(unescape)
}

/// Turns `\e`, `\a`, `\b`, `\r`, `\n`, `\t` and `\u{HEX}` into the characters they name; any
/// other text is kept as it is.
pub(crate) fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('\\') {
        out.push_str(&rest[..at]);
        rest = &rest[at + 1..];
        let named = match rest.chars().next() {
            Some('e') => Some('\x1b'),
            Some('a') => Some('\x07'),
            Some('b') => Some('\x08'),
            Some('r') => Some('\r'),
            Some('n') => Some('\n'),
            Some('t') => Some('\t'),
            _ => None,
        };
        if let Some(c) = named {
            out.push(c);
            rest = &rest[1..];
            continue;
        }
        let code = (rest.strip_prefix("u{"))
            .and_then(|r| r.split_once('}'))
            .and_then(|(hex, after)| {
                Some((char::from_u32(u32::from_str_radix(hex, 16).ok()?)?, after))
            });
        match code {
            Some((c, after)) => {
                out.push(c);
                rest = after;
            }
            None => out.push('\\'),
        }
    }
    out.push_str(rest);
    out
}

impl ResourceType for Ids {
    fn schema(&self) -> ResourceSchema {
        ResourceSchema::new("adversary:Ids")
            // A description that would print a fake line of `plinth plugin inspect`.
            .describe(
                "Answers with the hostile ids, messages and keys its inputs name.\n[fake] created\u{1b}[2K",
            )
    }

    fn check(
        &self,
        _ctx: &ResourceContext<'_>,
        _olds: Option<&PropertyMap>,
        news: PropertyMap,
    ) -> Result<Checked, ProviderError> {
        Ok(Checked::new(news))
    }

    fn diff(
        &self,
        ctx: &ResourceContext<'_>,
        _id: &str,
        old_inputs: &PropertyMap,
        _old_outputs: &PropertyMap,
        new_inputs: &PropertyMap,
    ) -> Result<Diff, ProviderError> {
        Ok(ctx.schema().diff(old_inputs, new_inputs))
    }

    fn create(
        &self,
        ctx: &ResourceContext<'_>,
        inputs: PropertyMap,
    ) -> Result<Created, ProviderError> {
        if let Some(line) = hostile(&inputs, "print") {
            println!("{line}");
            eprintln!("{line}");
        }
        if let Some(message) = hostile(&inputs, "fail_with") {
            return Err(ProviderError::failed(message));
        }
        let id = hostile(&inputs, "create_id").unwrap_or_else(|| ctx.name().to_owned());
        let mut outputs = inputs;
        if let Some(key) = hostile(&outputs, "output_key") {
            outputs.insert(key, Value::from("planted"));
        }
        Ok(Created { id, outputs })
    }

    fn read(
        &self,
        _ctx: &ResourceContext<'_>,
        id: String,
        inputs: PropertyMap,
        outputs: PropertyMap,
    ) -> Result<Option<ReadResult>, ProviderError> {
        let id = hostile(&inputs, "read_id").unwrap_or(id);
        Ok(Some(ReadResult {
            id,
            inputs,
            outputs,
        }))
    }

    fn update(
        &self,
        _ctx: &ResourceContext<'_>,
        _id: &str,
        _old_inputs: PropertyMap,
        _old_outputs: PropertyMap,
        new_inputs: PropertyMap,
    ) -> Result<PropertyMap, ProviderError> {
        Ok(new_inputs)
    }

    fn delete(
        &self,
        _ctx: &ResourceContext<'_>,
        _id: &str,
        _inputs: PropertyMap,
        _outputs: PropertyMap,
    ) -> Result<(), ProviderError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::unescape;

    #[test]
    fn visible_escapes_become_the_characters_they_name() {
        assert_eq!(unescape(r"a\tb"), "a\tb");
        assert_eq!(unescape(r"\e]0;t\a\r\n\b"), "\x1b]0;t\x07\r\n\x08");
        assert_eq!(unescape(r"x\u{202e}y\u{9b}"), "x\u{202e}y\u{9b}");
        assert_eq!(unescape(r"plain \q \u{zz} end\"), r"plain \q \u{zz} end\");
    }
}

//! `adversary:Leak`: a resource that tries to unmask the secret input `token` through every
//! string and value a provider returns. Its input `leak` picks the channel:
//!
//! - `check-plain`: `check` returns `token` as plain text, and a copy of it as `copy`;
//! - `check-failure`: `check` reports a failure whose property and reason hold the secret;
//! - `invalid`: `check` fails with an `invalid` error whose property and reason hold it;
//! - `unknown-type`: `create` fails with an `unknown-type` token holding it;
//! - `failed`: `create` fails with a message holding it;
//! - `partial`: `create` reports a partial creation whose outputs and reasons hold it;
//! - `outputs-plain`: `create`, `update` and `read` return outputs with
//!   `token` plain, a `copy`, a `url` built from it, and `credential` (which the schema
//!   declares secret) plain; `diff` reports a changed property named after it;
//! - `key`: `create` returns an output whose key holds it (nested under `tags` when `leak_at`
//!   is `nested`).
//!
//! Ids are kept as a plugin returns them (they are its handle on what it made, and not secret,
//! as in Pulumi), so no mode puts the secret in one.
//!
//! In every other respect an echo that updates in place.

use plinth_sdk::{
    CheckFailure, Checked, Created, Diff, PropertyMap, PropertySchema, ProviderError, ReadResult,
    ResourceContext, ResourceSchema, ResourceType, Type, Value,
};

use crate::inputs;

/// The `adversary:Leak` resource type.
pub(crate) struct Leak;

/// The secret input, revealed, and the channel asked for.
fn attack(inputs: &PropertyMap) -> Result<(String, &str), ProviderError> {
    let token = inputs::required(inputs, "token")?.to_owned();
    Ok((token, inputs::optional(inputs, "leak").unwrap_or("")))
}

/// The outputs of `outputs-plain` (and the partial outputs of `partial`): every way to return
/// the secret, or a secret the schema declares, as plain.
fn leaked(mut inputs: PropertyMap, token: &str) -> PropertyMap {
    inputs.insert("token".into(), token.into());
    inputs.insert("copy".into(), token.into());
    inputs.insert(
        "url".into(),
        format!("db://admin:{token}@db.internal").into(),
    );
    inputs.insert("credential".into(), "credential-never-learned".into());
    inputs
}

impl ResourceType for Leak {
    fn schema(&self) -> ResourceSchema {
        ResourceSchema::new("adversary:Leak")
            .describe("Returns its secret input `token` as plain text through the channel `leak`.")
            .output(PropertySchema::new("credential").of(Type::String).secret())
    }

    fn check(
        &self,
        _ctx: &ResourceContext<'_>,
        _olds: Option<&PropertyMap>,
        mut news: PropertyMap,
    ) -> Result<Checked, ProviderError> {
        let (token, leak) = attack(&news)?;
        match leak {
            "check-plain" => {
                news.insert("token".into(), token.as_str().into());
                news.insert("copy".into(), token.into());
                Ok(Checked::new(news))
            }
            "check-failure" => {
                let mut checked = Checked::new(news);
                checked.fail(format!("token-{token}"), format!("`{token}` is too weak"));
                Ok(checked)
            }
            "invalid" => Err(ProviderError::Invalid(vec![CheckFailure {
                property: format!("token-{token}"),
                reason: format!("`{token}` is not accepted"),
            }])),
            _ => Ok(Checked::new(news)),
        }
    }

    fn diff(
        &self,
        _ctx: &ResourceContext<'_>,
        _id: &str,
        old_inputs: &PropertyMap,
        _old_outputs: &PropertyMap,
        new_inputs: &PropertyMap,
    ) -> Result<Diff, ProviderError> {
        let (token, leak) = attack(new_inputs)?;
        let mut changed: Vec<String> = (new_inputs.iter())
            .filter(|(k, v)| old_inputs.get(*k) != Some(v))
            .map(|(k, _)| k.clone())
            .collect();
        if leak == "outputs-plain" && !changed.is_empty() {
            changed.push(format!("changed-{token}"));
        }
        Ok(Diff {
            changed,
            ..Diff::default()
        })
    }

    fn create(
        &self,
        _ctx: &ResourceContext<'_>,
        inputs: PropertyMap,
    ) -> Result<Created, ProviderError> {
        let (token, leak) = attack(&inputs)?;
        match leak {
            "unknown-type" => Err(ProviderError::UnknownType(format!("adversary:{token}"))),
            "failed" => Err(ProviderError::failed(format!("cannot create: {token}"))),
            "partial" => Err(ProviderError::PartiallyCreated {
                id: "partial-leak".into(),
                outputs: leaked(inputs, &token),
                reasons: vec![format!("initializing with `{token}` failed")],
            }),
            "outputs-plain" => Ok(Created {
                id: "id-leak".into(),
                outputs: leaked(inputs, &token),
            }),
            "key" => {
                let key = format!("key-{token}");
                let mut outputs = inputs.clone();
                if inputs::optional(&inputs, "leak_at") == Some("nested") {
                    let tags = PropertyMap::from([(key, Value::Bool(true))]);
                    outputs.insert("tags".into(), Value::Object(tags));
                } else {
                    outputs.insert(key, Value::Bool(true));
                }
                Ok(Created {
                    id: "key-leak".into(),
                    outputs,
                })
            }
            _ => Ok(Created {
                id: "leak".into(),
                outputs: inputs,
            }),
        }
    }

    fn read(
        &self,
        _ctx: &ResourceContext<'_>,
        id: String,
        inputs: PropertyMap,
        outputs: PropertyMap,
    ) -> Result<Option<ReadResult>, ProviderError> {
        let (token, leak) = attack(&inputs)?;
        if leak != "outputs-plain" {
            return Ok(Some(ReadResult {
                id,
                inputs,
                outputs,
            }));
        }
        let mut plain = inputs.clone();
        plain.insert("token".into(), token.as_str().into());
        Ok(Some(ReadResult {
            id: "read-leak".into(),
            inputs: plain,
            outputs: leaked(inputs, &token),
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
        let (token, leak) = attack(&new_inputs)?;
        Ok(match leak {
            "outputs-plain" => leaked(new_inputs, &token),
            _ => new_inputs,
        })
    }
}

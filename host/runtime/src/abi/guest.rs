//! What a guest returns, made host values: the one way a string a guest supplied becomes a host
//! `String` is [`FromGuest`], whose every path goes through the masker. Errors, check reasons,
//! tokens, ids, property names and messages all arrive here; values go through
//! [`crate::abi::values`], which conceals the secrets they hold.
//!
//! Each conversion takes its record apart exhaustively (no `..`, no wildcard arm): a field or a
//! variant added to the WIT does not compile until it is converted here, so none can bypass the
//! masker by accident. `tests::every_result_of_every_interface_is_masked` checks the lot.

use std::borrow::Cow;

use plinth_engine::provider::{
    CheckFailure, CheckResult, Created, DiffResult, PartialState, ProviderError, ReadResult,
};
use plinth_engine::shown::escape_controls;
use plinth_engine::value::PropertyMap;

use crate::abi::bindings::types;
use crate::abi::bindings::v0_3::provider::exports::plinth::plugin::provider as wit;
use crate::abi::values::{self, Origin, ValueError};
use crate::masking::secret_masker;

/// A guest's result converted into the host's types, every string in it masked.
pub(crate) trait FromGuest {
    type Host;
    fn into_host(self) -> Self::Host;
}

impl FromGuest for String {
    type Host = String;

    /// The text with every known secret masked.
    fn into_host(self) -> String {
        match secret_masker().mask(&self) {
            Cow::Borrowed(_) => self,
            Cow::Owned(masked) => masked,
        }
    }
}

impl<T: FromGuest> FromGuest for Vec<T> {
    type Host = Vec<T::Host>;

    fn into_host(self) -> Self::Host {
        self.into_iter().map(FromGuest::into_host).collect()
    }
}

impl<T: FromGuest> FromGuest for Option<T> {
    type Host = Option<T::Host>;

    fn into_host(self) -> Self::Host {
        self.map(FromGuest::into_host)
    }
}

/// A property map a provider returned, or why it is malformed.
pub(crate) struct ProviderMap(pub(crate) types::Value);

impl FromGuest for ProviderMap {
    type Host = Result<PropertyMap, ValueError>;

    fn into_host(self) -> Self::Host {
        values::map_from_wit(self.0, Origin::Provider)
    }
}

impl FromGuest for types::CheckFailure {
    type Host = CheckFailure;

    fn into_host(self) -> CheckFailure {
        let types::CheckFailure { property, reason } = self;
        CheckFailure {
            property: property.into_host(),
            reason: reason.into_host(),
        }
    }
}

impl FromGuest for wit::CheckResult {
    type Host = Result<CheckResult, ValueError>;

    fn into_host(self) -> Self::Host {
        let wit::CheckResult { inputs, failures } = self;
        Ok(CheckResult {
            inputs: ProviderMap(inputs).into_host()?,
            failures: failures.into_host(),
        })
    }
}

impl FromGuest for wit::DiffResult {
    type Host = DiffResult;

    fn into_host(self) -> DiffResult {
        let wit::DiffResult {
            changed,
            replaces,
            delete_before_replace,
        } = self;
        DiffResult {
            changed: changed.into_host(),
            replaces: replaces.into_host(),
            delete_before_replace,
        }
    }
}

impl FromGuest for wit::Created {
    /// Outputs that are malformed still leave the resource's id to record.
    type Host = Result<Created, (String, ValueError)>;

    fn into_host(self) -> Self::Host {
        // The id is kept as the plugin returned it, never masked: it is the plugin's only handle
        // on what it made, and an altered id (`apps/[secret]`) would send the later `read`,
        // `update` and `delete` elsewhere. Ids are not secret, as in Pulumi. (Control characters
        // are refused by the engine before an id is recorded.)
        let wit::Created { id, outputs } = self;
        match ProviderMap(outputs).into_host() {
            Ok(outputs) => Ok(Created { id, outputs }),
            Err(e) => Err((id, e)),
        }
    }
}

impl FromGuest for wit::ReadResult {
    type Host = Result<ReadResult, (&'static str, ValueError)>;

    fn into_host(self) -> Self::Host {
        let wit::ReadResult {
            id,
            inputs,
            outputs,
        } = self;
        Ok(ReadResult {
            // Kept as returned, never masked (see `Created`).
            id,
            inputs: ProviderMap(inputs).into_host().map_err(|e| ("inputs", e))?,
            outputs: ProviderMap(outputs)
                .into_host()
                .map_err(|e| ("outputs", e))?,
        })
    }
}

impl FromGuest for wit::PartialState {
    type Host = PartialState;

    fn into_host(self) -> PartialState {
        let wit::PartialState {
            id,
            outputs,
            reasons,
        } = self;
        let mut reasons = reasons.into_host();
        // The resource exists: keep its id even if its outputs cannot be read.
        let outputs = ProviderMap(outputs).into_host().unwrap_or_else(|e| {
            reasons.push(format!("it returned malformed partial outputs: {e}"));
            PropertyMap::new()
        });
        PartialState {
            // Kept as returned, never masked (see `Created`).
            id,
            outputs,
            reasons,
        }
    }
}

impl FromGuest for wit::ProviderError {
    type Host = ProviderError;

    fn into_host(self) -> ProviderError {
        match self {
            wit::ProviderError::Invalid(failures) => ProviderError::Invalid(failures.into_host()),
            wit::ProviderError::UnknownType(token) => ProviderError::UnknownType(token.into_host()),
            wit::ProviderError::NotFound => ProviderError::NotFound,
            wit::ProviderError::PartiallyCreated(partial) => {
                ProviderError::PartiallyCreated(partial.into_host())
            }
            // The plugin's words, on one line, where they enter: the host adds lines of its own
            // (the grants to add) to a failure, which must keep theirs.
            wit::ProviderError::Failed(message) => {
                ProviderError::Failed(escape_controls(&message.into_host()).into_owned())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use plinth_engine::value::Value;

    use super::*;
    use crate::abi::bindings::types::Node;

    /// Learned as a secret before the guest answers, as an input would be.
    const SECRET: &str = "enumerated-secret-5d1c";

    /// Ids are kept as the plugin returned them (see `Created`'s `into_host`), so the
    /// enumeration gives them no secret; `an_id_is_kept_as_returned` checks that one holding a
    /// secret is not altered.
    const ID: &str = "id-1";

    fn text() -> String {
        format!("<{SECRET}>")
    }

    /// A property map with the secret as a plain string nested at every level, and as a plain
    /// string alone.
    fn map() -> types::Value {
        types::Value {
            nodes: vec![
                Node::Object(vec![
                    ("echoed".into(), 1),
                    ("plain".into(), 2),
                    ("nested".into(), 3),
                ]),
                Node::Text(SECRET.into()),
                Node::Text(text()),
                Node::Array(vec![4, 5]),
                Node::Object(vec![("deep".into(), 6)]),
                Node::Text(SECRET.into()),
                Node::Text(text()),
            ],
        }
    }

    fn failures() -> Vec<types::CheckFailure> {
        vec![types::CheckFailure {
            property: text(),
            reason: text(),
        }]
    }

    /// Every variant of `provider-error`: the match has no wildcard, so a new variant does not
    /// compile until it is added to the list.
    fn every_provider_error() -> Vec<wit::ProviderError> {
        let errors = vec![
            wit::ProviderError::Invalid(failures()),
            wit::ProviderError::UnknownType(text()),
            wit::ProviderError::NotFound,
            wit::ProviderError::PartiallyCreated(wit::PartialState {
                id: ID.into(),
                outputs: map(),
                reasons: vec![text(), text()],
            }),
            wit::ProviderError::Failed(text()),
        ];
        for error in &errors {
            match error {
                wit::ProviderError::Invalid(_)
                | wit::ProviderError::UnknownType(_)
                | wit::ProviderError::NotFound
                | wit::ProviderError::PartiallyCreated(_)
                | wit::ProviderError::Failed(_) => {}
            }
        }
        errors
    }

    /// `shown` (a host value's `Debug` and `Display`) holds no plaintext of the secret.
    fn assert_masked(what: &str, shown: &str) {
        assert!(
            !shown.contains(SECRET),
            "{what} reached the host unmasked: {shown}"
        );
    }

    #[test]
    fn every_result_of_every_interface_is_masked() {
        secret_masker().learn(&Value::Secret(Box::new(SECRET.into())));

        for error in every_provider_error() {
            let error = error.into_host();
            assert_masked("a provider error", &format!("{error:?} / {error}"));
        }
        let checked = wit::CheckResult {
            inputs: map(),
            failures: failures(),
        };
        let checked = checked.into_host().unwrap();
        assert_masked("check", &format!("{checked:?}"));
        let diff = wit::DiffResult {
            changed: vec![text()],
            replaces: vec![text()],
            delete_before_replace: true,
        };
        assert_masked("diff", &format!("{:?}", diff.into_host()));
        let created = wit::Created {
            id: ID.into(),
            outputs: map(),
        };
        assert_masked("create", &format!("{:?}", created.into_host().unwrap()));
        let malformed = wit::Created {
            id: ID.into(),
            outputs: types::Value { nodes: vec![] },
        };
        assert_masked("create's id", &format!("{:?}", malformed.into_host()));
        let read = Some(wit::ReadResult {
            id: ID.into(),
            inputs: map(),
            outputs: map(),
        });
        assert_masked("read", &format!("{:?}", read.into_host().unwrap()));
        // `update`'s outputs and `invoke`'s result are values.
        assert_masked("update", &format!("{:?}", ProviderMap(map()).into_host()));
        let invoked = values::from_wit(map(), Origin::Provider).unwrap();
        assert_masked("invoke", &format!("{invoked:?}"));

        // The program interface: the errors of `run` and `resume`, the value `resume` returns,
        // and the strings of every monitor call (see `crate::load::program`).
        let failed: Result<(), String> = Err(text());
        assert_masked("run", &format!("{:?}", failed.map_err(String::into_host)));
        let resumed = values::from_wit(map(), Origin::Program).unwrap();
        assert_masked("resume", &format!("{resumed:?}"));
        crate::load::program::tests::assert_monitor_strings_masked(&text(), SECRET);
    }

    #[test]
    fn a_secret_echoed_as_plain_text_comes_back_secret_with_its_value() {
        secret_masker().learn(&Value::Secret(Box::new(SECRET.into())));
        let map = ProviderMap(map()).into_host().unwrap();
        assert_eq!(
            map.get("plain"),
            Some(&Value::Secret(Box::new(text().into())))
        );
        assert_eq!(
            map.get("echoed"),
            Some(&Value::Secret(Box::new(SECRET.into())))
        );
    }

    /// A key cannot be secret, and renaming it would change the data: a map with a key holding
    /// a secret, at any depth, is refused, its error showing the key masked.
    #[test]
    fn a_key_holding_a_secret_is_refused() {
        secret_masker().learn(&Value::Secret(Box::new(SECRET.into())));
        let top = types::Value {
            nodes: vec![Node::Object(vec![(text(), 1)]), Node::Boolean(true)],
        };
        let nested = types::Value {
            nodes: vec![
                Node::Object(vec![("tags".into(), 1)]),
                Node::Object(vec![(format!("k-{SECRET}"), 2)]),
                Node::Boolean(true),
            ],
        };
        for value in [top, nested] {
            let error = ProviderMap(value).into_host().unwrap_err();
            assert!(
                matches!(&error, ValueError::SecretKey { masked, .. } if masked.contains("[secret]")),
                "{error:?}"
            );
            assert_masked("a refused key", &error.to_string());
        }
    }

    #[test]
    fn an_id_is_kept_as_returned() {
        secret_masker().learn(&Value::Secret(Box::new(SECRET.into())));
        let created = wit::Created {
            id: text(),
            outputs: map(),
        };
        assert_eq!(created.into_host().unwrap().id, text());
    }
}

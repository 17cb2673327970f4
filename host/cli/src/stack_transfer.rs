//! Moving a stack's state between stacks and backends: `stack export` records which secrets
//! provider sealed the state (its kind, and what finds it again: a salt, or a service's URL and
//! stack; never a key), and `stack import` into a stack whose provider differs opens every
//! secret with the source's provider and seals it with the target's, before anything is written.

use std::io::Read;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use plinth_backend::secrets::{Crypter, LazyCrypter, PassphraseCrypter, SecretsError, reseal};
use plinth_backend::service::ServiceCrypter;
use serde::{Deserialize, Serialize};

use crate::secrets::{PASSPHRASE_VAR, ProjectSecrets, Refusing, ask_passphrase};
use crate::stack_config::ProviderKind;
use crate::stack_config::StackConfig;

/// The variable holding the passphrase an exported state's secrets were sealed with, when it is
/// not the target stack's.
pub const SOURCE_PASSPHRASE_VAR: &str = "PLINTH_SOURCE_PASSPHRASE";

/// The largest checkpoint `stack import` reads. A team service takes bodies of at most 64 MiB
/// by default, gzip-compressed, and checkpoints compress four to eight times: what is larger
/// than this could not be stored there either, and reading it whole would only exhaust memory.
pub const MAX_IMPORT_BYTES: u64 = 256 << 20;

/// Reads the checkpoint to import from `from` (named `what` in errors, `size` bytes long if
/// known, else 0), refusing one larger than [`MAX_IMPORT_BYTES`] before holding more than that.
pub fn read_import(from: impl Read, size: u64, what: &str) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    if size <= MAX_IMPORT_BYTES {
        (from.take(MAX_IMPORT_BYTES + 1))
            .read_to_end(&mut bytes)
            .with_context(|| format!("cannot read {what}"))?;
    }
    if size.max(bytes.len() as u64) > MAX_IMPORT_BYTES {
        bail!(
            "{what} is larger than {} MiB, the most `stack import` reads; this is not a \
             checkpoint `plinth stack export` wrote (a stack that large is split into stacks)",
            MAX_IMPORT_BYTES >> 20
        );
    }
    Ok(bytes)
}

/// The top-level field of an export that records its secrets provider.
const FIELD: &str = "secrets_provider";

/// The provider that sealed a state's secrets, as an export records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum SealedBy {
    /// The passphrase provider, under the stack's salt (none before it sealed anything).
    Passphrase {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        salt: Option<String>,
    },
    /// The provider of the service at `url`, with stack `stack`'s key.
    Service {
        url: String,
        project: String,
        stack: String,
    },
}

impl std::fmt::Display for SealedBy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SealedBy::Passphrase { .. } => f.write_str("the passphrase provider"),
            SealedBy::Service {
                url,
                project,
                stack,
            } => write!(
                f,
                "the service at {url} (stack `{stack}` of project `{project}`)"
            ),
        }
    }
}

/// The provider that seals the secrets of `stack` now.
pub fn sealed_by(secrets: &ProjectSecrets, config: &StackConfig, stack: &str) -> Result<SealedBy> {
    Ok(match secrets.kind_of(config)? {
        ProviderKind::Passphrase => SealedBy::Passphrase {
            salt: config.encryption_salt()?,
        },
        ProviderKind::Service => {
            let url = secrets
                .service_url()
                .context("a stack with service-managed secrets is only on a service")?;
            SealedBy::Service {
                url: url.to_owned(),
                project: secrets.project().to_owned(),
                stack: stack.to_owned(),
            }
        }
    })
}

/// `export` (a checkpoint's JSON) recording `sealed_by` as its first field; the rest of it is
/// left byte for byte as it was.
pub fn stamp(export: &[u8], sealed_by: &SealedBy) -> Result<Vec<u8>> {
    let start = export
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .filter(|&i| export[i] == b'{')
        .context("the exported state is not a JSON object")?;
    let (head, rest) = export.split_at(start + 1);
    let empty = rest.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'}');
    let field = serde_json::to_string(sealed_by)?;
    let separator = if empty { "" } else { "," };
    Ok([
        head,
        format!("\"{FIELD}\":{field}{separator}").as_bytes(),
        rest,
    ]
    .concat())
}

/// The provider an export records, if it records one (exports of older plinths do not). A
/// document that is not even JSON records none: the import refuses it, saying why.
pub fn read_stamp(export: &[u8]) -> Result<Option<SealedBy>> {
    #[derive(Deserialize)]
    struct Stamped {
        #[serde(default)]
        secrets_provider: Option<serde_json::Value>,
    }
    let Ok(Stamped {
        secrets_provider: Some(stamp),
    }) = serde_json::from_slice(export)
    else {
        return Ok(None);
    };
    serde_json::from_value(stamp).context(
        "the state to import names a secrets provider this plinth does not know \
         (`secrets_provider` is malformed)",
    )
}

/// `export` with its secrets sealed for `target`: as it is if `target` sealed them already (or
/// the export does not say which provider did), else opened with the provider that did and
/// sealed by `to`. Fails, writing nothing, if a secret cannot be opened.
pub fn reseal_for(
    export: &[u8],
    target: &SealedBy,
    to: &dyn Crypter,
    secrets: &ProjectSecrets,
) -> Result<Vec<u8>> {
    let source = match read_stamp(export)? {
        Some(source) if source != *target => source,
        _ => return Ok(export.to_vec()),
    };
    let from = source_crypter(&source, secrets);
    Ok(reseal(export, from.as_ref(), to)?)
}

/// A crypter that opens what `source` sealed, unlocked only if a secret needs opening.
fn source_crypter(source: &SealedBy, secrets: &ProjectSecrets) -> Arc<dyn Crypter> {
    let what = format!("the exported state (sealed by {source})");
    match source.clone() {
        SealedBy::Passphrase { salt } => Arc::new(LazyCrypter::new(move || {
            let salt = salt.as_deref().ok_or_else(|| SecretsError::Foreign {
                what: what.clone(),
                reason: "its export records no passphrase salt, yet it holds sealed secrets"
                    .to_owned(),
            })?;
            let passphrase = source_passphrase(&what)?;
            PassphraseCrypter::unlock(&passphrase, salt, &what).map_err(|e| match e {
                SecretsError::WrongPassphrase(_) => SecretsError::Foreign {
                    what: what.clone(),
                    reason: format!(
                        "the passphrase does not open them: set {SOURCE_PASSPHRASE_VAR} to the \
                         passphrase of the stack it was exported from"
                    ),
                },
                other => other,
            })
        })),
        SealedBy::Service {
            url,
            project,
            stack,
        } => match secrets.transport_for(&url) {
            Some(transport) => Arc::new(ServiceCrypter::new(transport, &project, &stack)),
            None => Arc::new(Refusing(SecretsError::Foreign {
                what,
                reason: format!("log in to {url} (`plinth login {url}`) to open its secrets"),
            })),
        },
    }
}

/// The passphrase of an exported state's secrets: `PLINTH_SOURCE_PASSPHRASE`, else
/// `PLINTH_CONFIG_PASSPHRASE` (the same passphrase under another salt), else asked for.
fn source_passphrase(what: &str) -> Result<String, SecretsError> {
    for var in [SOURCE_PASSPHRASE_VAR, PASSPHRASE_VAR] {
        if let Some(value) = std::env::var_os(var) {
            return value.into_string().map_err(|_| SecretsError::Foreign {
                what: what.to_owned(),
                reason: format!("{var} is not valid UTF-8"),
            });
        }
    }
    ask_passphrase(&format!("Enter the passphrase of {what}: "), || {
        SecretsError::Foreign {
            what: what.to_owned(),
            reason: format!(
                "no passphrase: set {SOURCE_PASSPHRASE_VAR} to the passphrase of the stack it was \
                 exported from (or run on a terminal to be asked)"
            ),
        }
    })
}

/// Refuses `--secrets-provider service` on a backend that is not a service.
pub fn check_available(kind: ProviderKind, secrets: &ProjectSecrets) -> Result<()> {
    if kind == ProviderKind::Service && secrets.service_url().is_none() {
        bail!(
            "the service secrets provider needs a service backend (`plinth login https://…`); \
             on this backend use `--secrets-provider passphrase`"
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stamp_is_read_back_and_leaves_the_rest_as_it_was() {
        let export = b"{\n  \"version\": 2,\n  \"snapshot\": {\"resources\": []}\n}\n";
        let by = SealedBy::Passphrase {
            salt: Some("v1:abc:v1:def".into()),
        };
        let stamped = stamp(export, &by).unwrap();
        assert_eq!(read_stamp(&stamped).unwrap(), Some(by.clone()));
        let text = String::from_utf8(stamped).unwrap();
        assert!(text.ends_with("\n  \"version\": 2,\n  \"snapshot\": {\"resources\": []}\n}\n"));
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["secrets_provider"]["type"], "passphrase");
        assert_eq!(read_stamp(export).unwrap(), None);

        let service = SealedBy::Service {
            url: "https://plinth.example".into(),
            project: "p".into(),
            stack: "dev".into(),
        };
        let stamped = stamp(b" {}", &service).unwrap();
        assert_eq!(read_stamp(&stamped).unwrap(), Some(service));
        assert!(stamp(b"[1]", &by).is_err());
    }
}

//! Plugin signatures and the project's trust policy.
//!
//! A signature is a minisign signature (prehashed Ed25519) of the component's bytes, whose
//! trusted comment names the plugin, its version and its digest: `minisign -Vm plugin.wasm`
//! checks one. A project trusts the public keys its `trust.keys` names; verification is a
//! function of the plugin's name, digest, bytes, signature and that policy alone, so a run
//! verifies offline from what `Plinth.lock` keeps.

use std::io::Cursor;

use minisign::{PublicKey, SecretKey, SignatureBox};
use plinth_engine::shown::escape_controls;
use serde::{Deserialize, Serialize};
use thiserror::Error;

use super::keys::key_id;

/// A minisign signature file is about 300 bytes; one a registry or a lock gives is read only up
/// to this.
pub const MAX_SIGNATURE_BYTES: usize = 4096;

/// `trust:` in Plinth.yaml.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrustSpec {
    /// minisign public keys (`RW…`), as `plinth plugin key create` prints them.
    #[serde(default)]
    pub keys: Vec<String>,
    /// What to do with a plugin no trusted key signed; by default `warn` while no key is
    /// named, `refuse` once one is.
    #[serde(default)]
    pub unsigned: Option<Unsigned>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Unsigned {
    Refuse,
    Warn,
}

/// A trust policy, its keys parsed.
pub struct TrustPolicy {
    keys: Vec<PublicKey>,
    unsigned: Unsigned,
}

/// What verification found, for a plugin it lets run.
#[derive(Debug, PartialEq, Eq)]
pub enum Verified {
    /// Signed by the trusted key with this id.
    Signed { signer: String },
    /// Signed by no trusted key, let run with this warning.
    Warn(String),
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum Refused {
    #[error(
        "{plugin} ({digest}) is signed by key {signer}, which is none of the keys \
         Plinth.yaml's `trust.keys` names ({expected}): refused. If you trust its publisher, add \
         their public key to `trust.keys`"
    )]
    UntrustedSigner {
        plugin: String,
        digest: String,
        signer: String,
        expected: String,
    },
    #[error(
        "{plugin} ({digest}): its signature by key {signer} does not match its bytes \
         ({reason}): the component or its signature was altered; refused"
    )]
    BadSignature {
        plugin: String,
        digest: String,
        signer: String,
        reason: String,
    },
    #[error(
        "{plugin} ({digest}) is not signed, and Plinth.yaml's trust policy refuses \
         unsigned plugins: expected a signature by one of {expected} (publish it with \
         `plinth plugin publish --key`, or set `trust.unsigned: warn`)"
    )]
    Unsigned {
        plugin: String,
        digest: String,
        expected: String,
    },
    #[error("{plugin} ({digest}): its signature is not a minisign signature ({reason}); refused")]
    Malformed {
        plugin: String,
        digest: String,
        reason: String,
    },
}

impl TrustPolicy {
    /// Parses `spec`'s keys; a key that is not a minisign public key is an error naming it.
    pub fn new(spec: &TrustSpec) -> Result<TrustPolicy, String> {
        let keys = spec
            .keys
            .iter()
            .map(|text| {
                PublicKey::from_base64(text.trim()).map_err(|_| {
                    format!(
                        "`trust.keys` in Plinth.yaml: `{}` is not a minisign public key (the \
                         `RW…` line `plinth plugin key create` or `minisign -G` prints)",
                        escape_controls(text)
                    )
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let unsigned = spec.unsigned.unwrap_or(if keys.is_empty() {
            Unsigned::Warn
        } else {
            Unsigned::Refuse
        });
        Ok(TrustPolicy { keys, unsigned })
    }

    fn expected(&self) -> String {
        if self.keys.is_empty() {
            return "no key (`trust.keys` names none)".to_owned();
        }
        self.keys
            .iter()
            .map(|k| format!("key {}", key_id(k.keynum())))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Verifies `plugin` (as messages name it: ``plugin `random` ``, `policy pack oci://…`),
    /// whose component is `component` with digest `digest`, against `signature` (a minisign
    /// signature file's text, if it has one).
    pub fn verify(
        &self,
        plugin: &str,
        digest: &str,
        component: &[u8],
        signature: Option<&str>,
    ) -> Result<Verified, Refused> {
        let (plugin, digest) = (escape_controls(plugin).into_owned(), digest.to_owned());
        let not_trusted = |what: String| match self.unsigned {
            Unsigned::Warn => Ok(Verified::Warn(what)),
            Unsigned::Refuse => Err(()),
        };
        let Some(text) = signature else {
            return not_trusted(format!(
                "{plugin} ({digest}) is not signed; running it as `trust.unsigned: \
                 warn` allows"
            ))
            .map_err(|()| Refused::Unsigned {
                plugin: plugin.clone(),
                digest: digest.clone(),
                expected: self.expected(),
            });
        };
        let parsed = parse(text).map_err(|reason| Refused::Malformed {
            plugin: plugin.clone(),
            digest: digest.clone(),
            reason,
        })?;
        let signer = key_id(parsed.keynum());
        let Some(key) = self.keys.iter().find(|k| k.keynum() == parsed.keynum()) else {
            return not_trusted(format!(
                "{plugin} ({digest}) is signed by key {signer}, which `trust.keys` does \
                 not name; running it as `trust.unsigned: warn` allows"
            ))
            .map_err(|()| Refused::UntrustedSigner {
                plugin: plugin.clone(),
                digest: digest.clone(),
                signer: signer.clone(),
                expected: self.expected(),
            });
        };
        minisign::verify(key, &parsed, Cursor::new(component), true, false, false).map_err(
            |e| Refused::BadSignature {
                plugin,
                digest,
                signer: signer.clone(),
                reason: e.to_string(),
            },
        )?;
        Ok(Verified::Signed { signer })
    }
}

/// The signature file of `component`, the plugin (or, `kind` saying so, `policy-pack`)
/// `name` `version`.
pub fn sign(
    public: &PublicKey,
    secret: &SecretKey,
    kind: &str,
    name: &str,
    version: &str,
    component: &[u8],
) -> anyhow::Result<String> {
    let digest = super::oci::artifact::digest_of(component);
    let trusted = format!("plinth {kind} {name} {version} {digest}");
    let untrusted = format!("signature from plinth key {}", key_id(public.keynum()));
    let signed = minisign::sign(
        Some(public),
        secret,
        Cursor::new(component),
        Some(&trusted),
        Some(&untrusted),
    )?;
    Ok(signed.into_string())
}

/// The key id that signed `text`, a signature file.
pub fn signer(text: &str) -> Result<String, String> {
    parse(text).map(|s| key_id(s.keynum()))
}

fn parse(text: &str) -> Result<SignatureBox, String> {
    if text.len() > MAX_SIGNATURE_BYTES {
        return Err(format!(
            "{} bytes, more than a signature's {MAX_SIGNATURE_BYTES}",
            text.len()
        ));
    }
    let parsed = SignatureBox::from_string(text).map_err(|e| e.to_string())?;
    if !parsed.is_prehashed() {
        return Err("a legacy (non-prehashed) signature".to_owned());
    }
    Ok(parsed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use minisign::KeyPair;

    fn pair() -> KeyPair {
        KeyPair::generate_unencrypted_keypair().unwrap()
    }

    fn policy(keys: &[&KeyPair], unsigned: Option<Unsigned>) -> TrustPolicy {
        TrustPolicy::new(&TrustSpec {
            keys: keys.iter().map(|k| k.pk.to_base64()).collect(),
            unsigned,
        })
        .unwrap()
    }

    const BYTES: &[u8] = b"\0asm a component";

    #[test]
    fn a_trusted_signature_verifies() {
        let key = pair();
        let signature = sign(&key.pk, &key.sk, "plugin", "random", "0.1.0", BYTES).unwrap();
        assert!(signature.contains("plinth plugin random 0.1.0 sha256:"));
        let verified = policy(&[&key], None)
            .verify("plugin `random`", "sha256:x", BYTES, Some(&signature))
            .unwrap();
        assert_eq!(
            verified,
            Verified::Signed {
                signer: key_id(key.pk.keynum())
            }
        );
        assert_eq!(signer(&signature).unwrap(), key_id(key.pk.keynum()));
    }

    #[test]
    fn refusals_name_plugin_digest_and_what_was_expected() {
        let (trusted, other) = (pair(), pair());
        let by_other = sign(&other.pk, &other.sk, "plugin", "random", "0.1.0", BYTES).unwrap();
        let strict = policy(&[&trusted], None);
        let err = strict
            .verify("plugin `random`", "sha256:ab", BYTES, Some(&by_other))
            .unwrap_err();
        assert!(matches!(err, Refused::UntrustedSigner { .. }), "{err}");
        let shown = err.to_string();
        assert!(
            shown.contains("`random`")
                && shown.contains("sha256:ab")
                && shown.contains(&key_id(other.pk.keynum()))
                && shown.contains(&key_id(trusted.pk.keynum())),
            "{shown}"
        );

        let by_trusted =
            sign(&trusted.pk, &trusted.sk, "plugin", "random", "0.1.0", BYTES).unwrap();
        let err = strict
            .verify(
                "plugin `random`",
                "sha256:ab",
                b"\0asm other bytes",
                Some(&by_trusted),
            )
            .unwrap_err();
        assert!(matches!(err, Refused::BadSignature { .. }), "{err}");

        let err = strict
            .verify("plugin `random`", "sha256:ab", BYTES, None)
            .unwrap_err();
        assert!(matches!(err, Refused::Unsigned { .. }), "{err}");
        assert!(err.to_string().contains("trust.unsigned: warn"), "{err}");

        let err = strict
            .verify(
                "plugin `random`",
                "sha256:ab",
                BYTES,
                Some("untrusted comment: x\n\u{1b}[2J"),
            )
            .unwrap_err();
        assert!(matches!(err, Refused::Malformed { .. }), "{err}");
        assert!(!err.to_string().contains('\u{1b}'));

        // A trusted comment altered after signing breaks the global signature.
        let altered = by_trusted.replace("random 0.1.0", "random 9.9.9");
        let err = strict
            .verify("plugin `random`", "sha256:ab", BYTES, Some(&altered))
            .unwrap_err();
        assert!(matches!(err, Refused::BadSignature { .. }), "{err}");
    }

    #[test]
    fn warn_lets_unsigned_and_foreign_run_but_never_a_bad_signature() {
        let (trusted, other) = (pair(), pair());
        let lax = policy(&[&trusted], Some(Unsigned::Warn));
        assert!(matches!(
            lax.verify("p", "d", BYTES, None),
            Ok(Verified::Warn(_))
        ));
        let by_other = sign(&other.pk, &other.sk, "plugin", "p", "1", BYTES).unwrap();
        assert!(matches!(
            lax.verify("p", "d", BYTES, Some(&by_other)),
            Ok(Verified::Warn(_))
        ));
        let by_trusted = sign(&trusted.pk, &trusted.sk, "plugin", "p", "1", BYTES).unwrap();
        assert!(matches!(
            lax.verify("p", "d", b"tampered", Some(&by_trusted)),
            Err(Refused::BadSignature { .. })
        ));
        // No key named: warn by default.
        let default = policy(&[], None);
        assert!(matches!(
            default.verify("p", "d", BYTES, None),
            Ok(Verified::Warn(_))
        ));
    }

    #[test]
    fn a_bad_key_in_the_policy_is_named() {
        let err = TrustPolicy::new(&TrustSpec {
            keys: vec!["RWQnot-a-key".into()],
            unsigned: None,
        })
        .err()
        .unwrap();
        assert!(
            err.contains("RWQnot-a-key") && err.contains("trust.keys"),
            "{err}"
        );
    }
}

//! Secrets at rest: a stack's secret values are sealed whenever state is written and opened
//! whenever it is read, so their plaintext never reaches a state file.
//!
//! The backend sees secrets through a [`Crypter`] (plinth-state's), which a [`SecretsProvider`]
//! hands out per stack. The passphrase provider ([`PassphraseCrypter`]) derives a key with Argon2id from a
//! passphrase and a per-stack salt and seals values with XChaCha20-Poly1305.

mod lazy;

use std::sync::Arc;

pub use lazy::LazyCrypter;
pub(crate) use plinth_state::secrets::Redacted;
pub use plinth_state::secrets::{Crypter, PassphraseCrypter, Remembering, SecretsError};
// For other documents that hold secrets: saved plans.
pub use plinth_state::secrets::{open_tree, seal_tree};

/// Re-seals every secret of a JSON document (an exported checkpoint): all opened with `from`,
/// then all sealed with `to`, each in one batch, so that nothing is sealed unless everything
/// opened. A document without secrets comes back as it was.
pub fn reseal(bytes: &[u8], from: &dyn Crypter, to: &dyn Crypter) -> Result<Vec<u8>, SecretsError> {
    if memchr::memmem::find(bytes, b"\"ciphertext\"").is_none() {
        return Ok(bytes.to_vec());
    }
    let malformed = |e: serde_json::Error| SecretsError::MalformedState(e.to_string());
    let mut tree: serde_json::Value = serde_json::from_slice(bytes).map_err(malformed)?;
    open_tree(&mut tree, from)?;
    seal_tree(&mut tree, to)?;
    serde_json::to_vec(&tree).map_err(malformed)
}

/// Hands out each stack's [`Crypter`]. Getting one must be cheap: a passphrase is asked for and a
/// key derived only when a secret is first sealed or opened.
pub trait SecretsProvider: Send + Sync {
    fn crypter(&self, stack: &str) -> Arc<dyn Crypter>;
}

/// The provider of a backend that was given none: any secret is an error.
pub struct NoSecrets;

impl SecretsProvider for NoSecrets {
    fn crypter(&self, stack: &str) -> Arc<dyn Crypter> {
        Arc::new(Unavailable(stack.to_owned()))
    }
}

struct Unavailable(String);

impl Unavailable {
    fn error(&self) -> SecretsError {
        SecretsError::Unavailable {
            stack: self.0.clone(),
            reason: "no secrets provider is configured".to_owned(),
        }
    }
}

impl Crypter for Unavailable {
    fn seal(&self, _: &str) -> Result<String, SecretsError> {
        Err(self.error())
    }
    fn open(&self, _: &str) -> Result<String, SecretsError> {
        Err(self.error())
    }
    fn unlock(&self) -> Result<(), SecretsError> {
        Err(self.error())
    }
}

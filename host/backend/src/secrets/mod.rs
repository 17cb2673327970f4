//! Secrets at rest: a stack's secret values are sealed whenever state is written and opened
//! whenever it is read, so their plaintext never reaches a state file.
//!
//! The backend sees secrets through a [`Crypter`], which a [`SecretsProvider`] hands out per
//! stack. The passphrase provider ([`PassphraseCrypter`]) derives a key with Argon2id from a
//! passphrase and a per-stack salt and seals values with XChaCha20-Poly1305.

mod error;
mod lazy;
mod passphrase;
mod tree;

use std::sync::Arc;

pub use error::SecretsError;
pub use lazy::LazyCrypter;
pub use passphrase::PassphraseCrypter;
pub(crate) use tree::{CodecError, Redacted, from_sealed_json, to_sealed_json};
// For other documents that hold secrets: saved plans.
pub use tree::{open_tree, seal_tree};

/// Seals and opens the secret values of one stack. Texts in, texts out: the plaintext is a
/// secret value's JSON, the sealed form a versioned string (`v1:...`).
pub trait Crypter: Send + Sync {
    fn seal(&self, plaintext: &str) -> Result<String, SecretsError>;
    fn open(&self, sealed: &str) -> Result<String, SecretsError>;
    /// Seals many values at once: a crypter that asks a service makes one request of them.
    fn seal_all(&self, plaintexts: &[String]) -> Result<Vec<String>, SecretsError> {
        plaintexts.iter().map(|text| self.seal(text)).collect()
    }
    /// Opens many values at once: a crypter that asks a service makes one request of them.
    fn open_all(&self, sealed: &[String]) -> Result<Vec<String>, SecretsError> {
        sealed.iter().map(|text| self.open(text)).collect()
    }
    /// Makes sure secrets can be sealed and opened (a passphrase asked for, a key derived) now,
    /// so that a failure shows before any work starts.
    fn unlock(&self) -> Result<(), SecretsError> {
        Ok(())
    }
}

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

//! Secrets at rest: a stack's secret values are sealed whenever state is written and opened
//! whenever it is read, so their plaintext never reaches a state file.
//!
//! State is sealed and opened through a [`Crypter`]; this module walks state documents for
//! their secrets. With the `passphrase` feature, [`PassphraseCrypter`] derives a key with
//! Argon2id from a passphrase and a per-stack salt and seals values with XChaCha20-Poly1305.

mod error;
mod kept;
mod memory;
#[cfg(any(test, feature = "passphrase"))]
mod passphrase;
mod splice;
mod tree;

pub use error::SecretsError;
pub(crate) use kept::{Kept, KeptText};
pub use memory::{Remembering, SealedMemory, Slot, secret_paths};
#[cfg(any(test, feature = "passphrase"))]
pub use passphrase::PassphraseCrypter;
pub(crate) use splice::{PlainText, SealedText};
pub use tree::{
    CodecError, Redacted, from_sealed_json, open_tree, open_trees, seal_tree, seal_trees,
    to_sealed_json,
};

/// Batches of secrets at least this long are sealed, opened and parsed on every core (a
/// checkpoint's thousands); a shorter one (a journal entry's few) costs less where it is than
/// handed to the thread pool.
const PARALLEL_BATCH: usize = 64;

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
    /// Where ciphertexts are kept for reuse in checkpoints ([`Remembering`]), if anywhere.
    fn memory(&self) -> Option<&SealedMemory> {
        None
    }
}

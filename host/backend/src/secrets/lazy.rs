//! A crypter made on first use: a passphrase is asked for, and its key derived (deliberately
//! slow), once per command and only if a secret is sealed or opened.

use std::sync::{Arc, Mutex};

use super::{Crypter, PassphraseCrypter, SecretsError};

type Unlock = Box<dyn Fn() -> Result<PassphraseCrypter, SecretsError> + Send + Sync>;

/// Calls `unlock` the first time a secret is sealed or opened, and keeps its result (a failure
/// too, so a refused passphrase is not asked for again).
pub struct LazyCrypter {
    unlock: Unlock,
    crypter: Mutex<Option<Result<Arc<PassphraseCrypter>, SecretsError>>>,
}

impl LazyCrypter {
    pub fn new(
        unlock: impl Fn() -> Result<PassphraseCrypter, SecretsError> + Send + Sync + 'static,
    ) -> LazyCrypter {
        LazyCrypter {
            unlock: Box::new(unlock),
            crypter: Mutex::new(None),
        }
    }

    fn get(&self) -> Result<Arc<PassphraseCrypter>, SecretsError> {
        let mut slot = self
            .crypter
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        slot.get_or_insert_with(|| (self.unlock)().map(Arc::new))
            .clone()
    }
}

impl Crypter for LazyCrypter {
    fn seal(&self, plaintext: &str) -> Result<String, SecretsError> {
        self.get()?.seal(plaintext)
    }

    fn open(&self, sealed: &str) -> Result<String, SecretsError> {
        self.get()?.open(sealed)
    }

    // A batch goes to the crypter whole: one lock, and its own batching. An empty one is no
    // use of a secret: a stack or configuration without secrets never derives the key.
    fn seal_all(&self, plaintexts: &[String]) -> Result<Vec<String>, SecretsError> {
        if plaintexts.is_empty() {
            return Ok(Vec::new());
        }
        self.get()?.seal_all(plaintexts)
    }

    fn open_all(&self, sealed: &[String]) -> Result<Vec<String>, SecretsError> {
        if sealed.is_empty() {
            return Ok(Vec::new());
        }
        self.get()?.open_all(sealed)
    }

    fn unlock(&self) -> Result<(), SecretsError> {
        self.get().map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn unlocks_once_and_only_when_used() {
        let calls = Arc::new(AtomicUsize::new(0));
        let counter = calls.clone();
        let lazy = LazyCrypter::new(move || {
            counter.fetch_add(1, Ordering::SeqCst);
            PassphraseCrypter::create("pw", "dev").map(|(c, _)| c)
        });
        assert_eq!(lazy.open_all(&[]).unwrap(), Vec::<String>::new());
        assert_eq!(lazy.seal_all(&[]).unwrap(), Vec::<String>::new());
        assert_eq!(calls.load(Ordering::SeqCst), 0, "an empty batch is no use");
        lazy.unlock().unwrap();
        let sealed = lazy.seal("x").unwrap();
        assert_eq!(lazy.open(&sealed).unwrap(), "x");
        let texts = vec!["a".to_owned(), "b".to_owned()];
        assert_eq!(
            lazy.open_all(&lazy.seal_all(&texts).unwrap()).unwrap(),
            texts
        );
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_failure_is_kept() {
        let calls = Arc::new(AtomicUsize::new(0));
        let counter = calls.clone();
        let lazy = LazyCrypter::new(move || {
            counter.fetch_add(1, Ordering::SeqCst);
            Err(SecretsError::WrongPassphrase("dev".into()))
        });
        assert!(lazy.seal("x").is_err());
        assert!(lazy.open("v1:x").is_err());
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }
}

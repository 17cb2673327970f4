//! The crypter of a stack whose secrets the service manages: values are sealed and opened by
//! the service, with a data key that never leaves it, a batch per request. Nothing is cached:
//! not a key (there is none here), not a value.

use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Value, json};

use super::transport::{ServiceError, Transport};
use crate::secrets::{Crypter, SecretsError};

/// The most values one request carries: a state with more secrets takes a few requests.
const MAX_VALUES: usize = 10_000;

/// Seals and opens the secrets of one stack through the service.
pub struct ServiceCrypter {
    transport: Transport,
    /// `stacks/{project}/{stack}/secrets`.
    path: String,
    stack: String,
    /// Whether the service has once said it can seal and open this stack's secrets.
    checked: AtomicBool,
}

impl ServiceCrypter {
    pub fn new(transport: Transport, project: &str, stack: &str) -> ServiceCrypter {
        ServiceCrypter {
            transport,
            path: format!("stacks/{project}/{stack}/secrets"),
            stack: stack.to_owned(),
            checked: AtomicBool::new(false),
        }
    }

    /// Sends `values` under `field` to `action` (`seal` or `open`), in as few requests as
    /// [`MAX_VALUES`] allows; the values that came back under `answer`, in order.
    fn batch(
        &self,
        action: &str,
        field: &str,
        answer: &str,
        values: &[String],
    ) -> Result<Vec<String>, SecretsError> {
        let mut done = Vec::with_capacity(values.len());
        for chunk in values.chunks(MAX_VALUES) {
            let body = json!({ field: chunk });
            let path = format!("{}/{action}", self.path);
            let reply = (self.transport)
                .call("POST", &path, None, Some(&body))
                .map_err(|e| self.unavailable(e))?;
            let texts = reply[answer].as_array().filter(|t| t.len() == chunk.len());
            let texts = texts.and_then(|t| {
                (t.iter())
                    .map(|v| v.as_str().map(str::to_owned))
                    .collect::<Option<Vec<_>>>()
            });
            let texts = texts.ok_or_else(|| SecretsError::Unavailable {
                stack: self.stack.clone(),
                reason: format!(
                    "the service answered a batch of {} values without {} `{answer}`",
                    chunk.len(),
                    chunk.len()
                ),
            })?;
            done.extend(texts);
        }
        Ok(done)
    }

    fn unavailable(&self, error: ServiceError) -> SecretsError {
        SecretsError::Unavailable {
            stack: self.stack.clone(),
            reason: format!("the service-managed secrets provider: {error}"),
        }
    }
}

impl Crypter for ServiceCrypter {
    fn seal(&self, plaintext: &str) -> Result<String, SecretsError> {
        let mut sealed = self.seal_all(&[plaintext.to_owned()])?;
        Ok(sealed.remove(0))
    }

    fn open(&self, sealed: &str) -> Result<String, SecretsError> {
        let mut opened = self.open_all(&[sealed.to_owned()])?;
        Ok(opened.remove(0))
    }

    fn seal_all(&self, plaintexts: &[String]) -> Result<Vec<String>, SecretsError> {
        if plaintexts.is_empty() {
            return Ok(Vec::new());
        }
        self.batch("seal", "plaintexts", "ciphertexts", plaintexts)
    }

    fn open_all(&self, sealed: &[String]) -> Result<Vec<String>, SecretsError> {
        if sealed.is_empty() {
            return Ok(Vec::new());
        }
        self.batch("open", "ciphertexts", "plaintexts", sealed)
    }

    /// Asks the service to open an empty batch: that fails as any batch would (no master key,
    /// no such stack, no access) before an update starts, not halfway through it.
    fn unlock(&self) -> Result<(), SecretsError> {
        if self.checked.load(Ordering::Relaxed) {
            return Ok(());
        }
        let body = json!({ "ciphertexts": Value::Array(Vec::new()) });
        let path = format!("{}/open", self.path);
        (self.transport)
            .call("POST", &path, None, Some(&body))
            .map_err(|e| self.unavailable(e))?;
        self.checked.store(true, Ordering::Relaxed);
        Ok(())
    }
}

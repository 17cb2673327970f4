//! The crypter of a stack whose secrets the service manages: values are sealed and opened by
//! the service, with a data key that never leaves it, a batch per request. Nothing is cached:
//! not a key (there is none here), not a value.

use std::sync::atomic::{AtomicBool, Ordering};

use plinth_state::protocol::{Ciphertexts, Plaintexts};
use serde::Serialize;
use serde::de::DeserializeOwned;

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

    /// Sends `values` to `action` (`seal` or `open`) as `request` makes a body of them, in as
    /// few requests as [`MAX_VALUES`] allows; the values that came back under `answer` (as
    /// `texts` takes them from the answer), in order.
    fn batch<Q: Serialize, A: DeserializeOwned>(
        &self,
        action: &str,
        answer: &str,
        values: &[String],
        request: impl Fn(Vec<String>) -> Q,
        texts: impl Fn(A) -> Vec<String>,
    ) -> Result<Vec<String>, SecretsError> {
        let mut done = Vec::with_capacity(values.len());
        for chunk in values.chunks(MAX_VALUES) {
            let body = serde_json::to_value(request(chunk.to_vec())).expect("texts serialize");
            let path = format!("{}/{action}", self.path);
            let reply = (self.transport)
                .call("POST", &path, None, Some(&body))
                .map_err(|e| self.unavailable(e))?;
            let texts = (serde_json::from_value(reply).ok().map(&texts))
                .filter(|t: &Vec<String>| t.len() == chunk.len());
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
        let request = |plaintexts| Plaintexts { plaintexts };
        let texts = |answer: Ciphertexts| answer.ciphertexts;
        self.batch("seal", "ciphertexts", plaintexts, request, texts)
    }

    fn open_all(&self, sealed: &[String]) -> Result<Vec<String>, SecretsError> {
        if sealed.is_empty() {
            return Ok(Vec::new());
        }
        let request = |ciphertexts| Ciphertexts { ciphertexts };
        let texts = |answer: Plaintexts| answer.plaintexts;
        self.batch("open", "plaintexts", sealed, request, texts)
    }

    /// Asks the service to open an empty batch: that fails as any batch would (no master key,
    /// no such stack, no access) before an update starts, not halfway through it.
    fn unlock(&self) -> Result<(), SecretsError> {
        if self.checked.load(Ordering::Relaxed) {
            return Ok(());
        }
        let body = Ciphertexts {
            ciphertexts: Vec::new(),
        };
        let body = serde_json::to_value(body).expect("texts serialize");
        let path = format!("{}/open", self.path);
        (self.transport)
            .call("POST", &path, None, Some(&body))
            .map_err(|e| self.unavailable(e))?;
        self.checked.store(true, Ordering::Relaxed);
        Ok(())
    }
}

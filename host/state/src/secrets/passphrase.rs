//! The passphrase crypter: a key derived with Argon2id from a passphrase and a per-stack salt;
//! values sealed with XChaCha20-Poly1305 under a fresh random nonce each.
//!
//! A stack's `encryptionsalt` is `v1:<base64 salt>:<sealed check value>`: the check value lets
//! a wrong passphrase be recognised at once, before any secret is opened.

use argon2::{Algorithm, Argon2, Params, Version};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use chacha20poly1305::aead::{Aead, KeyInit};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use rayon::prelude::*;

use super::{Crypter, PARALLEL_BATCH, SecretsError};

const VERSION: &str = "v1:";
const SALT_LEN: usize = 16;
const NONCE_LEN: usize = 24;
/// The plaintext of the check value in `encryptionsalt`.
const CHECK: &str = "plinth";

/// Seals and opens one stack's secrets with a key derived from its passphrase.
pub struct PassphraseCrypter {
    stack: String,
    cipher: XChaCha20Poly1305,
}

impl PassphraseCrypter {
    /// A crypter under a new random salt; also returns the `encryptionsalt` to store.
    pub fn create(
        passphrase: &str,
        stack: &str,
    ) -> Result<(PassphraseCrypter, String), SecretsError> {
        let mut salt = [0u8; SALT_LEN];
        getrandom::fill(&mut salt).map_err(|e| SecretsError::Random(e.to_string()))?;
        let crypter = PassphraseCrypter::derive(passphrase, &salt, stack)?;
        let check = crypter.seal(CHECK)?;
        let encryption_salt = format!("{VERSION}{}:{check}", BASE64.encode(salt));
        Ok((crypter, encryption_salt))
    }

    /// The crypter for a stack whose `encryptionsalt` is stored; a passphrase that does not
    /// open its check value is refused.
    pub fn unlock(
        passphrase: &str,
        encryption_salt: &str,
        stack: &str,
    ) -> Result<PassphraseCrypter, SecretsError> {
        let malformed = |reason: &str| SecretsError::MalformedSalt {
            stack: stack.to_owned(),
            reason: reason.to_owned(),
        };
        let (salt, check) = encryption_salt
            .strip_prefix(VERSION)
            .and_then(|rest| rest.split_once(':'))
            .ok_or_else(|| malformed("expected `v1:<salt>:<check>`"))?;
        let salt = BASE64
            .decode(salt)
            .map_err(|_| malformed("the salt is not base64"))?;
        if salt.len() < SALT_LEN {
            return Err(malformed("the salt is too short"));
        }
        let crypter = PassphraseCrypter::derive(passphrase, &salt, stack)?;
        match crypter.open(check) {
            Ok(text) if text == CHECK => Ok(crypter),
            Ok(_) | Err(SecretsError::Undecryptable(_)) => {
                Err(SecretsError::WrongPassphrase(stack.to_owned()))
            }
            Err(_) => Err(malformed("the check value is not a sealed value")),
        }
    }

    fn derive(
        passphrase: &str,
        salt: &[u8],
        stack: &str,
    ) -> Result<PassphraseCrypter, SecretsError> {
        let failed = |reason: String| SecretsError::KeyDerivation {
            stack: stack.to_owned(),
            reason,
        };
        let argon2 = Argon2::new(Algorithm::Argon2id, Version::V0x13, Params::default());
        let mut key = [0u8; 32];
        argon2
            .hash_password_into(passphrase.as_bytes(), salt, &mut key)
            .map_err(|e| failed(e.to_string()))?;
        let cipher = XChaCha20Poly1305::new_from_slice(&key).map_err(|e| failed(e.to_string()))?;
        Ok(PassphraseCrypter {
            stack: stack.to_owned(),
            cipher,
        })
    }

    fn malformed(&self, reason: &str) -> SecretsError {
        SecretsError::Malformed {
            stack: self.stack.clone(),
            reason: reason.to_owned(),
        }
    }
}

impl PassphraseCrypter {
    /// Seals `plaintext` under `nonce`, which must be fresh and random.
    fn seal_with(&self, nonce: &[u8], plaintext: &str) -> Result<String, SecretsError> {
        let ciphertext = self
            .cipher
            .encrypt(XNonce::from_slice(nonce), plaintext.as_bytes())
            .map_err(|_| self.malformed("the value is too large to seal"))?;
        let mut sealed = Vec::with_capacity(NONCE_LEN + ciphertext.len());
        sealed.extend_from_slice(nonce);
        sealed.extend_from_slice(&ciphertext);
        Ok(format!("{VERSION}{}", BASE64.encode(sealed)))
    }
}

/// `n` fresh random nonces, drawn from the system in one call.
fn nonces(n: usize) -> Result<Vec<u8>, SecretsError> {
    let mut nonces = vec![0u8; n * NONCE_LEN];
    getrandom::fill(&mut nonces).map_err(|e| SecretsError::Random(e.to_string()))?;
    Ok(nonces)
}

impl Crypter for PassphraseCrypter {
    fn seal(&self, plaintext: &str) -> Result<String, SecretsError> {
        self.seal_with(&nonces(1)?, plaintext)
    }

    /// Every value still gets a nonce of its own; they are drawn in one system call, which
    /// otherwise costs as much as sealing a short value (a checkpoint of thousands of secrets).
    fn seal_all(&self, plaintexts: &[String]) -> Result<Vec<String>, SecretsError> {
        let nonces = nonces(plaintexts.len())?;
        if plaintexts.len() < PARALLEL_BATCH {
            return (plaintexts.iter().zip(nonces.chunks_exact(NONCE_LEN)))
                .map(|(plaintext, nonce)| self.seal_with(nonce, plaintext))
                .collect();
        }
        (plaintexts
            .par_iter()
            .zip(nonces.par_chunks_exact(NONCE_LEN)))
        .map(|(plaintext, nonce)| self.seal_with(nonce, plaintext))
        .collect()
    }

    fn open_all(&self, sealed: &[String]) -> Result<Vec<String>, SecretsError> {
        if sealed.len() < PARALLEL_BATCH {
            return sealed.iter().map(|text| self.open(text)).collect();
        }
        sealed.par_iter().map(|text| self.open(text)).collect()
    }

    fn open(&self, sealed: &str) -> Result<String, SecretsError> {
        let body = sealed
            .strip_prefix(VERSION)
            .ok_or_else(|| self.malformed("unsupported format (expected `v1:...`)"))?;
        let bytes = BASE64
            .decode(body)
            .map_err(|_| self.malformed("not base64"))?;
        if bytes.len() < NONCE_LEN {
            return Err(self.malformed("too short"));
        }
        let (nonce, ciphertext) = bytes.split_at(NONCE_LEN);
        let plaintext = self
            .cipher
            .decrypt(XNonce::from_slice(nonce), ciphertext)
            .map_err(|_| SecretsError::Undecryptable(self.stack.clone()))?;
        String::from_utf8(plaintext).map_err(|_| self.malformed("the plaintext is not UTF-8"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seals_and_opens_and_refuses_a_wrong_passphrase() {
        let (crypter, salt) = PassphraseCrypter::create("correct horse", "dev").unwrap();
        let sealed = crypter.seal("\"hunter2\"").unwrap();
        assert!(
            sealed.starts_with("v1:") && !sealed.contains("hunter2"),
            "{sealed}"
        );
        assert_ne!(
            crypter.seal("\"hunter2\"").unwrap(),
            sealed,
            "nonces are fresh"
        );
        assert_eq!(crypter.open(&sealed).unwrap(), "\"hunter2\"");

        let again = PassphraseCrypter::unlock("correct horse", &salt, "dev").unwrap();
        assert_eq!(again.open(&sealed).unwrap(), "\"hunter2\"");
        let wrong = PassphraseCrypter::unlock("wrong", &salt, "dev")
            .err()
            .unwrap();
        assert_eq!(wrong, SecretsError::WrongPassphrase("dev".into()));
        assert_eq!(wrong.to_string(), "incorrect passphrase for stack `dev`");
    }

    /// Sealed in a batch, every value has a nonce of its own and opens to its plaintext.
    #[test]
    fn values_sealed_together_have_distinct_nonces() {
        let (crypter, _) = PassphraseCrypter::create("pw", "dev").unwrap();
        let plaintexts: Vec<String> = (0..100).map(|_| "\"same\"".to_owned()).collect();
        let sealed = crypter.seal_all(&plaintexts).unwrap();
        let nonces: std::collections::HashSet<Vec<u8>> = (sealed.iter())
            .map(|s| BASE64.decode(&s[3..]).unwrap()[..NONCE_LEN].to_vec())
            .collect();
        assert_eq!(nonces.len(), 100);
        assert_eq!(crypter.open_all(&sealed).unwrap(), plaintexts);
        assert!(crypter.seal_all(&[]).unwrap().is_empty());
    }

    #[test]
    fn tampered_or_malformed_ciphertexts_are_errors() {
        let (crypter, _) = PassphraseCrypter::create("pw", "dev").unwrap();
        let sealed = crypter.seal("secret").unwrap();
        let mut bytes = BASE64.decode(&sealed[3..]).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        let tampered = format!("v1:{}", BASE64.encode(bytes));
        assert_eq!(
            crypter.open(&tampered),
            Err(SecretsError::Undecryptable("dev".into()))
        );
        for bad in ["", "v2:abc", "v1:***", "v1:AAAA"] {
            assert!(
                matches!(crypter.open(bad), Err(SecretsError::Malformed { .. })),
                "{bad}"
            );
        }
        for bad in [
            "",
            "v1:",
            "v1:***:x",
            "v1:AAAA:v1:AAAA",
            "v1:AAAAAAAAAAAAAAAAAAAAAA==:garbage",
        ] {
            assert!(
                matches!(
                    PassphraseCrypter::unlock("pw", bad, "dev"),
                    Err(SecretsError::MalformedSalt { .. })
                ),
                "{bad}"
            );
        }
    }
}

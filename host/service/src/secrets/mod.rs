//! Service-managed secrets: each stack has a random data key of its own, stored only sealed by
//! the service's master key (a key file given to `plinth serve --master-key`), and clients ask
//! the service to seal and open a stack's values, a batch per request.
//!
//! The data key never leaves the service, as with Pulumi's service: a client that can no longer
//! authenticate (a revoked token, someone who left the team) can no longer open anything, no
//! client machine keeps a key that outlives its access, and the database alone (a dump, a
//! backup) opens nothing without the master key, which only the service processes hold. The
//! price is a request per batch of values, hence the batch endpoints.

mod master;

pub use master::{MasterKey, MasterKeys, Rotated, rotate};

use anyhow::Context;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use sqlx::PgPool;

use crate::error::ApiError;

const KEY_LEN: usize = 32;
const NONCE_LEN: usize = 24;
/// The prefix of a value the service sealed (a format version).
const VERSION: &str = "v1:";

/// Seals `plaintext` under `cipher` with a fresh random nonce: `nonce || ciphertext`.
fn seal(cipher: &XChaCha20Poly1305, plaintext: &[u8], aad: &[u8]) -> anyhow::Result<Vec<u8>> {
    let mut nonce = [0u8; NONCE_LEN];
    getrandom::fill(&mut nonce).context("cannot draw random bytes for a nonce")?;
    let payload = Payload {
        msg: plaintext,
        aad,
    };
    let sealed = (cipher.encrypt(XNonce::from_slice(&nonce), payload))
        .map_err(|_| anyhow::anyhow!("a value too large to seal"))?;
    Ok([nonce.as_slice(), &sealed].concat())
}

/// Opens what [`seal`] sealed; `None` if it was sealed under another key or altered.
fn open(cipher: &XChaCha20Poly1305, sealed: &[u8], aad: &[u8]) -> Option<Vec<u8>> {
    if sealed.len() < NONCE_LEN {
        return None;
    }
    let (nonce, msg) = sealed.split_at(NONCE_LEN);
    cipher
        .decrypt(XNonce::from_slice(nonce), Payload { msg, aad })
        .ok()
}

/// The associated data binding a sealed data key to its stack: a key copied to another
/// stack's row does not open.
fn key_binding(stack_id: i64) -> Vec<u8> {
    format!("plinth stack key {stack_id}").into_bytes()
}

/// The refusal of a service started without a master key.
fn no_master_key() -> ApiError {
    ApiError::NotConfigured(
        "this service manages no secrets: it was started without a master key (its \
         administrator creates one with `plinth serve key create FILE` and starts it with \
         `--master-key FILE`); meanwhile use the passphrase provider \
         (`plinth stack init NAME --secrets-provider passphrase`)"
            .to_owned(),
    )
}

/// The data key of stack `stack_id`, made on first use. Two replicas making one at once store
/// one of them, and both use that one.
async fn data_key(
    pool: &PgPool,
    master: Option<&MasterKeys>,
    stack_id: i64,
) -> Result<XChaCha20Poly1305, ApiError> {
    let master = master.ok_or_else(no_master_key)?;
    let binding = key_binding(stack_id);
    let stored: Option<(Vec<u8>,)> =
        sqlx::query_as("SELECT sealed_key FROM stack_keys WHERE stack_id = $1")
            .bind(stack_id)
            .fetch_optional(pool)
            .await?;
    let sealed = match stored {
        Some((sealed,)) => sealed,
        None => new_data_key(pool, master, stack_id, &binding).await?,
    };
    // Not this request's fault, nor the database's: this replica was started with keys the
    // database no longer uses. Another replica may serve it (503); its operator must act.
    let key = master.open_data_key(&sealed, &binding).ok_or_else(|| {
        ApiError::Unavailable(
            "this replica of the service cannot open the stack's secrets: none of its master \
             keys is the database's (the key was rotated with `plinth serve key rotate`); its \
             administrator must restart it with the current key (`--master-key FILE`)"
                .to_owned(),
        )
    })?;
    Ok(XChaCha20Poly1305::new_from_slice(&key).expect("a data key is 32 bytes"))
}

/// Makes and stores a data key for stack `stack_id`, sealed by the database's current master
/// key, and returns the one stored (another replica's, if it made one first).
async fn new_data_key(
    pool: &PgPool,
    master: &MasterKeys,
    stack_id: i64,
    binding: &[u8],
) -> Result<Vec<u8>, ApiError> {
    let mut tx = pool.begin().await?;
    let current = master.current(&mut tx).await.map_err(|e| {
        ApiError::Unavailable(format!(
            "this replica of the service cannot seal secrets: {e}"
        ))
    })?;
    let mut key = [0u8; KEY_LEN];
    getrandom::fill(&mut key).map_err(|e| ApiError::Internal(e.to_string()))?;
    let sealed =
        seal(&current.cipher, &key, binding).map_err(|e| ApiError::Internal(e.to_string()))?;
    let (stored,): (Vec<u8>,) = sqlx::query_as(
        "INSERT INTO stack_keys (stack_id, sealed_key) VALUES ($1, $2)
         ON CONFLICT (stack_id) DO UPDATE SET stack_id = EXCLUDED.stack_id
         RETURNING sealed_key",
    )
    .bind(stack_id)
    .bind(sealed)
    .fetch_one(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(stored)
}

/// Seals each of `plaintexts` with the data key of stack `stack_id`.
pub(crate) async fn seal_values(
    pool: &PgPool,
    master: Option<&MasterKeys>,
    stack_id: i64,
    plaintexts: &[String],
) -> Result<Vec<String>, ApiError> {
    let cipher = data_key(pool, master, stack_id).await?;
    plaintexts
        .iter()
        .map(|text| {
            let sealed = seal(&cipher, text.as_bytes(), b"")
                .map_err(|e| ApiError::BadRequest(e.to_string()))?;
            Ok(format!("{VERSION}{}", BASE64.encode(sealed)))
        })
        .collect()
}

/// Opens each of `ciphertexts` with the data key of stack `stack` (id `stack_id`); one that does
/// not open (sealed for another stack, by another provider, or altered) refuses the batch.
pub(crate) async fn open_values(
    pool: &PgPool,
    master: Option<&MasterKeys>,
    stack_id: i64,
    stack: &str,
    ciphertexts: &[String],
) -> Result<Vec<String>, ApiError> {
    let cipher = data_key(pool, master, stack_id).await?;
    (ciphertexts.iter().enumerate())
        .map(|(i, sealed)| {
            let refused = |why: &str| {
                ApiError::BadRequest(format!(
                    "secret {} of the batch cannot be opened with the key of stack `{stack}`: {why}",
                    i + 1
                ))
            };
            let bytes = (sealed.strip_prefix(VERSION))
                .and_then(|body| BASE64.decode(body).ok())
                .ok_or_else(|| refused("it is not a value this service sealed (`v1:<base64>`)"))?;
            let plain = open(&cipher, &bytes, b"").ok_or_else(|| {
                refused("it was sealed for another stack or by another secrets provider, or altered")
            })?;
            String::from_utf8(plain).map_err(|_| refused("its plaintext is not UTF-8"))
        })
        .collect()
}

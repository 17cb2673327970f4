//! The master keys that seal the stacks' data keys: key files, the database's check value that
//! says which key is current, and rotation to a new key.
//!
//! Which key seals a new data key is decided by the database, not by a replica's flags: it is
//! the key the check value in `master_key_check` opens with. A replica may hold several keys
//! (during a rotation: the old and the new); it opens a data key with whichever of them sealed
//! it. So a rotation needs no downtime: restart every replica with both keys, rotate (one
//! transaction re-seals every data key and moves the check value to the new key), then restart
//! every replica with the new key only.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use chacha20poly1305::XChaCha20Poly1305;
use chacha20poly1305::aead::KeyInit;
use sqlx::{PgConnection, PgPool};

use super::{KEY_LEN, key_binding, open, seal};

/// What the check value in `master_key_check` seals.
const CHECK: &[u8] = b"plinth master key";
/// The associated data of the check value.
const CHECK_BINDING: &[u8] = b"check";

/// One key that seals stacks' data keys, read from a key file.
pub struct MasterKey {
    pub(super) cipher: XChaCha20Poly1305,
    /// Where it was read from, for messages.
    path: PathBuf,
}

impl std::fmt::Debug for MasterKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MasterKey({})", self.path.display())
    }
}

impl MasterKey {
    /// Writes a new random master key to `path` (base64, readable by its owner only); an
    /// existing file is never overwritten: the data keys it seals would be lost with it.
    pub fn create(path: &Path) -> anyhow::Result<()> {
        let mut key = [0u8; KEY_LEN];
        getrandom::fill(&mut key).context("cannot draw random bytes for the key")?;
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::AlreadyExists => anyhow::anyhow!(
                    "{} already exists: a master key is never overwritten (the stack keys it \
                     seals would be lost); choose another path",
                    path.display()
                ),
                _ => anyhow::Error::new(e).context(format!("cannot create {}", path.display())),
            })?;
        writeln!(file, "{}", BASE64.encode(key))
            .and_then(|()| file.sync_all())
            .with_context(|| format!("cannot write {}", path.display()))
    }

    /// Reads the master key in `path`.
    pub fn load(path: &Path) -> anyhow::Result<MasterKey> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the master key {}", path.display()))?;
        let key = BASE64
            .decode(text.trim())
            .ok()
            .filter(|k| k.len() == KEY_LEN);
        let Some(key) = key else {
            bail!(
                "{} is not a plinth master key (32 bytes in base64); create one with \
                 `plinth serve key create FILE`",
                path.display()
            );
        };
        let mode = std::fs::metadata(path)?.permissions().mode();
        if mode & 0o077 != 0 {
            tracing::warn!(
                "the master key {} is readable by others (mode {:o}): restrict it with `chmod 600`",
                path.display(),
                mode & 0o777
            );
        }
        Ok(MasterKey {
            cipher: XChaCha20Poly1305::new_from_slice(&key).expect("the key is 32 bytes"),
            path: path.to_owned(),
        })
    }

    fn opens_check(&self, sealed: &[u8]) -> bool {
        open(&self.cipher, sealed, CHECK_BINDING).is_some_and(|text| text == CHECK)
    }
}

/// The master keys a service holds: usually one; during a rotation, the old and the new.
#[derive(Debug)]
pub struct MasterKeys(Vec<MasterKey>);

impl MasterKeys {
    /// Reads each key file; at least one.
    pub fn load(paths: &[PathBuf]) -> anyhow::Result<MasterKeys> {
        if paths.is_empty() {
            bail!("no master key file given");
        }
        let keys = paths.iter().map(|path| MasterKey::load(path));
        Ok(MasterKeys(keys.collect::<anyhow::Result<_>>()?))
    }

    /// Makes sure one of these keys is the database's current master key: the first service to
    /// run with keys records a check value sealed by the first of them; any later one must hold
    /// the key that opens it, or it would seal what the other replicas cannot open.
    pub async fn check(&self, pool: &PgPool) -> anyhow::Result<()> {
        let check = seal(&self.0[0].cipher, CHECK, CHECK_BINDING)?;
        sqlx::query("INSERT INTO master_key_check (sealed) VALUES ($1) ON CONFLICT DO NOTHING")
            .bind(check)
            .execute(pool)
            .await
            .context("cannot record the master key's check value")?;
        let (stored,): (Vec<u8>,) = sqlx::query_as("SELECT sealed FROM master_key_check")
            .fetch_one(pool)
            .await
            .context("cannot read the master key's check value")?;
        if self.current_of(&stored).is_none() {
            bail!(
                "{} not the one this database's secrets are sealed with: start the service with \
                 the key file it was first started with, or with the key it was last rotated to \
                 (`plinth serve key rotate`)",
                self.describe()
            );
        }
        Ok(())
    }

    /// Which of these keys opens the check value `sealed`.
    fn current_of(&self, sealed: &[u8]) -> Option<&MasterKey> {
        self.0.iter().find(|key| key.opens_check(sealed))
    }

    /// The key new data keys are sealed with: the database's current one, read under a share
    /// lock held until `conn`'s transaction ends, so that a rotation cannot slip in between
    /// and leave a data key sealed by the key it rotated away from.
    pub(super) async fn current(&self, conn: &mut PgConnection) -> Result<&MasterKey, String> {
        let stored: Option<(Vec<u8>,)> =
            sqlx::query_as("SELECT sealed FROM master_key_check FOR SHARE")
                .fetch_optional(conn)
                .await
                .map_err(|e| e.to_string())?;
        let stored = stored.map(|(sealed,)| sealed).unwrap_or_default();
        self.current_of(&stored).ok_or_else(|| {
            "the database's master key was rotated to a key this service was not given: \
             restart it with the current key (`--master-key FILE`)"
                .to_owned()
        })
    }

    /// Opens a data key sealed (for `binding`) by any of these keys.
    pub(super) fn open_data_key(&self, sealed: &[u8], binding: &[u8]) -> Option<Vec<u8>> {
        self.0
            .iter()
            .find_map(|key| open(&key.cipher, sealed, binding))
    }

    /// "the master key FILE is" or "none of the master keys FILE, FILE is".
    fn describe(&self) -> String {
        let paths: Vec<String> = (self.0.iter())
            .map(|key| key.path.display().to_string())
            .collect();
        match paths.as_slice() {
            [one] => format!("the master key {one} is"),
            many => format!("none of the master keys {} is", many.join(", ")),
        }
    }
}

/// What a rotation did.
#[derive(Debug, PartialEq, Eq)]
pub struct Rotated {
    /// Data keys re-sealed with the new key.
    pub resealed: usize,
    /// Data keys that were already sealed with it (a rotation run again after an interruption).
    pub already: usize,
}

/// Re-seals every stack's data key with `to` and makes it the database's current master key,
/// in one transaction: all of it happens or none. `from` are the keys the data keys are sealed
/// with now. Running it again once done changes nothing.
pub async fn rotate(pool: &PgPool, from: &MasterKeys, to: &MasterKey) -> anyhow::Result<Rotated> {
    let mut tx = pool.begin().await.context("cannot begin the rotation")?;
    let stored: Option<(Vec<u8>,)> =
        sqlx::query_as("SELECT sealed FROM master_key_check FOR UPDATE")
            .fetch_optional(&mut *tx)
            .await
            .context("cannot read the master key's check value")?;
    if let Some((stored,)) = &stored
        && !to.opens_check(stored)
        && from.current_of(stored).is_none()
    {
        bail!(
            "{} not this database's current master key, and neither is {}: nothing was changed",
            from.describe(),
            to.path.display()
        );
    }
    let rows: Vec<(i64, String, String, Vec<u8>)> = sqlx::query_as(
        "SELECT k.stack_id, s.project, s.name, k.sealed_key
         FROM stack_keys k JOIN stacks s ON s.id = k.stack_id
         ORDER BY k.stack_id FOR UPDATE OF k",
    )
    .fetch_all(&mut *tx)
    .await
    .context("cannot read the stacks' data keys")?;
    let mut rotated = Rotated {
        resealed: 0,
        already: 0,
    };
    for (stack_id, project, name, sealed) in rows {
        let binding = key_binding(stack_id);
        if open(&to.cipher, &sealed, &binding).is_some() {
            rotated.already += 1;
            continue;
        }
        let Some(key) = from.open_data_key(&sealed, &binding) else {
            bail!(
                "the data key of stack {project}/{name} opens with none of the keys given \
                 (--from and --to): nothing was changed"
            );
        };
        sqlx::query("UPDATE stack_keys SET sealed_key = $2 WHERE stack_id = $1")
            .bind(stack_id)
            .bind(seal(&to.cipher, &key, &binding)?)
            .execute(&mut *tx)
            .await
            .context("cannot store a re-sealed data key")?;
        rotated.resealed += 1;
    }
    sqlx::query(
        "INSERT INTO master_key_check (sealed) VALUES ($1)
         ON CONFLICT (id) DO UPDATE SET sealed = EXCLUDED.sealed, created = now()",
    )
    .bind(seal(&to.cipher, CHECK, CHECK_BINDING)?)
    .execute(&mut *tx)
    .await
    .context("cannot record the new master key's check value")?;
    let detail = format!(
        "{} stack keys re-sealed, {} already were",
        rotated.resealed, rotated.already
    );
    let (actor, action) = (crate::audit::Actor::cli(), crate::audit::Action::KeyRotated);
    crate::audit::record(&mut tx, &actor, action, None, &detail)
        .await
        .context("cannot record the rotation in the audit log")?;
    tx.commit().await.context("cannot commit the rotation")?;
    Ok(rotated)
}

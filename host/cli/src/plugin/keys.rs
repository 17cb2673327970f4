//! Signing keys under `$PLINTH_HOME/keys`: minisign key pairs (`NAME.key`, `NAME.pub`, the
//! files `minisign -s`/`-p` read), made by `plinth plugin key create` and used by
//! `plinth plugin publish --key`.
//!
//! The secret key is encrypted with a password (minisign's scrypt) unless made with
//! `--unencrypted`; either way it is written at mode 0600 from its first byte, in a directory
//! at 0700, and a secret key others can read is refused, as ssh refuses one.

use std::fs::{self, OpenOptions};
use std::io::{IsTerminal, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use minisign::{KeyPair, PublicKey, PublicKeyBox, SecretKey, SecretKeyBox};
use plinth_engine::shown::escape_controls;

/// The variable a key's password is read from, before any prompt.
pub const PASSWORD_VAR: &str = "PLINTH_KEY_PASSWORD";
const MAX_NAME: usize = 64;
/// Key files are a few hundred bytes; anything larger is not one.
const MAX_KEY_FILE: u64 = 16 * 1024;

/// The key pairs in one plinth home.
pub struct Keys {
    dir: PathBuf,
}

/// A key pair as `plugin key ls` shows it.
#[derive(Debug, serde::Serialize)]
pub struct KeyInfo {
    pub name: String,
    /// minisign's key id: 16 hex digits.
    pub id: String,
    /// The public key, as `trust.keys` in Plinth.yaml and `minisign -P` take it.
    pub public_key: String,
    pub encrypted: bool,
}

/// Whether `plugin key create` protects the secret key with a password.
pub enum Protection {
    Password,
    Unencrypted,
}

impl Keys {
    pub fn in_home(home: &Path) -> Keys {
        Keys {
            dir: home.join("keys"),
        }
    }

    /// Makes the key pair `name`; refuses to replace one.
    pub fn create(&self, name: &str, protection: Protection) -> Result<KeyInfo> {
        check_key_name(name)?;
        let (secret_path, public_path) = (self.secret_path(name), self.public_path(name));
        if secret_path.exists() || public_path.exists() {
            bail!(
                "a key named `{name}` exists already ({}); choose another name (a key is never \
                 replaced: what it signed would no longer verify)",
                secret_path.display()
            );
        }
        let (pair, encrypted) = match protection {
            Protection::Unencrypted => (KeyPair::generate_unencrypted_keypair()?, false),
            Protection::Password => {
                let password = new_password(name)?;
                (KeyPair::generate_encrypted_keypair(Some(password))?, true)
            }
        };
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)
            .with_context(|| format!("cannot create {}", self.dir.display()))?;
        let comment = format!("plinth secret key {name}");
        write_new(
            &secret_path,
            &pair.sk.to_box(Some(&comment))?.to_bytes(),
            0o600,
        )?;
        write_new(&public_path, &pair.pk.to_box()?.to_bytes(), 0o644)?;
        Ok(info(name, &pair.pk, encrypted))
    }

    /// Every key pair, by name.
    pub fn list(&self) -> Result<Vec<KeyInfo>> {
        let entries = match fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", self.dir.display())),
        };
        let mut keys = Vec::new();
        for entry in entries {
            let file_name = entry?.file_name();
            let Some(name) = file_name.to_str().and_then(|f| f.strip_suffix(".pub")) else {
                continue;
            };
            if check_key_name(name).is_err() {
                continue;
            }
            let public = self.public_key(name)?;
            let encrypted = read_key_file(&self.secret_path(name))
                .ok()
                .and_then(|text| SecretKeyBox::from_string(&text).ok())
                .and_then(|b| b.into_unencrypted_secret_key().ok())
                .is_none_or(|k| k.is_encrypted());
            keys.push(info(name, &public, encrypted));
        }
        keys.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(keys)
    }

    pub fn public_key(&self, name: &str) -> Result<PublicKey> {
        check_key_name(name)?;
        let path = self.public_path(name);
        let text = read_key_file(&path).with_context(|| self.no_such_key(name))?;
        PublicKeyBox::from_string(&text)
            .and_then(PublicKeyBox::into_public_key)
            .with_context(|| format!("{} is not a minisign public key", path.display()))
    }

    /// The key pair `name`, its secret key decrypted with `PLINTH_KEY_PASSWORD` or a password
    /// asked for at the terminal.
    pub fn key_pair(&self, name: &str) -> Result<(PublicKey, SecretKey)> {
        let public = self.public_key(name)?;
        let path = self.secret_path(name);
        let metadata = fs::metadata(&path).with_context(|| self.no_such_key(name))?;
        if metadata.mode() & 0o077 != 0 {
            bail!(
                "{} can be read by others (mode {:o}): a secret key must be yours alone; \
                 `chmod 600 {}` if no one else has read it, else make a new key",
                path.display(),
                metadata.mode() & 0o777,
                path.display()
            );
        }
        let text = read_key_file(&path)?;
        let key_box = SecretKeyBox::from_string(&text)?;
        let unencrypted = key_box
            .clone()
            .into_unencrypted_secret_key()
            .ok()
            .filter(|k| !k.is_encrypted());
        let secret = match unencrypted {
            Some(secret) => secret,
            None => {
                let password = password(&format!("Password of the key `{name}`: "), name)?;
                key_box.into_secret_key(Some(password)).map_err(|_| {
                    anyhow::anyhow!(
                        "cannot decrypt the secret key `{name}` ({}): wrong password?",
                        path.display()
                    )
                })?
            }
        };
        if PublicKey::from_secret_key(&secret)?.keynum() != public.keynum() {
            bail!(
                "{} and {} are not one key pair; restore them from a backup",
                path.display(),
                self.public_path(name).display()
            );
        }
        Ok((public, secret))
    }

    pub fn secret_path(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.key"))
    }

    fn public_path(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.pub"))
    }

    fn no_such_key(&self, name: &str) -> String {
        format!(
            "there is no key named `{name}` in {}; make one with `plinth plugin key create {name}` \
             (`plinth plugin key ls` lists them)",
            self.dir.display()
        )
    }
}

/// minisign's key id of `key`, as `minisign` shows it: 16 uppercase hex digits.
pub fn key_id(keynum: &[u8]) -> String {
    let mut le = [0u8; 8];
    le.copy_from_slice(&keynum[..8]);
    format!("{:016X}", u64::from_le_bytes(le))
}

fn info(name: &str, public: &PublicKey, encrypted: bool) -> KeyInfo {
    KeyInfo {
        name: name.to_owned(),
        id: key_id(public.keynum()),
        public_key: public.to_base64(),
        encrypted,
    }
}

/// A key name becomes a file name: letters, digits, `-` and `_` only, so that no name reaches
/// outside the keys directory.
pub fn check_key_name(name: &str) -> Result<()> {
    let mut chars = name.chars();
    let ok = name.len() <= MAX_NAME
        && chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'));
    if !ok {
        bail!(
            "`{}` is not a key name: use up to {MAX_NAME} letters, digits, `-` and `_`, starting \
             with a letter or digit",
            escape_controls(name)
        );
    }
    Ok(())
}

fn read_key_file(path: &Path) -> Result<String> {
    let size = fs::metadata(path)
        .with_context(|| format!("cannot read {}", path.display()))?
        .len();
    if size > MAX_KEY_FILE {
        bail!("{} is {size} bytes: not a key file", path.display());
    }
    fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))
}

/// Creates `path` with `mode` from the start (never readable by others, even for a moment),
/// failing if it exists.
fn write_new(path: &Path, bytes: &[u8], mode: u32) -> Result<()> {
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)
        .with_context(|| format!("cannot create {}", path.display()))?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .with_context(|| format!("cannot write {}", path.display()))
}

/// The password for a new key: `PLINTH_KEY_PASSWORD`, or asked for twice at the terminal.
fn new_password(name: &str) -> Result<String> {
    if let Some(password) = password_from_env() {
        return Ok(password);
    }
    let first = password(&format!("Password for the new key `{name}`: "), name)?;
    let second = password("The password again: ", name)?;
    if first != second {
        bail!("the passwords did not match; nothing was created");
    }
    Ok(first)
}

fn password_from_env() -> Option<String> {
    std::env::var(PASSWORD_VAR).ok().filter(|p| !p.is_empty())
}

/// `PLINTH_KEY_PASSWORD`, else a password asked for without echo at the terminal.
fn password(prompt: &str, name: &str) -> Result<String> {
    if let Some(password) = password_from_env() {
        return Ok(password);
    }
    if !std::io::stdin().is_terminal() {
        bail!(
            "the key `{name}` needs a password and there is no terminal to ask for it: set \
             {PASSWORD_VAR} (or make a key without one with `plinth plugin key create \
             --unencrypted`, kept at mode 0600)"
        );
    }
    let password = rpassword::prompt_password(prompt).context("cannot read the password")?;
    if password.is_empty() {
        bail!("an empty password protects nothing; give one, or use --unencrypted");
    }
    Ok(password)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_stay_inside_the_keys_directory() {
        for bad in [
            "",
            "..",
            "../x",
            "a/b",
            "-x",
            ".hidden",
            "a b",
            "x\u{1b}[2J",
            &"a".repeat(65),
        ] {
            let err = check_key_name(bad).unwrap_err().to_string();
            assert!(err.contains("is not a key name"), "{bad:?}: {err}");
            assert!(!err.contains('\u{1b}'), "{err}");
        }
        for good in ["release", "ci-2026", "A_b9"] {
            check_key_name(good).unwrap();
        }
    }

    #[test]
    fn an_unencrypted_key_is_private_and_round_trips() {
        let home = tempfile::tempdir().unwrap();
        let keys = Keys::in_home(home.path());
        let made = keys.create("dev", Protection::Unencrypted).unwrap();
        assert!(!made.encrypted && made.id.len() == 16);
        let mode = |p: &Path| fs::metadata(p).unwrap().mode() & 0o777;
        assert_eq!(mode(&keys.secret_path("dev")), 0o600);
        assert_eq!(mode(&keys.dir), 0o700);
        let (public, _) = keys.key_pair("dev").unwrap();
        assert_eq!(public.to_base64(), made.public_key);
        let listed = keys.list().unwrap();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].id, made.id);
        let err = keys
            .create("dev", Protection::Unencrypted)
            .unwrap_err()
            .to_string();
        assert!(err.contains("exists already"), "{err}");

        fs::set_permissions(
            keys.secret_path("dev"),
            std::os::unix::fs::PermissionsExt::from_mode(0o644),
        )
        .unwrap();
        let err = keys.key_pair("dev").unwrap_err().to_string();
        assert!(err.contains("can be read by others"), "{err}");
        let err = keys.key_pair("nope").unwrap_err();
        assert!(
            format!("{err:#}").contains("plugin key create nope"),
            "{err:#}"
        );
    }
}

//! `plinth login`, `logout` and `whoami`: which backend the commands store stacks in. The choice
//! is remembered in `PLINTH_HOME/credentials.json` (mode 0600: it is where a backend's access
//! token is kept), one account per backend URL; `PLINTH_BACKEND_URL` overrides it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::Args;
use plinth_backend::secrets::SecretsProvider;
use plinth_backend::{Backend, LocalBackend, write_atomically};
use serde::{Deserialize, Serialize};

use crate::home::plinth_home;

pub const BACKEND_URL_VAR: &str = "PLINTH_BACKEND_URL";

/// What `plinth login` remembered.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Credentials {
    /// The backend commands use, unless `PLINTH_BACKEND_URL` names another.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    current: Option<String>,
    /// By backend URL.
    #[serde(default)]
    accounts: BTreeMap<String, Account>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Account {
    /// Who the backend knew the caller as at login.
    user: String,
    /// When, in seconds since the Unix epoch.
    logged_in: u64,
}

impl Credentials {
    fn path() -> Result<PathBuf> {
        Ok(plinth_home()?.join("credentials.json"))
    }

    fn load() -> Result<Credentials> {
        let path = Credentials::path()?;
        match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).with_context(|| {
                format!(
                    "{} is not valid; run `plinth login` again, or remove it",
                    path.display()
                )
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Credentials::default()),
            Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
        }
    }

    /// Writes the file atomically; it is created readable by its owner only (0600).
    fn save(&self) -> Result<()> {
        let path = Credentials::path()?;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
        }
        let json = serde_json::to_vec_pretty(self).expect("credentials serialize");
        write_atomically(&path, &json)
            .with_context(|| format!("cannot write {}", path.display()))?;
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o600))
            .with_context(|| format!("cannot restrict {} to its owner", path.display()))
    }
}

/// The URL of the backend to use: `PLINTH_BACKEND_URL`, the one logged in to, or none for the
/// default (`file://~/.plinth`).
fn current_url() -> Result<Option<String>> {
    if let Some(url) = std::env::var(BACKEND_URL_VAR)
        .ok()
        .filter(|u| !u.is_empty())
    {
        return Ok(Some(url));
    }
    Ok(Credentials::load()?.current)
}

/// Opens the backend commands use, its stacks' secrets sealed by `secrets`.
pub fn open_backend(secrets: Arc<dyn SecretsProvider>) -> Result<Arc<dyn Backend>> {
    let url = current_url()?;
    open_url(url.as_deref(), Some(secrets))
}

/// Opens the backend at `url` (the default if `None`); without `secrets`, for commands that
/// open no secret.
fn open_url(
    url: Option<&str>,
    secrets: Option<Arc<dyn SecretsProvider>>,
) -> Result<Arc<dyn Backend>> {
    let backend = LocalBackend::from_url(url)?;
    Ok(match secrets {
        Some(secrets) => Arc::new(backend.with_secrets(secrets)),
        None => Arc::new(backend),
    })
}

/// The URL as stored: a `file://` path made absolute, so that it means the same directory from
/// anywhere.
fn canonical(url: &str, cwd: &Path) -> Result<String> {
    match url.strip_prefix("file://") {
        Some("") => anyhow::bail!("`{url}` names no directory: use file://<directory>"),
        Some(path) => Ok(format!("file://{}", cwd.join(path).display())),
        None => Ok(url.to_owned()),
    }
}

#[derive(Args)]
pub struct LoginArgs {
    /// The backend: `file://<directory>` (default: `file://~/.plinth`).
    url: Option<String>,
}

#[derive(Args)]
pub struct LogoutArgs {
    /// The backend to log out of (default: the current one).
    url: Option<String>,
    /// Log out of every backend.
    #[arg(long, conflicts_with = "url")]
    all: bool,
}

pub fn login(args: LoginArgs, cwd: &Path) -> Result<ExitCode> {
    let url = match args.url {
        Some(url) => canonical(&url, cwd)?,
        None => LocalBackend::from_url(None)?.url(),
    };
    let backend = open_url(Some(&url), None)?;
    if let Some(dir) = url.strip_prefix("file://") {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {dir}"))?;
    }
    let user = backend.user()?;
    let mut credentials = Credentials::load()?;
    credentials.accounts.insert(
        url.clone(),
        Account {
            user: user.clone(),
            logged_in: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
        },
    );
    credentials.current = Some(url.clone());
    credentials.save()?;
    println!("Logged in to {url} as {user}.");
    if let Ok(other) = std::env::var(BACKEND_URL_VAR)
        && !other.is_empty()
        && other != url
    {
        println!("Note: {BACKEND_URL_VAR} is set, so commands use {other} until it is unset.");
    }
    Ok(ExitCode::SUCCESS)
}

pub fn logout(args: LogoutArgs, cwd: &Path) -> Result<ExitCode> {
    let mut credentials = Credentials::load()?;
    let urls: Vec<String> = if args.all {
        credentials.accounts.keys().cloned().collect()
    } else {
        match args.url {
            Some(url) => vec![canonical(&url, cwd)?],
            None => current_url()?.into_iter().collect(),
        }
    };
    if urls.is_empty() {
        println!("Not logged in to any backend.");
        return Ok(ExitCode::SUCCESS);
    }
    for url in urls {
        open_url(Some(&url), None)?.logout()?;
        credentials.accounts.remove(&url);
        if credentials.current.as_ref() == Some(&url) {
            credentials.current = None;
        }
        println!("Logged out of {url}.");
    }
    credentials.save()?;
    Ok(ExitCode::SUCCESS)
}

pub fn whoami() -> Result<ExitCode> {
    let backend = open_url(current_url()?.as_deref(), None)?;
    println!("User: {}", backend.user()?);
    println!("Backend: {}", backend.url());
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_urls_are_stored_absolute_and_others_as_given() {
        let cwd = Path::new("/work/project");
        assert_eq!(
            canonical("file://state", cwd).unwrap(),
            "file:///work/project/state"
        );
        assert_eq!(canonical("file:///abs", cwd).unwrap(), "file:///abs");
        assert!(canonical("file://", cwd).is_err());
    }
}

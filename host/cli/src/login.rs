//! `plinth login`, `logout` and `whoami`: which backend the commands store stacks in. The choice
//! is remembered in `PLINTH_HOME/credentials.json` (mode 0600: it is where a service's access
//! token is kept), one account per backend URL; `PLINTH_BACKEND_URL` overrides it. A backend is
//! a directory (`file://`) or a `plinth serve` service (`http(s)://`); the commands get one
//! [`Backend`] and never ask which.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::Args;
use plinth_backend::secrets::{NoSecrets, SecretsProvider};
use plinth_backend::service::{ServiceBackend, Transport, exchange_id_token};
use plinth_backend::{Backend, LocalBackend, Scheme, ServiceLogin, write_atomically};
use plinth_engine::shown::escape_controls;
use serde::{Deserialize, Serialize};

use crate::home::plinth_home;

/// The service a backend is, for its stacks' service-managed secrets.
#[derive(Clone)]
pub struct ServiceAccess {
    pub url: String,
    pub transport: Transport,
}

pub const BACKEND_URL_VAR: &str = "PLINTH_BACKEND_URL";
pub const ACCESS_TOKEN_VAR: &str = "PLINTH_ACCESS_TOKEN";

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
    /// A service's access token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    token: Option<String>,
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
    if let Some(url) = non_empty_var(BACKEND_URL_VAR) {
        return Ok(Some(url));
    }
    Ok(Credentials::load()?.current)
}

fn non_empty_var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// Opens the backend commands use, its stacks' secrets sealed by `secrets`. A service is
/// reached through `service`, as [`current_service`] gave it: the backend and the crypters of
/// service-managed secrets share one transport (one connection pool, one retry policy).
pub fn open_backend(
    service: Option<&ServiceAccess>,
    secrets: Arc<dyn SecretsProvider>,
) -> Result<Arc<dyn Backend>> {
    match service {
        Some(service) => Ok(Arc::new(ServiceBackend::over(
            service.transport.clone(),
            secrets,
            workspaces(&service.url)?,
        ))),
        None => open_url(current_url()?.as_deref(), secrets),
    }
}

/// The service commands use, with the token they act with on it; `None` on a file backend. Its
/// stacks' secrets may be sealed by it.
pub fn current_service() -> Result<Option<ServiceAccess>> {
    match current_url()? {
        Some(url) if is_service(&url) => {
            let token = access_token(&url)?;
            let url = url.trim_end_matches('/').to_owned();
            let transport = Transport::new(&url, &token);
            Ok(Some(ServiceAccess { url, transport }))
        }
        _ => Ok(None),
    }
}

/// The service at `url` as the token `plinth login` stored for it reaches it, if one is stored:
/// to open the secrets of a state exported from there.
pub fn stored_service(url: &str) -> Option<Transport> {
    let token = Credentials::load().ok()?.accounts.remove(url)?.token?;
    Some(Transport::new(url, &token))
}

/// Whether `url` names a `plinth serve` service.
fn is_service(url: &str) -> bool {
    Scheme::of(url) == Scheme::Service
}

/// Opens the backend at `url` (the default if `None`), its stacks' secrets sealed by `secrets`.
fn open_url(url: Option<&str>, secrets: Arc<dyn SecretsProvider>) -> Result<Arc<dyn Backend>> {
    <dyn Backend>::open(url, secrets, |url| {
        Ok(ServiceLogin {
            token: access_token(url)?,
            workspaces: workspaces(url)?,
        })
    })
}

fn service(url: &str, token: &str, secrets: Arc<dyn SecretsProvider>) -> Result<ServiceBackend> {
    Ok(ServiceBackend::new(url, token, secrets, workspaces(url)?))
}

/// Where the stack each project selected on the service at `url` is remembered: the service
/// keeps no such thing, since every user and runner chooses their own.
fn workspaces(url: &str) -> Result<PathBuf> {
    let name: String = (url.chars())
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    Ok(plinth_home()?.join("workspaces").join(name))
}

/// The access token for the service at `url`: `PLINTH_ACCESS_TOKEN`, else the one `plinth
/// login` stored.
fn access_token(url: &str) -> Result<String> {
    if let Some(token) = non_empty_var(ACCESS_TOKEN_VAR) {
        return Ok(token);
    }
    let stored = Credentials::load()?
        .accounts
        .remove(url)
        .and_then(|account| account.token);
    stored.with_context(|| {
        format!("no access token for {url}: run `plinth login {url}`, or set {ACCESS_TOKEN_VAR}")
    })
}

/// The URL as stored: a `file://` path made absolute, so that it means the same directory from
/// anywhere; a service's without a trailing `/`.
fn canonical(url: &str, cwd: &Path) -> Result<String> {
    if is_service(url) {
        let parsed = url::Url::parse(url).with_context(|| format!("`{url}` is not a valid URL"))?;
        anyhow::ensure!(
            parsed.host_str().is_some_and(|h| !h.is_empty()),
            "`{url}` names no host: use http(s)://HOST[:PORT]"
        );
        return Ok(url.trim_end_matches('/').to_owned());
    }
    match url.strip_prefix("file://") {
        Some("") => anyhow::bail!("`{url}` names no directory: use file://<directory>"),
        Some(path) => Ok(format!("file://{}", cwd.join(path).display())),
        None => Ok(url.to_owned()),
    }
}

#[derive(Args)]
pub struct LoginArgs {
    /// The backend: `file://<directory>` (default: `file://~/.plinth`) or the `plinth serve`
    /// service at `http(s)://HOST[:PORT]`.
    url: Option<String>,
    /// The service's access token (from `plinth serve token create`); else PLINTH_ACCESS_TOKEN,
    /// else it is asked for.
    #[arg(long)]
    token: Option<String>,
    /// Log in with the ID token a CI system issued the job (GitHub Actions, GitLab), which the
    /// service exchanges for a short-lived access token: read from FILE, or from the
    /// environment variable VAR with `env:VAR`.
    #[arg(long, value_name = "FILE|env:VAR", conflicts_with = "token")]
    oidc_token: Option<String>,
}

#[derive(Args)]
pub struct LogoutArgs {
    /// The backend to log out of (default: the current one).
    url: Option<String>,
    /// Log out of every backend.
    #[arg(long, conflicts_with = "url")]
    all: bool,
}

/// The token to log in to `url` with: `--token`, `PLINTH_ACCESS_TOKEN`, or asked for without
/// echo on a terminal.
fn login_token(url: &str, given: Option<String>) -> Result<String> {
    if let Some(token) = given.or_else(|| non_empty_var(ACCESS_TOKEN_VAR)) {
        return Ok(token);
    }
    anyhow::ensure!(
        std::io::stdin().is_terminal(),
        "no access token for {url}: pass --token TOKEN or set {ACCESS_TOKEN_VAR} (an administrator \
         creates one with `plinth serve token create`)"
    );
    let token = rpassword::prompt_password(format!("Access token for {url}: "))
        .context("cannot read the access token")?;
    let token = token.trim().to_owned();
    anyhow::ensure!(!token.is_empty(), "no access token given");
    Ok(token)
}

/// The largest ID token read from a file (real ones are a kilobyte or two).
const MAX_ID_TOKEN: u64 = 64 << 10;

/// The ID token `--oidc-token` names: `env:VAR`'s value, else the content of the file.
fn id_token(source: &str) -> Result<String> {
    let text = match source.strip_prefix("env:") {
        Some(var) => non_empty_var(var).with_context(|| {
            format!("--oidc-token {source}: the environment variable {var} is not set or empty")
        })?,
        None => {
            use std::io::Read;
            let mut text = String::new();
            (std::fs::File::open(source).map(|f| f.take(MAX_ID_TOKEN)))
                .and_then(|mut f| f.read_to_string(&mut text))
                .with_context(|| format!("cannot read the ID token file {source}"))?;
            text
        }
    };
    let text = text.trim();
    anyhow::ensure!(
        !text.is_empty(),
        "--oidc-token {source}: the ID token is empty"
    );
    Ok(text.to_owned())
}

/// The access token the service at `url` gives for the ID token `source` names.
fn exchanged(url: &str, source: &str) -> Result<String> {
    let exchanged = exchange_id_token(url, &id_token(source)?)
        .with_context(|| format!("{url} did not exchange the ID token"))?;
    // What a service answers is shown escaped, as everything it says.
    println!(
        "Exchanged the ID token for an access token granting {}, for {}.",
        escape_controls(&exchanged.grants),
        humantime::format_duration(std::time::Duration::from_secs(exchanged.expires_in))
    );
    Ok(exchanged.token)
}

pub fn login(args: LoginArgs, cwd: &Path) -> Result<ExitCode> {
    let url = match args.url {
        Some(url) => canonical(&url, cwd)?,
        None => LocalBackend::from_url(None)?.url(),
    };
    let (user, token) = if is_service(&url) {
        let token = match &args.oidc_token {
            Some(source) => exchanged(&url, source)?,
            None => login_token(&url, args.token)?,
        };
        // Checked before it is stored: a mistyped token is refused here, not on first use.
        let user = service(&url, &token, Arc::new(NoSecrets))?
            .user()
            .with_context(|| format!("cannot log in to {url}"))?;
        (user, Some(token))
    } else {
        anyhow::ensure!(
            args.token.is_none() && args.oidc_token.is_none(),
            "a file:// backend takes no access token; --token and --oidc-token are for \
             http(s):// services"
        );
        let backend = LocalBackend::from_url(Some(&url))?;
        if let Some(dir) = url.strip_prefix("file://") {
            std::fs::create_dir_all(dir).with_context(|| format!("cannot create {dir}"))?;
        }
        (backend.user()?, None)
    };
    let mut credentials = Credentials::load()?;
    credentials.accounts.insert(
        url.clone(),
        Account {
            user: user.clone(),
            logged_in: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            token,
        },
    );
    credentials.current = Some(url.clone());
    credentials.save()?;
    println!("Logged in to {url} as {user}.");
    if let Some(other) = non_empty_var(BACKEND_URL_VAR)
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
        // Nothing to tell a service: forgetting its token here is the logout.
        if !is_service(&url) {
            LocalBackend::from_url(Some(&url))?.logout()?;
        }
        credentials.accounts.remove(&url);
        if credentials.current.as_ref() == Some(&url) {
            credentials.current = None;
        }
        println!("Logged out of {url}.");
    }
    credentials.save()?;
    Ok(ExitCode::SUCCESS)
}

/// The URL of the backend commands use, without reaching it (a service is not asked, and no
/// token is needed).
pub fn backend_url() -> Result<String> {
    match current_url()? {
        Some(url) if is_service(&url) => Ok(url),
        url => Ok(open_url(url.as_deref(), Arc::new(NoSecrets))?.url()),
    }
}

pub fn whoami() -> Result<ExitCode> {
    let backend = open_url(current_url()?.as_deref(), Arc::new(NoSecrets))?;
    // The service says who the token belongs to: shown escaped.
    println!("User: {}", escape_controls(&backend.user()?));
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
        assert_eq!(
            canonical("https://plinth.example.com:8443/", cwd).unwrap(),
            "https://plinth.example.com:8443"
        );
        assert!(canonical("http://", cwd).is_err());
    }
}

//! Opening the backend a URL names: the scheme picks the implementation, so that the CLI holds
//! an `Arc<dyn Backend>` and never asks which it is.

use std::path::PathBuf;
use std::sync::Arc;

use crate::api::Backend;
use crate::error::BackendError;
use crate::local::LocalBackend;
use crate::secrets::SecretsProvider;
use crate::service::ServiceBackend;

/// Which backend a URL names, by its scheme.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// `file://<directory>`: a [`LocalBackend`].
    File,
    /// `http(s)://HOST`: a `plinth serve` service, through a [`ServiceBackend`].
    Service,
}

impl Scheme {
    /// The scheme of `url`; anything but `http(s)://` is for the file backend, which refuses
    /// what it cannot read.
    pub fn of(url: &str) -> Scheme {
        if url.starts_with("http://") || url.starts_with("https://") {
            Scheme::Service
        } else {
            Scheme::File
        }
    }
}

/// What reaching a service takes beside its URL.
pub struct ServiceLogin {
    /// The access token requests carry.
    pub token: String,
    /// Where the stack each project selected is remembered: the service keeps no such thing,
    /// since every user and runner chooses their own.
    pub workspaces: PathBuf,
}

impl dyn Backend {
    /// Opens the backend `url` names (the default state directory if `None`), its stacks'
    /// secrets sealed by `secrets`; a service is reached as `login` says for its URL.
    pub fn open<E: From<BackendError>>(
        url: Option<&str>,
        secrets: Arc<dyn SecretsProvider>,
        login: impl FnOnce(&str) -> Result<ServiceLogin, E>,
    ) -> Result<Arc<dyn Backend>, E> {
        match url {
            Some(url) if Scheme::of(url) == Scheme::Service => {
                let ServiceLogin { token, workspaces } = login(url)?;
                Ok(Arc::new(ServiceBackend::new(
                    url, &token, secrets, workspaces,
                )))
            }
            url => Ok(Arc::new(LocalBackend::from_url(url)?.with_secrets(secrets))),
        }
    }
}

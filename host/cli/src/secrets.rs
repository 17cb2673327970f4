//! The secrets providers of a project's stacks. Each stack's `Plinth.<stack>.yaml` may name its
//! provider (`secretsprovider: passphrase` or `service`); one that does not uses the passphrase
//! provider if it has a salt already, else its backend's default: the service's own provider
//! on a service, the passphrase provider on files.
//!
//! The passphrase provider derives a stack's key from `PLINTH_CONFIG_PASSPHRASE` (or a
//! passphrase asked for on the terminal) and the salt kept in its `Plinth.<stack>.yaml`, once
//! per command and only when a secret is first sealed or opened. The service provider asks the
//! service to seal and open values with a key that never leaves it.

use std::collections::{BTreeMap, HashMap};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use plinth_backend::secrets::{
    Crypter, LazyCrypter, PassphraseCrypter, Remembering, SecretsError, SecretsProvider,
};
use plinth_backend::service::{ServiceCrypter, Transport};
use plinth_backend::{Backend, StackRef};
use plinth_engine::value::Value;

use crate::login::ServiceAccess;
use crate::project::Project;
use crate::stack_config::{ConfigValue, ProviderKind, StackConfig};

pub const PASSPHRASE_VAR: &str = "PLINTH_CONFIG_PASSPHRASE";

/// The provider of stack `config`'s secrets: the one its configuration names; else the
/// passphrase provider if it has a salt (it has sealed something with it); else the backend's
/// default (`on_service`).
pub fn provider_of(config: &StackConfig, on_service: bool) -> anyhow::Result<ProviderKind> {
    if let Some(kind) = config.secrets_provider()? {
        return Ok(kind);
    }
    if config.encryption_salt()?.is_some() || !on_service {
        return Ok(ProviderKind::Passphrase);
    }
    Ok(ProviderKind::Service)
}

/// Hands out one crypter per stack of a project, from the provider the stack uses.
pub struct ProjectSecrets {
    /// The project directory, where the stacks' configuration files are.
    project_dir: PathBuf,
    project: String,
    service: Option<ServiceAccess>,
    crypters: Mutex<HashMap<String, Arc<dyn Crypter>>>,
}

impl ProjectSecrets {
    /// The secrets of `project`'s stacks on a backend that is `service`, or files if `None`.
    pub fn new(project: &Project, service: Option<ServiceAccess>) -> ProjectSecrets {
        ProjectSecrets {
            project_dir: project.dir.clone(),
            project: project.name().to_string(),
            service,
            crypters: Mutex::new(HashMap::new()),
        }
    }

    /// The provider stack `config` uses on this backend.
    pub fn kind_of(&self, config: &StackConfig) -> anyhow::Result<ProviderKind> {
        provider_of(config, self.service.is_some())
    }

    /// The URL of the backend if it is a service.
    pub fn service_url(&self) -> Option<&str> {
        self.service.as_ref().map(|s| s.url.as_str())
    }

    pub fn project(&self) -> &str {
        &self.project
    }

    /// How to reach the service at `url`: as this backend if it is the one, else with the token
    /// `plinth login` stored for it.
    pub fn transport_for(&self, url: &str) -> Option<Transport> {
        match &self.service {
            Some(service) if service.url == url => Some(service.transport.clone()),
            _ => crate::login::stored_service(url),
        }
    }

    fn make(&self, stack: &str) -> Arc<dyn Crypter> {
        let config = StackConfig::of_stack(&self.project_dir, stack);
        match self.kind_of(&config) {
            Ok(ProviderKind::Passphrase) => passphrase_crypter(config, stack),
            Ok(ProviderKind::Service) => match &self.service {
                Some(service) => Arc::new(Remembering::new(ServiceCrypter::new(
                    service.transport.clone(),
                    &self.project,
                    stack,
                ))),
                None => Arc::new(Refusing(unavailable(
                    stack,
                    &format!(
                        "it uses the service-managed secrets provider (`secretsprovider: service` in \
                         Plinth.{stack}.yaml), which only a service backend has: log in to it with \
                         `plinth login https://…`"
                    ),
                ))),
            },
            Err(e) => Arc::new(Refusing(unavailable(stack, &format!("{e:#}")))),
        }
    }
}

impl SecretsProvider for ProjectSecrets {
    fn crypter(&self, stack: &str) -> Arc<dyn Crypter> {
        let mut crypters = self
            .crypters
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let crypter = (crypters.entry(stack.to_owned())).or_insert_with(|| self.make(stack));
        crypter.clone()
    }
}

/// The passphrase crypter of a stack, unlocked on first use. Both kinds remember the
/// ciphertexts of the command's checkpoints, to keep those of unchanged secrets.
fn passphrase_crypter(config: StackConfig, stack: &str) -> Arc<dyn Crypter> {
    let stack = stack.to_owned();
    Arc::new(Remembering::new(LazyCrypter::new(move || {
        unlock(&config, &stack)
    })))
}

/// A crypter whose every use fails the same way: a stack whose provider cannot be used.
pub struct Refusing(pub SecretsError);

impl Crypter for Refusing {
    fn seal(&self, _: &str) -> Result<String, SecretsError> {
        Err(self.0.clone())
    }
    fn open(&self, _: &str) -> Result<String, SecretsError> {
        Err(self.0.clone())
    }
    fn unlock(&self) -> Result<(), SecretsError> {
        Err(self.0.clone())
    }
}

/// Makes sure the secrets of `stack` work before an operation that records its state starts
/// (`up`, `destroy`, `refresh`, `stack import`): asks for the passphrase, or sets one for a stack
/// that has none yet. Whatever the stack held before, anything such an operation records may be
/// a secret (a provider's output, a value the program marks secret), and a secret that cannot
/// be sealed halfway through would leave what was done unrecorded. Without the passphrase, the
/// operation stops here, before it does anything.
pub fn unlock_for_update(backend: &dyn Backend, stack: &StackRef) -> Result<(), SecretsError> {
    backend.crypter(stack).unlock()
}

/// Derives the stack's key: from its stored salt, checking the passphrase, or under a new salt
/// that is then stored.
fn unlock(config: &StackConfig, stack: &str) -> Result<PassphraseCrypter, SecretsError> {
    let unavailable = |e: anyhow::Error| SecretsError::Unavailable {
        stack: stack.to_owned(),
        reason: format!("{e:#}"),
    };
    let salt = config.encryption_salt().map_err(unavailable)?;
    let passphrase = passphrase(stack, salt.is_none())?;
    match salt {
        Some(salt) => PassphraseCrypter::unlock(&passphrase, &salt, stack),
        None => {
            let (crypter, salt) = PassphraseCrypter::create(&passphrase, stack)?;
            config.set_encryption_salt(salt).map_err(unavailable)?;
            Ok(crypter)
        }
    }
}

/// The passphrase from the environment, or asked for (without echo) on a terminal.
fn passphrase(stack: &str, new: bool) -> Result<String, SecretsError> {
    if let Some(passphrase) = std::env::var_os(PASSPHRASE_VAR) {
        return passphrase
            .into_string()
            .map_err(|_| unavailable(stack, &format!("{PASSPHRASE_VAR} is not valid UTF-8")));
    }
    let no_passphrase = || {
        unavailable(
            stack,
            &format!("no passphrase: set {PASSPHRASE_VAR} (or run on a terminal to be asked)"),
        )
    };
    if !new {
        return ask_passphrase(
            &format!("Enter the passphrase of stack `{stack}`: "),
            no_passphrase,
        );
    }
    let first = ask_passphrase(
        &format!("Enter a new passphrase for the secrets of stack `{stack}`: "),
        no_passphrase,
    )?;
    let second = ask_passphrase("Re-enter the passphrase: ", no_passphrase)?;
    if first != second {
        return Err(unavailable(stack, "the passphrases did not match"));
    }
    Ok(first)
}

/// A passphrase asked for without echo on the terminal; `no_passphrase` without one.
pub fn ask_passphrase(
    prompt: &str,
    no_passphrase: impl Fn() -> SecretsError,
) -> Result<String, SecretsError> {
    if !std::io::stdin().is_terminal() {
        return Err(no_passphrase());
    }
    rpassword::prompt_password(prompt).map_err(|_| no_passphrase())
}

fn unavailable(stack: &str, reason: &str) -> SecretsError {
    SecretsError::Unavailable {
        stack: stack.to_owned(),
        reason: reason.to_owned(),
    }
}

/// The configuration as the program and providers see it: plain values as strings, sealed ones
/// opened into secrets (all in one batch: one request when a service opens them).
pub fn open_config(
    config: BTreeMap<String, ConfigValue>,
    crypter: &dyn Crypter,
) -> Result<BTreeMap<String, Value>, SecretsError> {
    let sealed: Vec<String> = (config.values())
        .filter_map(|value| match value {
            ConfigValue::Sealed(sealed) => Some(sealed.clone()),
            ConfigValue::Plain(_) => None,
        })
        .collect();
    let mut opened = crypter.open_all(&sealed)?.into_iter();
    config
        .into_iter()
        .map(|(key, value)| {
            let value = match value {
                ConfigValue::Plain(text) => Value::String(text),
                ConfigValue::Sealed(_) => {
                    let text = opened.next().expect("one opened value per sealed one");
                    Value::Secret(Box::new(Value::String(text)))
                }
            };
            Ok((key, value))
        })
        .collect()
}

//! The passphrase secrets provider: a stack's key is derived from `PLINTH_CONFIG_PASSPHRASE` (or
//! a passphrase asked for on the terminal) and the salt kept in its `Plinth.<stack>.yaml`,
//! once per command and only when a secret is first sealed or opened.

use std::collections::{BTreeMap, HashMap};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use plinth_backend::secrets::{
    Crypter, LazyCrypter, PassphraseCrypter, SecretsError, SecretsProvider,
};
use plinth_backend::{Backend, StackRef};
use plinth_engine::value::Value;

use crate::project::Project;
use crate::stack_config::{ConfigValue, StackConfig};

pub const PASSPHRASE_VAR: &str = "PLINTH_CONFIG_PASSPHRASE";

/// Hands out one lazily unlocked crypter per stack of a project.
pub struct PassphraseSecrets {
    /// The project directory, where the stacks' configuration files are.
    project_dir: PathBuf,
    crypters: Mutex<HashMap<String, Arc<LazyCrypter>>>,
}

impl PassphraseSecrets {
    pub fn new(project: &Project) -> PassphraseSecrets {
        PassphraseSecrets {
            project_dir: project.dir.clone(),
            crypters: Mutex::new(HashMap::new()),
        }
    }
}

impl SecretsProvider for PassphraseSecrets {
    fn crypter(&self, stack: &str) -> Arc<dyn Crypter> {
        let mut crypters = self
            .crypters
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let crypter = crypters.entry(stack.to_owned()).or_insert_with(|| {
            let config = StackConfig::of_stack(&self.project_dir, stack);
            let stack = stack.to_owned();
            Arc::new(LazyCrypter::new(move || unlock(&config, &stack)))
        });
        crypter.clone()
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
    if !std::io::stdin().is_terminal() {
        return Err(no_passphrase());
    }
    let ask = |prompt: &str| rpassword::prompt_password(prompt).map_err(|_| no_passphrase());
    if !new {
        return ask(&format!("Enter the passphrase of stack `{stack}`: "));
    }
    let first = ask(&format!(
        "Enter a new passphrase for the secrets of stack `{stack}`: "
    ))?;
    let second = ask("Re-enter the passphrase: ")?;
    if first != second {
        return Err(unavailable(stack, "the passphrases did not match"));
    }
    Ok(first)
}

fn unavailable(stack: &str, reason: &str) -> SecretsError {
    SecretsError::Unavailable {
        stack: stack.to_owned(),
        reason: reason.to_owned(),
    }
}

/// The configuration as the program and providers see it: plain values as strings, sealed ones
/// opened into secrets.
pub fn open_config(
    config: BTreeMap<String, ConfigValue>,
    crypter: &dyn Crypter,
) -> Result<BTreeMap<String, Value>, SecretsError> {
    config
        .into_iter()
        .map(|(key, value)| {
            let value = match value {
                ConfigValue::Plain(text) => Value::String(text),
                ConfigValue::Sealed(sealed) => {
                    Value::Secret(Box::new(Value::String(crypter.open(&sealed)?)))
                }
            };
            Ok((key, value))
        })
        .collect()
}

//! [`Context`]: what a program's `main` receives to declare resources and read its settings.

use std::cell::RefCell;
use std::fmt::Display;
use std::str::FromStr;

use super::bindings::plinth::plugin::monitor::{self, LogLevel};
use super::{Output, ResourceBuilder};
use crate::value::nodes::{decode, encode_map};
use crate::{Error, PropertyMap, Value};

/// The program's view of the engine during one run: stack facts, configuration, resource
/// declarations, stack outputs, logs and provider functions.
#[derive(Debug)]
pub struct Context {
    project: String,
    stack: String,
    dry_run: bool,
    exports: RefCell<PropertyMap>,
}

impl Context {
    pub(crate) fn new() -> Context {
        let info = monitor::get_stack_info();
        Context {
            project: info.project,
            stack: info.stack,
            dry_run: info.dry_run,
            exports: RefCell::new(PropertyMap::new()),
        }
    }

    /// The project's name.
    pub fn project(&self) -> &str {
        &self.project
    }

    /// The stack's name.
    pub fn stack(&self) -> &str {
        &self.stack
    }

    /// True during `preview`: outputs of resources not created yet are unknown.
    pub fn is_dry_run(&self) -> bool {
        self.dry_run
    }

    /// The stack's configuration value for `key` (`key` in the project's namespace, or
    /// `namespace:key`).
    ///
    /// This reveals a secret value (one set with `plinth config set --secret`): the plaintext
    /// loses its protection wherever it goes. Read secrets with
    /// [`secret_config`](Self::secret_config) instead.
    pub fn config(&self, key: &str) -> Option<String> {
        match config_value(key)?.into_revealed() {
            Value::String(text) => Some(text),
            _ => None,
        }
    }

    /// The configuration value for `key` as a secret: it stays hidden in displays and sealed in
    /// state through every resource input and `apply` it flows into. A value set without
    /// `--secret` is made a secret too.
    pub fn secret_config(&self, key: &str) -> Option<Output> {
        config_value(key).map(|value| Output::new(Value::secret(value.into_revealed())))
    }

    /// The configuration value for `key` as a secret, or an error naming the missing key.
    pub fn require_secret_config(&self, key: &str) -> Result<Output, Error> {
        self.secret_config(key)
            .ok_or_else(|| Error::new(format!("missing required configuration value `{key}`")))
    }

    /// The configuration value for `key`, or `default` when it is not set.
    pub fn config_or(&self, key: &str, default: impl Into<String>) -> String {
        self.config(key).unwrap_or_else(|| default.into())
    }

    /// The configuration value for `key`, or an error naming the missing key.
    pub fn require_config(&self, key: &str) -> Result<String, Error> {
        self.config(key)
            .ok_or_else(|| Error::new(format!("missing required configuration value `{key}`")))
    }

    /// The configuration value for `key` parsed as a `T`, or `None` when it is not set. A value
    /// that does not parse is an error naming the key.
    pub fn config_as<T>(&self, key: &str) -> Result<Option<T>, Error>
    where
        T: FromStr,
        T::Err: Display,
    {
        self.config(key)
            .map(|text| {
                text.parse().map_err(|e| {
                    Error::new(format!(
                        "configuration value `{key}` = `{text}` is invalid: {e}"
                    ))
                })
            })
            .transpose()
    }

    /// Starts declaring a resource of type `ty` (e.g. `random:RandomString`) named `name`.
    pub fn resource(&self, ty: &str, name: &str) -> ResourceBuilder {
        ResourceBuilder::custom(ty, name)
    }

    /// Starts declaring a component resource: a named group of child resources, managed by no
    /// provider. Its type is the program's own (e.g. `acme:WebSite`).
    pub fn component(&self, ty: &str, name: &str) -> ResourceBuilder {
        ResourceBuilder::component(ty, name)
    }

    /// Starts declaring an existing resource that is read by `id` but not managed.
    pub fn read(&self, ty: &str, name: &str, id: &str) -> ResourceBuilder {
        ResourceBuilder::read(ty, name, id)
    }

    /// Sets the stack output `name`, sent to the engine when `main` returns `Ok`.
    pub fn export(&self, name: impl Into<String>, value: impl Into<Value>) {
        self.exports.borrow_mut().insert(name.into(), value.into());
    }

    /// Calls the provider function `token` (e.g. `random:someFunction`) with known arguments.
    /// Blocks the program, not the engine, until it returns.
    pub fn invoke(&self, token: &str, args: PropertyMap) -> Result<Value, Error> {
        let result = monitor::invoke(token, &encode_map(args)).map_err(Error::from)?;
        decode(result)
    }

    /// [`invoke`](Self::invoke) with typed arguments and result: `args` serializes to the
    /// arguments object, and the result is read as an `R`. What generated SDKs call.
    pub fn invoke_typed<A, R>(&self, token: &str, args: &A) -> Result<R, Error>
    where
        A: serde::Serialize + ?Sized,
        R: serde::de::DeserializeOwned,
    {
        let args = match crate::to_value(args)? {
            Value::Object(map) => map,
            other => {
                return Err(Error::new(format!(
                    "the arguments of `{token}` must be an object, not {}",
                    other.kind()
                )));
            }
        };
        let result = self.invoke(token, args)?;
        crate::from_value(result).map_err(|e| {
            Error::new(format!(
                "the result of `{token}` is not what its schema says: {e}"
            ))
        })
    }

    /// Logs a debug message.
    pub fn log_debug(&self, message: impl AsRef<str>) {
        monitor::log(LogLevel::Debug, message.as_ref());
    }

    /// Logs an informational message.
    pub fn log_info(&self, message: impl AsRef<str>) {
        monitor::log(LogLevel::Info, message.as_ref());
    }

    /// Logs a warning.
    pub fn log_warn(&self, message: impl AsRef<str>) {
        monitor::log(LogLevel::Warn, message.as_ref());
    }

    /// Logs an error; the program goes on.
    pub fn log_error(&self, message: impl AsRef<str>) {
        monitor::log(LogLevel::Error, message.as_ref());
    }

    /// The stack outputs set with [`export`](Self::export).
    pub(crate) fn into_exports(self) -> PropertyMap {
        self.exports.into_inner()
    }
}

/// The configuration value for `key` as the engine sent it (a text, or a secret holding one).
/// The engine only sends well-formed values; anything else reads as not set.
fn config_value(key: &str) -> Option<Value> {
    monitor::config(key).and_then(|value| decode(value).ok())
}

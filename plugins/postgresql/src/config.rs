//! The provider's configuration: which server to manage and as whom. Stack config
//! `postgresql:host`, `postgresql:port`, ... or an explicit provider resource's inputs.

use std::time::Duration;

use plinth_sdk::{CheckFailure, Secret};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tls::{SslMode, Tls};
use crate::wire::Target;

/// The settings of the PostgreSQL provider.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub(crate) struct Settings {
    /// The server's host name or address. The project must grant `tcp: ["HOST:PORT"]`.
    #[serde(default = "default_host")]
    pub(crate) host: String,
    /// The server's port (a number, or its digits: stack config values are text).
    #[serde(default = "default_port")]
    pub(crate) port: Whole,
    /// The database the provider connects to for roles, databases and grants on databases.
    #[serde(default = "default_database")]
    pub(crate) database: String,
    /// The role the provider connects as; it needs the rights to do what the program asks
    /// (CREATEROLE, CREATEDB, or superuser).
    #[serde(default = "default_username")]
    pub(crate) username: String,
    /// The password of `username`, if the server asks for one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) password: Option<Secret<String>>,
    /// TLS, as libpq's `sslmode`: `disable` (never), `allow` (only if the server insists),
    /// `prefer` (if the server offers it; the default), `require` (always; the certificate is
    /// checked only against `sslrootcert` if given), `verify-ca` (always, the certificate
    /// signed by a trusted root), `verify-full` (also naming `host`). TLS is done by the host.
    #[serde(default = "default_sslmode")]
    pub(crate) sslmode: String,
    /// The root certificate(s) the server's certificate must lead to, as PEM text (not a file
    /// name). Without it, `verify-ca` and `verify-full` trust the system's roots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) sslrootcert: Option<String>,
    /// A client certificate (PEM text, its chain), for servers that authenticate by
    /// certificate; with `sslkey`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) sslcert: Option<String>,
    /// The private key of `sslcert` (PEM text), as a secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) sslkey: Option<Secret<String>>,
    /// Seconds to wait for the connection to open (0: as long as the system does).
    #[serde(default = "no_timeout")]
    pub(crate) connect_timeout: Whole,
}

/// A whole number given as a number or as its digits: `plinth config set` stores text.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub(crate) enum Whole {
    Number(i64),
    Text(String),
}

impl Whole {
    /// The number, if it is one in `range`.
    fn within(&self, range: std::ops::RangeInclusive<i64>) -> Option<i64> {
        let n = match self {
            Whole::Number(n) => *n,
            Whole::Text(text) => text.trim().parse().ok()?,
        };
        range.contains(&n).then_some(n)
    }
}

fn no_timeout() -> Whole {
    Whole::Number(0)
}

fn default_host() -> String {
    "localhost".to_owned()
}
fn default_port() -> Whole {
    Whole::Number(5432)
}
fn default_database() -> String {
    "postgres".to_owned()
}
fn default_username() -> String {
    "postgres".to_owned()
}
fn default_sslmode() -> String {
    "prefer".to_owned()
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            host: default_host(),
            port: default_port(),
            database: default_database(),
            username: default_username(),
            password: None,
            sslmode: default_sslmode(),
            sslrootcert: None,
            sslcert: None,
            sslkey: None,
            connect_timeout: no_timeout(),
        }
    }
}

impl Settings {
    /// What is wrong with the settings beyond their types.
    pub(crate) fn problems(&self) -> Vec<CheckFailure> {
        let mut failures = Vec::new();
        if self.host.is_empty() {
            failures.push(CheckFailure::new("host", "must not be empty"));
        }
        if self.port().is_none() {
            failures.push(CheckFailure::new(
                "port",
                "must be a port number, 1 to 65535",
            ));
        }
        if self
            .connect_timeout
            .within(0..=i64::from(u32::MAX))
            .is_none()
        {
            failures.push(CheckFailure::new(
                "connect_timeout",
                "must be a whole number of seconds (0: no limit)",
            ));
        }
        if SslMode::parse(&self.sslmode).is_none() {
            failures.push(CheckFailure::new(
                "sslmode",
                format!(
                    "`{}` is not an sslmode; use disable, allow, prefer, require, verify-ca or \
                     verify-full",
                    escape(&self.sslmode)
                ),
            ));
        }
        failures.extend(self.certificate_problems());
        failures.extend(crate::sql::check_names([
            ("database", self.database.as_str()),
            ("username", self.username.as_str()),
        ]));
        failures
    }

    /// What is wrong with the TLS certificates and key, which must be PEM text.
    fn certificate_problems(&self) -> Vec<CheckFailure> {
        const PASTE: &str = "the provider reads no files: give the PEM text itself, e.g. \
                             `plinth config set postgresql:sslrootcert -- \"$(cat root.crt)\"`";
        let mut failures = Vec::new();
        for (name, pem) in [
            ("sslrootcert", &self.sslrootcert),
            ("sslcert", &self.sslcert),
        ] {
            if pem
                .as_deref()
                .is_some_and(|pem| !pem.contains("-----BEGIN CERTIFICATE-----"))
            {
                failures.push(CheckFailure::new(
                    name,
                    format!("must hold a PEM certificate (`-----BEGIN CERTIFICATE-----`); {PASTE}"),
                ));
            }
        }
        let key = self.sslkey.as_ref().map(|k| k.expose().as_str());
        if key.is_some_and(|key| !(key.contains("-----BEGIN") && key.contains("PRIVATE KEY-----")))
        {
            // Never quotes the key.
            failures.push(CheckFailure::new(
                "sslkey",
                format!("must hold a PEM private key (`-----BEGIN PRIVATE KEY-----`); {PASTE}"),
            ));
        }
        match (&self.sslcert, key) {
            (Some(_), None) => failures.push(CheckFailure::new(
                "sslkey",
                "is needed with `sslcert`: set the certificate's private key (as a secret)",
            )),
            (None, Some(_)) => failures.push(CheckFailure::new(
                "sslcert",
                "is needed with `sslkey`: set the client certificate the key belongs to",
            )),
            _ => {}
        }
        if self.sslmode == "disable" && (self.sslcert.is_some() || self.sslrootcert.is_some()) {
            failures.push(CheckFailure::new(
                "sslmode",
                "is `disable`, so the certificates given are never used: remove them or use \
                 `verify-full`",
            ));
        }
        failures
    }

    /// The port, if it is one.
    pub(crate) fn port(&self) -> Option<u16> {
        self.port
            .within(1..=65535)
            .and_then(|n| u16::try_from(n).ok())
    }

    /// Where to connect; the settings have no [`problems`](Self::problems).
    pub(crate) fn target(&self) -> Target {
        let timeout = self.connect_timeout.within(1..=i64::from(u32::MAX));
        Target {
            host: self.host.clone(),
            port: self.port().unwrap_or(5432),
            username: self.username.clone(),
            password: self.password.as_ref().map(|p| p.expose().clone()),
            connect_timeout: timeout.map(|s| Duration::from_secs(s.unsigned_abs())),
            tls: Tls {
                mode: SslMode::parse(&self.sslmode).unwrap_or(SslMode::Prefer),
                root: self.sslrootcert.clone(),
                identity: (self.sslcert.clone())
                    .zip(self.sslkey.as_ref().map(|k| k.expose().clone())),
            },
        }
    }
}

/// `text` shown in a message: control characters escaped, cut short.
fn escape(text: &str) -> String {
    text.chars().take(40).flat_map(char::escape_debug).collect()
}

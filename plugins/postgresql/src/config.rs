//! The provider's configuration: which server to manage and as whom. Stack config
//! `postgresql:host`, `postgresql:port`, ... or an explicit provider resource's inputs.

use std::time::Duration;

use plinth_sdk::{CheckFailure, Secret};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::wire::Target;

/// The settings of the PostgreSQL provider.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub(crate) struct Settings {
    /// The server's host name or address. The project must grant `tcp: ["HOST:PORT"]`.
    #[serde(default = "default_host")]
    pub(crate) host: String,
    /// The server's port.
    #[serde(default = "default_port")]
    pub(crate) port: u16,
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
    /// `disable`, `allow` or `prefer` (all connect without TLS: this build has no TLS stack
    /// for WebAssembly); `require`, `verify-ca` and `verify-full` are refused.
    #[serde(default = "default_sslmode")]
    pub(crate) sslmode: String,
    /// Seconds to wait for the connection to open (0: as long as the system does).
    #[serde(default)]
    pub(crate) connect_timeout: u32,
}

fn default_host() -> String {
    "localhost".to_owned()
}
fn default_port() -> u16 {
    5432
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
            connect_timeout: 0,
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
        if self.port == 0 {
            failures.push(CheckFailure::new("port", "must be a port number, 1 to 65535"));
        }
        match self.sslmode.as_str() {
            "disable" | "allow" | "prefer" => {}
            "require" | "verify-ca" | "verify-full" => failures.push(CheckFailure::new(
                "sslmode",
                format!(
                    "`{}` needs TLS, which this build of the provider cannot speak (no TLS \
                     stack builds for WebAssembly components yet); use `disable` or `prefer` \
                     on a trusted network",
                    self.sslmode
                ),
            )),
            other => failures.push(CheckFailure::new(
                "sslmode",
                format!(
                    "`{other}` is not an sslmode; use disable, allow, prefer, require, \
                     verify-ca or verify-full"
                ),
            )),
        }
        failures.extend(crate::sql::check_names([
            ("database", self.database.as_str()),
            ("username", self.username.as_str()),
        ]));
        failures
    }

    /// Where to connect.
    pub(crate) fn target(&self) -> Target {
        Target {
            host: self.host.clone(),
            port: self.port,
            username: self.username.clone(),
            password: self.password.as_ref().map(|p| p.expose().clone()),
            connect_timeout: (self.connect_timeout > 0)
                .then(|| Duration::from_secs(self.connect_timeout.into())),
        }
    }
}

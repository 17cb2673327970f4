//! What this plinth is: its version (one for the CLI, the service and the SDKs), the commit it
//! was built from (`host/build/commit.rs`), and the WIT packages it speaks, for `--version`,
//! `plinth about` and bug reports.

use std::sync::LazyLock;

use plinth_runtime::WitVersion;

/// plinth's version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The commit plinth was built from, or `unknown` (built from a source archive).
pub const COMMIT: &str = env!("PLINTH_COMMIT");

/// The policy-pack world's package, whose one version the runtime loads.
const POLICY_PACKAGE: &str = "plinth:policy@0.1.0";
/// The optional hints a provider may export (`plinth:hints`), likewise.
const HINTS_PACKAGE: &str = "plinth:hints@0.1.0";
/// TLS done by the host for a guest's granted connections (`plinth:tls`), likewise.
const TLS_PACKAGE: &str = "plinth:tls@0.1.0";
/// The write-only inputs a provider may export (`plinth:inputs`), likewise.
const INPUTS_PACKAGE: &str = "plinth:inputs@0.1.0";

/// Every WIT package version plinth loads guests of: `plinth:plugin@0.3.0, 0.2.0, 0.1.0`
/// (newest first), then the policy, hints, TLS and inputs packages.
pub fn wit_packages() -> String {
    let plugin: Vec<&str> = (WitVersion::SUPPORTED.iter().rev())
        .map(|v| v.as_str())
        .collect();
    format!(
        "plinth:plugin@{}; {POLICY_PACKAGE}; {HINTS_PACKAGE}; {TLS_PACKAGE}; {INPUTS_PACKAGE}",
        plugin.join(", ")
    )
}

/// `plinth --version`'s text after the name: the version, then a line each for the commit and
/// the WIT packages (`-V` prints the version alone).
pub static LONG_VERSION: LazyLock<String> =
    LazyLock::new(|| format!("{VERSION}\ncommit: {COMMIT}\nwit: {}", wit_packages()));

//! The `adversary` provider: a plugin that attacks the sandbox it runs in, so that tests can
//! check that every attack is contained. Each resource type tries one kind of attack, chosen by
//! its inputs, when it is created (never during a preview):
//!
//! - `adversary:ReadFile` reads a file (see [`files`]);
//! - `adversary:WriteFile` creates, overwrites, deletes or renames a file, or plants a symlink
//!   (see [`files`]);
//! - `adversary:Runaway` loops forever, recurses until its stack overflows, allocates without
//!   bound or returns a huge value (see [`runaway`]);
//! - `adversary:Crash` panics or traps in the provider operation its inputs name (see
//!   [`crash`]); so does the provider itself in `check-config` or `configure` when its
//!   configuration asks.
//! - `adversary:Ids` answers with hostile ids, messages and output keys (see [`ids`]).
//!
//! Every type returns its inputs as outputs, so that a harmless one behaves like an echo.
//!
//! Its version and capabilities come from a release marker a test may rewrite in the built
//! component (see [`release`]), to publish other releases of it to a registry.

mod crash;
mod files;
mod ids;
mod inputs;
mod numbers;
mod release;
mod runaway;
mod secrets;

use plinth_sdk::{Capabilities, Checked, PropertyMap, Provider, ProviderError, ResourceType};

use crate::crash::{Crash, strike_if_requested};

/// The adversary provider.
#[derive(Default)]
struct Adversary;

impl Provider for Adversary {
    fn name(&self) -> &str {
        "adversary"
    }

    fn version(&self) -> &str {
        &release::release().version
    }

    fn capabilities(&self) -> Capabilities {
        release::release().capabilities()
    }

    fn resource_types(&self) -> Vec<Box<dyn ResourceType>> {
        vec![
            Box::new(files::ReadFile),
            Box::new(files::WriteFile),
            Box::new(runaway::Runaway),
            Box::new(Crash),
            Box::new(ids::Ids),
            Box::new(numbers::Numbers),
            Box::new(secrets::Leak),
        ]
    }

    fn check_config(&self, config: PropertyMap) -> Result<Checked, ProviderError> {
        strike_if_requested(&config, "check-config")?;
        Ok(Checked::new(config))
    }

    fn configure(&mut self, config: PropertyMap) -> Result<(), ProviderError> {
        strike_if_requested(&config, "configure")?;
        Ok(())
    }
}

plinth_sdk::export_provider!(Adversary);

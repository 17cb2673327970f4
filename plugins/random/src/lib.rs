//! The `random` provider: values generated once and then kept, like Terraform's and Pulumi's
//! random provider. Every input replaces the resource when it changes — change `keepers` to get
//! a new value — and `read` returns the stored state.
//!
//! | type | inputs | `result` | id |
//! |---|---|---|---|
//! | `random:RandomString` | `length`, `special`, `upper`, `lower`, `numeric`, `min_upper`, `min_lower`, `min_numeric`, `min_special`, `override_special`, `keepers` | string | the result |
//! | `random:RandomPassword` | as RandomString | secret string | `none` |
//! | `random:RandomInteger` | `min`, `max`, `keepers` | number | the result |
//! | `random:RandomUuid` | `keepers` | string | the result |
//! | `random:RandomPet` | `length`, `prefix`, `separator`, `keepers` | string | the result |
//!
//! The outputs are the inputs, with defaults applied, plus `result`; during a preview `result`
//! is unknown.

mod charset;
mod integer;
mod pet;
mod props;
mod result;
mod string;
mod uuid;

use plinth_sdk::{Provider, ResourceType};

/// The random provider.
#[derive(Default)]
struct Random;

impl Provider for Random {
    fn name(&self) -> &str {
        "random"
    }

    fn version(&self) -> &str {
        env!("CARGO_PKG_VERSION")
    }

    fn resource_types(&self) -> Vec<Box<dyn ResourceType>> {
        vec![
            Box::new(string::RandomString::STRING),
            Box::new(string::RandomString::PASSWORD),
            Box::new(integer::RandomInteger),
            Box::new(uuid::RandomUuid),
            Box::new(pet::RandomPet),
        ]
    }
}

plinth_sdk::export_provider!(Random);

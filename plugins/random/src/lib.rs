//! The `random` provider: values generated once and then kept, like Terraform's and Pulumi's
//! random provider. Every input replaces the resource when it changes — change `keepers` to get
//! a new value — and `read` returns the stored state.
//!
//! | type | inputs | `result` | id |
//! |---|---|---|---|
//! | `random:RandomString` | `length`, `special`, `upper`, `lower`, `numeric`, `min_upper`, `min_lower`, `min_numeric`, `min_special`, `override_special`, `keepers` | string | the result |
//! | `random:RandomPassword` | as RandomString | secret string | `none` |
//! | `random:RandomInteger` | `min`, `max`, `keepers` | integer | the result |
//! | `random:RandomUuid` | `keepers` | string | the result |
//! | `random:RandomPet` | `length`, `prefix`, `separator`, `keepers` | string | the result |
//!
//! `plinth import` adopts a RandomString by its result (its `length` is the string's, the other
//! inputs their defaults) and a RandomPet by its name (its `length` is its words between `-`).
//!
//! Each is a typed resource: its schema (types, defaults, descriptions) is derived from its
//! input and output structs. The outputs are the inputs, with defaults applied, plus `result`;
//! during a preview `result` is unknown.

mod charset;
mod inputs;
mod integer;
mod pet;
mod string;
mod uuid;

use plinth_sdk::{Provider, ResourceType, Typed};

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

    fn description(&self) -> &str {
        "Random values generated once and kept until an input changes."
    }

    fn resource_types(&self) -> Vec<Box<dyn ResourceType>> {
        vec![
            Box::new(Typed(string::RandomString)),
            Box::new(Typed(string::RandomPassword)),
            Box::new(Typed(integer::RandomInteger)),
            Box::new(Typed(uuid::RandomUuid)),
            Box::new(Typed(pet::RandomPet)),
        ]
    }
}

plinth_sdk::export_provider!(Random);

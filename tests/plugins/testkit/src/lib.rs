//! The `testkit` provider, for end-to-end tests of the engine and the runtime.
//!
//! - `testkit:Echo` returns its (free-form) inputs as outputs, plus `generation`: 1 when
//!   created, incremented by each update. A change to `replace_key` replaces the resource; a
//!   change to any other input updates it in place. The id is a random UUID.
//! - `testkit:Panic`, `testkit:Trap`, `testkit:Fail` and `testkit:Partial` break in `create`
//!   (see [`faults`]); during a preview they plan like any other resource.

mod echo;
mod faults;

use plinth_sdk::{Provider, ResourceType};

/// The testkit provider.
#[derive(Default)]
struct Testkit;

impl Provider for Testkit {
    fn name(&self) -> &str {
        "testkit"
    }

    fn version(&self) -> &str {
        env!("CARGO_PKG_VERSION")
    }

    fn resource_types(&self) -> Vec<Box<dyn ResourceType>> {
        vec![
            Box::new(echo::Echo),
            Box::new(faults::Faulty::PANIC),
            Box::new(faults::Faulty::TRAP),
            Box::new(faults::Faulty::FAIL),
            Box::new(faults::Faulty::PARTIAL),
        ]
    }
}

plinth_sdk::export_provider!(Testkit);

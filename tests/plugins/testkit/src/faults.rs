//! Resource types that break on purpose when created, so that tests can check that a broken
//! plugin fails only its step:
//!
//! - `testkit:Panic` panics (`testkit: panic requested`);
//! - `testkit:Trap` executes a WebAssembly `unreachable` instruction;
//! - `testkit:Fail` returns a `failed` error (`testkit: failure requested`);
//! - `testkit:Partial` returns `partially-created` with a UUID id, its inputs as outputs and the
//!   reason `testkit: partial creation requested`.
//!
//! During a preview they return their inputs as the planned outputs. Their `diff` breaks the same
//! way (`Partial` excepted, whose diff is the schema's). `testkit:Fail` states the hint that
//! unchanged inputs mean no change, so the host answers its `diff` itself for those; the others
//! state nothing and are asked every time.

use plinth_sdk::{
    Created, Diff, PropertyMap, ProviderError, ResourceContext, ResourceSchema, ResourceType,
};

/// How a resource type breaks.
#[derive(Debug, Clone, Copy)]
enum Fault {
    Panic,
    Trap,
    Fail,
    Partial,
}

/// A resource type that breaks in `create`.
pub(crate) struct Faulty {
    token: &'static str,
    fault: Fault,
}

impl Faulty {
    pub(crate) const PANIC: Faulty = Faulty::new("testkit:Panic", Fault::Panic);
    pub(crate) const TRAP: Faulty = Faulty::new("testkit:Trap", Fault::Trap);
    pub(crate) const FAIL: Faulty = Faulty::new("testkit:Fail", Fault::Fail);
    pub(crate) const PARTIAL: Faulty = Faulty::new("testkit:Partial", Fault::Partial);

    const fn new(token: &'static str, fault: Fault) -> Faulty {
        Faulty { token, fault }
    }
}

impl ResourceType for Faulty {
    fn schema(&self) -> ResourceSchema {
        let schema = ResourceSchema::new(self.token)
            .describe("Breaks when created or diffed, for tests.")
            .open();
        match self.fault {
            Fault::Fail => schema.equal_inputs_mean_no_change(),
            _ => schema,
        }
    }

    fn diff(
        &self,
        ctx: &ResourceContext<'_>,
        _id: &str,
        old_inputs: &PropertyMap,
        _old_outputs: &PropertyMap,
        new_inputs: &PropertyMap,
    ) -> Result<Diff, ProviderError> {
        match self.fault {
            Fault::Panic => panic!("testkit: panic requested"),
            Fault::Trap => trap(),
            Fault::Fail => Err(ProviderError::failed("testkit: failure requested")),
            Fault::Partial => Ok(ctx.schema().diff(old_inputs, new_inputs)),
        }
    }

    fn create(
        &self,
        ctx: &ResourceContext<'_>,
        inputs: PropertyMap,
    ) -> Result<Created, ProviderError> {
        if ctx.preview() {
            return Ok(Created {
                id: String::new(),
                outputs: inputs,
            });
        }
        match self.fault {
            Fault::Panic => panic!("testkit: panic requested"),
            Fault::Trap => trap(),
            Fault::Fail => Err(ProviderError::failed("testkit: failure requested")),
            Fault::Partial => Err(ProviderError::PartiallyCreated {
                id: uuid::Uuid::new_v4().to_string(),
                outputs: inputs,
                reasons: vec!["testkit: partial creation requested".to_owned()],
            }),
        }
    }
}

/// Stops with a WebAssembly trap (an abort when built natively).
fn trap() -> ! {
    #[cfg(target_arch = "wasm32")]
    core::arch::wasm32::unreachable();
    #[cfg(not(target_arch = "wasm32"))]
    std::process::abort();
}

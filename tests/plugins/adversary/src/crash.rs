//! `adversary:Crash`: a resource that panics or traps in the provider operation its inputs
//! name. Inputs: `crash_in`, one of [`OPERATIONS`], and `crash_how`, `panic` (the default) or
//! `trap` (a WebAssembly `unreachable`), and `crash_say`, lines written to stderr first (with
//! visible escapes, see [`crate::ids::unescape`]: a fake line of plinth's own output, say). In every other operation it behaves like an echo that
//! updates in place, so the operation that breaks can be reached: `diff` and `update` on the
//! next `up` after `crash_in` changes, `delete` on the `destroy` after it was set, `read` when
//! the program reads the resource. The provider itself breaks in `check-config` or `configure`
//! when its configuration holds `crash_in`.
//!
//! The crash happens in every call of that operation, previews included: a hostile plugin does
//! not care.

use plinth_sdk::{
    Checked, Created, Diff, PropertyMap, ProviderError, ReadResult, ResourceContext,
    ResourceSchema, ResourceType,
};

use crate::inputs;

/// The operations a crash can be asked for.
pub(crate) const OPERATIONS: [&str; 8] = [
    "check-config",
    "configure",
    "check",
    "diff",
    "create",
    "read",
    "update",
    "delete",
];

/// How to break.
#[derive(Debug, Clone, Copy)]
enum How {
    Panic,
    Trap,
}

/// A crash asked for by a resource's inputs or the provider's configuration.
struct Fault {
    how: How,
    op: &'static str,
    say: Option<String>,
}

impl Fault {
    /// Checks `inputs` for a crash and returns it if it is meant for `op`. A `crash_in` or
    /// `crash_how` that means nothing is an `invalid` error, so that a typo cannot pass for a
    /// contained crash.
    fn requested(inputs: &PropertyMap, op: &'static str) -> Result<Option<Fault>, ProviderError> {
        let Some(target) = inputs::optional(inputs, "crash_in") else {
            return Ok(None);
        };
        if !OPERATIONS.contains(&target) {
            return Err(ProviderError::invalid(
                "crash_in",
                format!("expected one of {}", OPERATIONS.join(", ")),
            ));
        }
        let how = match inputs::optional(inputs, "crash_how").unwrap_or("panic") {
            "panic" => How::Panic,
            "trap" => How::Trap,
            _ => {
                return Err(ProviderError::invalid(
                    "crash_how",
                    "expected panic or trap",
                ));
            }
        };
        let say = inputs::optional(inputs, "crash_say").map(crate::ids::unescape);
        Ok((target == op).then_some(Fault { how, op, say }))
    }

    /// Panics or traps, as asked.
    fn strike(self) -> ! {
        if let Some(say) = &self.say {
            eprintln!("{say}");
        }
        match self.how {
            How::Panic => panic!("adversary: panic requested in `{}`", self.op),
            How::Trap => trap(),
        }
    }
}

/// Panics or traps if `inputs` ask for it in `op`.
pub(crate) fn strike_if_requested(
    inputs: &PropertyMap,
    op: &'static str,
) -> Result<(), ProviderError> {
    match Fault::requested(inputs, op)? {
        Some(fault) => fault.strike(),
        None => Ok(()),
    }
}

/// Stops with a WebAssembly trap (an abort when built natively).
fn trap() -> ! {
    #[cfg(target_arch = "wasm32")]
    core::arch::wasm32::unreachable();
    #[cfg(not(target_arch = "wasm32"))]
    std::process::abort();
}

/// The `adversary:Crash` resource type.
pub(crate) struct Crash;

impl ResourceType for Crash {
    fn schema(&self) -> ResourceSchema {
        ResourceSchema::new("adversary:Crash")
            .describe("Panics or traps in the operation `crash_in` names; an echo otherwise.")
    }

    fn check(
        &self,
        _ctx: &ResourceContext<'_>,
        _olds: Option<&PropertyMap>,
        news: PropertyMap,
    ) -> Result<Checked, ProviderError> {
        strike_if_requested(&news, "check")?;
        Ok(Checked::new(news))
    }

    fn diff(
        &self,
        ctx: &ResourceContext<'_>,
        _id: &str,
        old_inputs: &PropertyMap,
        _old_outputs: &PropertyMap,
        new_inputs: &PropertyMap,
    ) -> Result<Diff, ProviderError> {
        strike_if_requested(new_inputs, "diff")?;
        Ok(ctx.schema().diff(old_inputs, new_inputs))
    }

    fn create(
        &self,
        ctx: &ResourceContext<'_>,
        inputs: PropertyMap,
    ) -> Result<Created, ProviderError> {
        strike_if_requested(&inputs, "create")?;
        Ok(Created {
            id: ctx.name().to_owned(),
            outputs: inputs,
        })
    }

    fn read(
        &self,
        _ctx: &ResourceContext<'_>,
        id: String,
        inputs: PropertyMap,
        outputs: PropertyMap,
    ) -> Result<Option<ReadResult>, ProviderError> {
        strike_if_requested(&inputs, "read")?;
        // A read of a resource the program does not manage has no stored outputs.
        let outputs = if outputs.is_empty() {
            inputs.clone()
        } else {
            outputs
        };
        Ok(Some(ReadResult {
            id,
            inputs,
            outputs,
        }))
    }

    fn update(
        &self,
        _ctx: &ResourceContext<'_>,
        _id: &str,
        _old_inputs: PropertyMap,
        _old_outputs: PropertyMap,
        new_inputs: PropertyMap,
    ) -> Result<PropertyMap, ProviderError> {
        strike_if_requested(&new_inputs, "update")?;
        Ok(new_inputs)
    }

    fn delete(
        &self,
        _ctx: &ResourceContext<'_>,
        _id: &str,
        inputs: PropertyMap,
        _outputs: PropertyMap,
    ) -> Result<(), ProviderError> {
        strike_if_requested(&inputs, "delete")
    }
}

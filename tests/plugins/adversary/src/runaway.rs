//! `adversary:Runaway`: a resource whose creation tries to exhaust the host. Input `attack`:
//!
//! - `loop`: spins forever;
//! - `recurse`: recurses with frames holding data, as Rust code does, until its stack (which a
//!   Rust guest keeps in its linear memory) runs out;
//! - `recurse-calls`: recurses with frames too small to touch that stack, until the engine's
//!   own call-stack limit stops it;
//! - `allocate`: allocates memory without bound (and touches it, so it is really used);
//! - `huge-output`: returns an output `blob` of `size_mb` MiB (default 200).
//!
//! Any other value is an `invalid` error.

use std::hint::black_box;

use plinth_sdk::{
    Created, PropertyMap, PropertySchema, ProviderError, ResourceContext, ResourceSchema,
    ResourceType,
};

use crate::inputs;

/// The `adversary:Runaway` resource type.
pub(crate) struct Runaway;

impl ResourceType for Runaway {
    fn schema(&self) -> ResourceSchema {
        ResourceSchema::new("adversary:Runaway")
            .open()
            .describe(
                "Tries to exhaust the host when created: loop, recurse, recurse-calls, allocate \
                 or huge-output.",
            )
            .input(PropertySchema::new("attack").required())
            .input(PropertySchema::new("size_mb").describe("huge-output: the size of `blob`."))
            .output(PropertySchema::new("blob").describe("huge-output: the huge value."))
    }

    fn create(
        &self,
        ctx: &ResourceContext<'_>,
        mut inputs: PropertyMap,
    ) -> Result<Created, ProviderError> {
        match inputs::required(&inputs, "attack")? {
            "loop" => spin(),
            "recurse" => {
                black_box(recurse(black_box(0)));
            }
            "recurse-calls" => {
                black_box(recurse_calls(black_box(0)));
            }
            "allocate" => hoard(),
            "huge-output" => {
                let size_mb = inputs::number(&inputs, "size_mb")?.unwrap_or(200);
                let size = usize::try_from(size_mb << 20)
                    .map_err(|_| ProviderError::invalid("size_mb", "too large"))?;
                // Allocated at its final size: growing it would need twice the memory.
                inputs.insert("blob".to_owned(), "x".repeat(size).into());
            }
            _ => {
                return Err(ProviderError::invalid(
                    "attack",
                    "expected loop, recurse, recurse-calls, allocate or huge-output",
                ));
            }
        }
        Ok(Created {
            id: ctx.name().to_owned(),
            outputs: inputs,
        })
    }
}

fn spin() -> ! {
    let mut n: u64 = 0;
    loop {
        n = black_box(n.wrapping_add(1));
    }
}

/// Recurses with a frame the optimizer cannot remove, until the stack runs out.
#[allow(unconditional_recursion)] // the point of the attack
fn recurse(depth: u64) -> u64 {
    let frame = black_box([depth; 64]);
    recurse(depth + 1).wrapping_add(frame[(depth % 64) as usize])
}

/// Recurses with nothing but a counter, which lives in WebAssembly locals.
#[allow(unconditional_recursion)] // the point of the attack
fn recurse_calls(depth: u64) -> u64 {
    black_box(recurse_calls(black_box(depth + 1))).wrapping_add(1)
}

/// Allocates 1 MiB blocks and keeps them all, until the allocator fails.
fn hoard() -> ! {
    let mut blocks: Vec<Vec<u8>> = Vec::new();
    loop {
        blocks.push(black_box(vec![1u8; 1 << 20]));
    }
}

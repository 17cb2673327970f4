//! The glue between the generated `callbacks` interface and the program's `main`.

use std::marker::PhantomData;

use super::bindings::exports::plinth::plugin::callbacks as wit;
use super::bindings::plinth::plugin::monitor;
use super::{Context, applies};
use crate::value::nodes::{decode, encode, encode_map};
use crate::{Error, wire};

/// The program's entry point, implemented by `export_program!` for the function it names.
pub trait ProgramMain {
    /// Runs the program's body.
    fn main(ctx: &Context) -> Result<(), Error>;
}

/// Implements the generated `Guest` trait for the program `M`; named by `export_program!`.
pub struct ProgramExport<M>(PhantomData<M>);

impl<M: ProgramMain> wit::Guest for ProgramExport<M> {
    fn run() -> Result<(), String> {
        let ctx = Context::new();
        M::main(&ctx).map_err(|e| e.to_string())?;
        monitor::register_outputs(None, &encode_map(ctx.into_exports()));
        Ok(())
    }

    fn resume(apply: u64, inputs: Vec<wire::Value>) -> Result<wire::Value, String> {
        let inputs = inputs
            .into_iter()
            .map(decode)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| e.to_string())?;
        applies::resume(apply, inputs).map(encode)
    }
}

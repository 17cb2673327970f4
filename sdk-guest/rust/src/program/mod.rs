//! Writing a program: a function `fn main(ctx: &Context) -> Result<(), Error>` that declares
//! resources, exported with [`export_program!`](crate::export_program).

mod applies;
pub mod bindings;
mod context;
pub(crate) mod export;
mod output;
mod resource;

pub use context::Context;
pub use output::{AllOutputs, Input, Output};
pub use resource::{Resource, ResourceBuilder};

/// Exports a function `fn(&Context) -> Result<(), plinth_sdk::Error>` as the component's
/// program.
///
/// The function runs once per `up` or `preview`. When it returns `Ok`, the stack outputs set
/// with [`Context::export`] are sent to the engine; an `Err` fails the run with its message.
///
/// ```
/// # fn main() {}
/// # mod example {
/// use plinth_sdk::{Context, Error};
///
/// fn main(ctx: &Context) -> Result<(), Error> {
///     let pet = ctx.resource("random:RandomPet", "pet").register();
///     ctx.export("name", pet.output("result"));
///     Ok(())
/// }
///
/// plinth_sdk::export_program!(main);
/// # }
/// ```
#[macro_export]
macro_rules! export_program {
    ($main:path) => {
        const _: () = {
            struct PlinthProgramMain;

            impl $crate::__private::ProgramMain for PlinthProgramMain {
                fn main(ctx: &$crate::Context) -> ::core::result::Result<(), $crate::Error> {
                    $main(ctx)
                }
            }

            type PlinthProgramExport = $crate::__private::ProgramExport<PlinthProgramMain>;
            $crate::__private::program_bindings::export!(
                PlinthProgramExport with_types_in $crate::__private::program_bindings
            );
        };
    };
}

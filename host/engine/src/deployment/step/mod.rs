//! What one step does: decide how a registration changes its resource (same, create, update,
//! replace) from the provider's check and diff, then carry it out, recording every provider call
//! before it starts and after it ends.
//!
//! [`request`] is what a step is given and [`result`] what it gives back; [`plan`] decides,
//! [`execute`] carries out a registration's step, [`delete`] the deletes, [`provider`] the steps
//! of provider resources and [`untargeted`] what `--target` leaves out; [`context`], [`base`]
//! and [`claims`] hold what the steps of one deployment share.

pub(crate) mod base;
mod claims;
mod context;
mod delete;
mod execute;
mod plan;
mod policy;
mod provider;
pub(crate) mod request;
pub(crate) mod result;
mod untargeted;

pub(crate) use context::StepContext;
pub(crate) use execute::unrecordable_read;
pub use result::StepError;

//! The host bindings of the WIT contract, generated in `plinth-wit-bindings` (a crate of its own,
//! so that a change to the runtime does not expand them again): `v0_3` is the current version,
//! `v0_2` and `v0_1` are kept so that guests built against them keep loading; `policy` is the
//! policy-pack world.
//!
//! 0.1 and 0.2 share one set of value types, [`legacy_types`]; 0.3's are [`types`];
//! [`crate::abi::abi_upgrade`] converts between the two.

pub(crate) use plinth_wit_bindings::{legacy_types, policy, types, v0_1, v0_2, v0_3};

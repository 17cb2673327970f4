//! The ABI: the WIT contract's host bindings and its versions, the upgrade of an older
//! version's types to the current one, and the conversion of what crosses it (values, schemas,
//! a guest's strings, secrets marked again) into the engine's types.

pub(crate) mod abi_upgrade;
pub(crate) mod bindings;
pub(crate) mod guest;
pub(crate) mod inspect;
pub(crate) mod remark;
pub(crate) mod schema;
pub(crate) mod values;
pub(crate) mod versions;

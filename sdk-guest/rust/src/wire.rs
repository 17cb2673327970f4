//! The types of the WIT interface `plinth:plugin/types`, defined here once and shared by the
//! bindings of both worlds (`generate!` maps the interface to this module with `with`).
//!
//! Their shape must stay exactly what `wit-bindgen` would generate: the generated glue builds and
//! matches them field by field.

#[cfg(feature = "provider")]
pub use crate::provider::CheckFailure;

/// A field of another registration that a program value refers to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum OutputField {
    /// A property of the registration's outputs at a path; the empty path is the whole value.
    Property(Vec<String>),
    /// The provider-assigned id of a resource.
    Id,
    /// The URN of a resource.
    Urn,
}

/// A reference from a program value to the not-yet-known output of another registration.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OutputRef {
    /// The handle returned when the other registration was made.
    pub handle: u64,
    /// Which part of that registration's result is meant.
    pub field: OutputField,
}

/// One node of a flattened value tree.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    /// The absence of a value.
    Null,
    /// `true` or `false`.
    Boolean(bool),
    /// A whole number.
    Integer(i64),
    /// A floating-point number.
    Number(f64),
    /// A UTF-8 string.
    Text(String),
    /// Children, by node index.
    Array(Vec<u32>),
    /// Keys and children, by node index.
    Object(Vec<(String, u32)>),
    /// The index of the secret's plaintext node.
    Secret(u32),
    /// A value not known yet (during preview).
    Unknown,
    /// Program to engine only: the output of another registration.
    Output(OutputRef),
}

/// A flattened value: `nodes[0]` is the root.
#[derive(Debug, Clone, PartialEq)]
pub struct Value {
    /// The nodes; the root first, containers refer to their children by index.
    pub nodes: Vec<Node>,
}

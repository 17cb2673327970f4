//! Host bindings generated from plinth's WIT contract, one module per package version the host
//! loads: `wit/plugin` (the current one, 0.3), and `wit/plugin-0.2` and `wit/plugin-0.1`, kept so
//! that guests built against them keep loading.
//!
//! The six `bindgen!` expansions (three versions × two worlds) are most of what compiling the
//! runtime costs; in a crate of their own, which changes only with the WIT files, they are expanded
//! once instead of on every change to the runtime.
//!
//! 0.1 and 0.2 share one set of value types (their `types` interface is the same, and wasmtime
//! checks types by shape): [`legacy_types`]. 0.3 added integers to values, so its own types are
//! [`types`]; the runtime's `abi_upgrade` module converts between the two.

/// `plinth:plugin@0.3.0`, the current version.
pub mod v0_3 {
    /// The `provider-plugin` world: the host calls a provider's exports.
    pub mod provider {
        wasmtime::component::bindgen!({
            path: "../../wit/plugin",
            world: "provider-plugin",
            exports: { default: async },
            additional_derives: [PartialEq],
        });
    }

    /// The `program` world: the host implements `monitor` and calls the program's callbacks.
    pub mod program {
        wasmtime::component::bindgen!({
            path: "../../wit/plugin",
            world: "program",
            // A host function fails (traps the guest) when the guest sends a malformed value.
            imports: {
                "plinth:plugin/monitor.invoke": async | trappable,
                default: trappable,
            },
            exports: { default: async },
            with: {
                "plinth:plugin/types": crate::v0_3::provider::plinth::plugin::types,
            },
        });
    }
}

/// `plinth:plugin@0.2.0`: numbers are floats only, property schemas are untyped.
pub mod v0_2 {
    /// The `provider-plugin` world of 0.2.
    pub mod provider {
        wasmtime::component::bindgen!({
            path: "../../wit/plugin-0.2",
            world: "provider-plugin",
            exports: { default: async },
            additional_derives: [PartialEq],
        });
    }

    /// The `program` world of 0.2.
    pub mod program {
        wasmtime::component::bindgen!({
            path: "../../wit/plugin-0.2",
            world: "program",
            imports: {
                "plinth:plugin/monitor.invoke": async | trappable,
                default: trappable,
            },
            exports: { default: async },
            with: {
                "plinth:plugin/types": crate::v0_2::provider::plinth::plugin::types,
            },
        });
    }
}

/// `plinth:plugin@0.1.0`, whose provider declares no capabilities.
pub mod v0_1 {
    /// The `provider-plugin` world of 0.1.
    pub mod provider {
        wasmtime::component::bindgen!({
            path: "../../wit/plugin-0.1",
            world: "provider-plugin",
            exports: { default: async },
            additional_derives: [PartialEq],
            with: {
                "plinth:plugin/types": crate::v0_2::provider::plinth::plugin::types,
            },
        });
    }

    /// The `program` world of 0.1.
    pub mod program {
        wasmtime::component::bindgen!({
            path: "../../wit/plugin-0.1",
            world: "program",
            imports: {
                "plinth:plugin/monitor.invoke": async | trappable,
                default: trappable,
            },
            exports: { default: async },
            with: {
                "plinth:plugin/types": crate::v0_2::provider::plinth::plugin::types,
            },
        });
    }
}

/// `plinth:policy@0.1.0`: the `policy-pack` world, whose values are those of the current
/// `plinth:plugin` version.
pub mod policy {
    wasmtime::component::bindgen!({
        path: ["../../wit/plugin", "../../wit/policy"],
        world: "plinth:policy/policy-pack@0.1.0",
        exports: { default: async },
        with: {
            "plinth:plugin/types": crate::v0_3::provider::plinth::plugin::types,
        },
    });
}

/// The value types 0.1 and 0.2 share.
pub use v0_2::provider::plinth::plugin::types as legacy_types;
/// The value types of the current version.
pub use v0_3::provider::plinth::plugin::types;

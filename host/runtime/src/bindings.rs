//! Host bindings generated from the WIT contract, one module per package version this host
//! loads: `wit/plugin` (the current one, 0.2) and `wit/plugin-0.1`, kept so that guests built
//! against it keep loading.
//!
//! Every version shares the current version's value types: the `types` interface has not changed,
//! and wasmtime checks types by shape, so a 0.1 guest's values lift into the same Rust types.

/// `plinth:plugin@0.2.0`, the current version.
pub mod v0_2 {
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
                "plinth:plugin/types": crate::bindings::v0_2::provider::plinth::plugin::types,
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
            with: {
                "plinth:plugin/types": crate::bindings::v0_2::provider::plinth::plugin::types,
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
                "plinth:plugin/types": crate::bindings::v0_2::provider::plinth::plugin::types,
            },
        });
    }
}

/// The value types every version shares.
pub(crate) use v0_2::provider::plinth::plugin::types;

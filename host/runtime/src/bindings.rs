//! Host bindings generated from the WIT contract in `wit/plugin`.

/// The `provider-plugin` world: the host calls a provider's exports.
pub(crate) mod provider {
    wasmtime::component::bindgen!({
        path: "../../wit/plugin",
        world: "provider-plugin",
        exports: { default: async },
        additional_derives: [PartialEq],
    });
}

/// The `program` world: the host implements `monitor` and calls the program's callbacks.
pub(crate) mod program {
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
            "plinth:plugin/types": super::provider::plinth::plugin::types,
        },
    });
}

/// The value types both worlds share.
pub(crate) use provider::plinth::plugin::types;

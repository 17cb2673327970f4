//! The `reach` provider, for end-to-end tests of what the sandbox lets a plugin reach. Each
//! resource type acts once, when created (never in a preview), on its string inputs, and
//! reports what it got as outputs; when the sandbox refuses, `create` fails with the error the
//! guest saw.
//!
//! | type | inputs | outputs |
//! |---|---|---|
//! | `reach:Env` | `name` | `value`, the variable's value; fails if it is not set |
//! | `reach:Tcp` | `host`, `port`, `line` | `reply`: the line the server sent back |
//! | `reach:Lookup` | `host` | `addresses`: the addresses, comma-separated |
//! | `reach:Udp` | `host`, `port`, `message` | `reply`: the datagram the server sent back |
//! | `reach:Listen` | `protocol` (`tcp`, `udp`), `address` | `bound`: the local address bound |
//! | `reach:Http` | `url` | `status`, `body` of a GET |
//! | `reach:Alloc` | `mib` | `mib`: allocates and touches that many MiB |
//! | `reach:Spin` | `ms` | `ms`: keeps the CPU busy that long |
//! | `reach:Sleep` | `ms` | `ms`: sleeps that long |

mod limits;
mod listen;
mod net;

use plinth_sdk::{
    Created, PropertyMap, Provider, ProviderError, ResourceContext, ResourceSchema, ResourceType,
    Value,
};

/// The reach provider.
#[derive(Default)]
struct Reach;

impl Provider for Reach {
    fn name(&self) -> &str {
        "reach"
    }

    fn version(&self) -> &str {
        env!("CARGO_PKG_VERSION")
    }

    fn resource_types(&self) -> Vec<Box<dyn ResourceType>> {
        [
            ("reach:Env", env as Action),
            ("reach:Tcp", net::tcp),
            ("reach:Lookup", net::lookup),
            ("reach:Udp", net::udp),
            ("reach:Listen", listen::listen),
            ("reach:Http", net::http),
            ("reach:Alloc", limits::alloc),
            ("reach:Spin", limits::spin),
            ("reach:Sleep", limits::sleep),
        ]
        .into_iter()
        .map(|(token, act)| Box::new(Attempt { token, act }) as Box<dyn ResourceType>)
        .collect()
    }
}

/// What a resource type does on create: its outputs from its inputs.
type Action = fn(&PropertyMap) -> Result<PropertyMap, ProviderError>;

/// A resource type that acts once, when created.
struct Attempt {
    token: &'static str,
    act: Action,
}

impl ResourceType for Attempt {
    fn schema(&self) -> ResourceSchema {
        ResourceSchema::new(self.token)
            .describe("Tries something the sandbox may refuse.")
            .open()
    }

    fn create(
        &self,
        ctx: &ResourceContext<'_>,
        inputs: PropertyMap,
    ) -> Result<Created, ProviderError> {
        let outputs = if ctx.preview() {
            PropertyMap::new()
        } else {
            (self.act)(&inputs)?
        };
        Ok(Created {
            id: if ctx.preview() {
                String::new()
            } else {
                ctx.name().to_owned()
            },
            outputs,
        })
    }
}

/// Reads the environment variable `name`.
fn env(inputs: &PropertyMap) -> Result<PropertyMap, ProviderError> {
    let name = input(inputs, "name")?;
    match std::env::var(name) {
        Ok(value) => Ok(outputs([("value", value.into())])),
        Err(e) => Err(ProviderError::failed(format!(
            "reading the environment variable {name}: {e}"
        ))),
    }
}

/// The string input `key`.
pub(crate) fn input<'a>(inputs: &'a PropertyMap, key: &str) -> Result<&'a str, ProviderError> {
    inputs
        .get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| ProviderError::invalid(key, "a string is required"))
}

/// The input `key`, a number written as a string.
pub(crate) fn number<T: std::str::FromStr>(
    inputs: &PropertyMap,
    key: &str,
) -> Result<T, ProviderError> {
    input(inputs, key)?
        .parse()
        .map_err(|_| ProviderError::invalid(key, "a number is required"))
}

pub(crate) fn outputs<const N: usize>(pairs: [(&str, Value); N]) -> PropertyMap {
    pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}

plinth_sdk::export_provider!(Reach);

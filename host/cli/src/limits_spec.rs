//! `limits:` as written in `Plinth.yaml`, a plugin's or the program's: sizes and durations with
//! their units, checked into the runtime's [`Limits`].

use plinth_runtime::Limits;
use serde::Deserialize;

/// A plugin's `limits:`, e.g. `{ memory: 512MiB, call-timeout: 2m }`; what is not given keeps
/// its default (256 MiB, 60 s).
#[derive(Debug, Default, Deserialize)]
#[serde(try_from = "RawLimits")]
pub struct LimitsSpec(pub Limits);

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawLimits {
    #[serde(default)]
    memory: Option<Quantity>,
    #[serde(default)]
    call_timeout: Option<Quantity>,
}

/// A size or a duration as written: with a unit, or a bare number.
#[derive(Deserialize)]
#[serde(untagged)]
pub enum Quantity {
    Number(u64),
    Text(String),
}

impl TryFrom<RawLimits> for LimitsSpec {
    type Error = String;

    fn try_from(raw: RawLimits) -> Result<LimitsSpec, String> {
        limits_from(raw.memory, raw.call_timeout).map(LimitsSpec)
    }
}

/// The limits `memory` and `call_timeout` say, each its default if not given.
pub fn limits_from(
    memory: Option<Quantity>,
    call_timeout: Option<Quantity>,
) -> Result<Limits, String> {
    let default = Limits::default();
    let memory = match memory {
        None => default.memory_bytes as u64,
        // A bare number of bytes is unambiguous.
        Some(Quantity::Number(bytes)) => bytes,
        Some(Quantity::Text(text)) => text
            .trim()
            .parse::<bytesize::ByteSize>()
            .map_err(|e| format!("memory `{text}` is not a size such as `512MiB` or `1GiB`: {e}"))?
            .as_u64(),
    };
    let call_timeout = match call_timeout {
        None => default.call_timeout,
        Some(Quantity::Number(n)) => {
            return Err(format!(
                "call-timeout `{n}` has no unit: write e.g. `{n}s` or `{n}ms`"
            ));
        }
        Some(Quantity::Text(text)) => humantime::parse_duration(text.trim()).map_err(|e| {
            format!("call-timeout `{text}` is not a duration such as `30s` or `2m`: {e}")
        })?,
    };
    Limits::new(memory, call_timeout).map_err(|e| e.to_string())
}

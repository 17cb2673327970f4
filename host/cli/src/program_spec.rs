//! `program:` in `Plinth.yaml`: a path (`program: .`), or a path with limits, as a plugin has:
//!
//! ```yaml
//! program:
//!   path: .
//!   limits: { memory: 512MiB, call-timeout: 2m, registrations: 1000000, applies: 2000000,
//!             input-bytes: 2GiB, log-bytes: 256MiB }
//! ```

use std::fmt;
use std::path::PathBuf;

use plinth_engine::budget::ProgramBudget;
use plinth_runtime::Limits;
use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};

use crate::limits_spec::{Quantity, limits_from};

/// The program, and what it may use.
#[derive(Debug, PartialEq)]
pub struct ProgramSpec {
    /// A `.wasm` component, or a directory to build, relative to the project.
    pub path: PathBuf,
    /// The memory and time each call into it may use.
    pub limits: Limits,
    /// What it may make the host hold.
    pub budget: ProgramBudget,
}

impl Default for ProgramSpec {
    fn default() -> Self {
        ProgramSpec::at(PathBuf::from("."))
    }
}

impl ProgramSpec {
    fn at(path: PathBuf) -> ProgramSpec {
        ProgramSpec {
            path,
            limits: Limits::default(),
            budget: ProgramBudget::default(),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSpec {
    path: Option<PathBuf>,
    #[serde(default)]
    limits: RawProgramLimits,
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawProgramLimits {
    memory: Option<Quantity>,
    call_timeout: Option<Quantity>,
    registrations: Option<u64>,
    applies: Option<u64>,
    input_bytes: Option<Quantity>,
    log_bytes: Option<Quantity>,
}

impl TryFrom<RawSpec> for ProgramSpec {
    type Error = String;

    fn try_from(raw: RawSpec) -> Result<ProgramSpec, String> {
        let limits = raw.limits;
        let default = ProgramBudget::default();
        let positive = |n: Option<u64>, key: &str, default: u64| match n {
            None => Ok(default),
            Some(0) => Err(format!(
                "program limit `{key}` must be at least 1 (the default is {default})"
            )),
            Some(n) => Ok(n),
        };
        let input_bytes = size(limits.input_bytes, "input-bytes", default.input_bytes)?;
        let log_bytes = size(limits.log_bytes, "log-bytes", default.log_bytes)?;
        Ok(ProgramSpec {
            path: raw.path.unwrap_or_else(|| PathBuf::from(".")),
            limits: limits_from(limits.memory, limits.call_timeout)?,
            budget: ProgramBudget {
                registrations: positive(
                    limits.registrations,
                    "registrations",
                    default.registrations,
                )?,
                applies: positive(limits.applies, "applies", default.applies)?,
                input_bytes: positive(Some(input_bytes), "input-bytes", default.input_bytes)?,
                log_bytes: positive(Some(log_bytes), "log-bytes", default.log_bytes)?,
            },
        })
    }
}

/// A size limit `key`: a number of bytes, or text such as `512MiB`; `default` if not given.
fn size(quantity: Option<Quantity>, key: &str, default: u64) -> Result<u64, String> {
    match quantity {
        None => Ok(default),
        Some(Quantity::Number(bytes)) => Ok(bytes),
        Some(Quantity::Text(text)) => (text.trim().parse::<bytesize::ByteSize>())
            .map(|size| size.as_u64())
            .map_err(|e| format!("{key} `{text}` is not a size such as `512MiB` or `2GiB`: {e}")),
    }
}

/// A path, or a mapping: each form with its own errors (an untagged enum would say only that
/// neither matched).
impl<'de> Deserialize<'de> for ProgramSpec {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct SpecVisitor;

        impl<'de> Visitor<'de> for SpecVisitor {
            type Value = ProgramSpec;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a path, or a mapping with `path` and `limits`")
            }

            fn visit_str<E: de::Error>(self, path: &str) -> Result<ProgramSpec, E> {
                Ok(ProgramSpec::at(PathBuf::from(path)))
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<ProgramSpec, A::Error> {
                let raw = RawSpec::deserialize(de::value::MapAccessDeserializer::new(map))?;
                ProgramSpec::try_from(raw).map_err(de::Error::custom)
            }
        }

        deserializer.deserialize_any(SpecVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(yaml: &str) -> Result<ProgramSpec, String> {
        serde_yaml_ng::from_str(yaml).map_err(|e| e.to_string())
    }

    #[test]
    fn a_path_or_a_path_with_limits() {
        assert_eq!(
            parse("build/p.wasm").unwrap(),
            ProgramSpec::at("build/p.wasm".into())
        );
        let spec = parse(
            "path: p.wasm\nlimits: { memory: 64MiB, registrations: 10, applies: 20, \
             input-bytes: 1KiB, log-bytes: 2KiB }",
        )
        .unwrap();
        assert_eq!(spec.path, PathBuf::from("p.wasm"));
        assert_eq!(spec.limits.memory_bytes, 64 << 20);
        assert_eq!(
            spec.budget,
            ProgramBudget {
                registrations: 10,
                applies: 20,
                input_bytes: 1024,
                log_bytes: 2048,
            }
        );
        assert_eq!(parse("limits: {}").unwrap(), ProgramSpec::default());
    }

    #[test]
    fn bad_limits_say_what_is_wrong() {
        for (yaml, says) in [
            (
                "limits: { registrations: 0 }",
                "`registrations` must be at least 1",
            ),
            ("limits: { resources: 5 }", "unknown field `resources`"),
            (
                "limits: { input-bytes: lots }",
                "input-bytes `lots` is not a size",
            ),
            ("limits: { log-bytes: 0 }", "`log-bytes` must be at least 1"),
            ("limits: { memory: 1KiB }", "too small"),
            ("[a]", "a path, or a mapping with `path` and `limits`"),
        ] {
            let err = parse(yaml).unwrap_err();
            assert!(err.contains(says), "{yaml}: {err}");
        }
    }
}

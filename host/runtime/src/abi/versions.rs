//! The versions of the WIT package `plinth:plugin` this host loads, and which one a component
//! was built against, read from the names of its exports.

use std::fmt;
use std::path::Path;

use wasmtime::Engine;
use wasmtime::component::Component;

use crate::error::LoadError;

/// A version of `plinth:plugin` this host loads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum WitVersion {
    /// 0.1.0: providers declare no capabilities.
    V0_1,
    /// 0.2.0: a provider's `info` declares the capabilities it asks for.
    V0_2,
    /// 0.3.0, the current version: integers are distinct from floats, schemas are typed.
    V0_3,
}

impl WitVersion {
    /// Every version this host loads, oldest first.
    pub const SUPPORTED: [WitVersion; 3] = [WitVersion::V0_1, WitVersion::V0_2, WitVersion::V0_3];

    /// The version the SDK builds against.
    pub const CURRENT: WitVersion = WitVersion::V0_3;

    /// The version as the package names it, e.g. `0.2.0`.
    pub fn as_str(self) -> &'static str {
        match self {
            WitVersion::V0_1 => "0.1.0",
            WitVersion::V0_2 => "0.2.0",
            WitVersion::V0_3 => "0.3.0",
        }
    }

    fn parse(version: &str) -> Option<WitVersion> {
        WitVersion::SUPPORTED
            .into_iter()
            .find(|v| v.as_str() == version)
    }
}

impl fmt::Display for WitVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a plinth component is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A resource provider: exports `plinth:plugin/provider`.
    Provider,
    /// A program: exports `plinth:plugin/callbacks` (and imports `plinth:plugin/monitor`).
    Program,
}

impl Kind {
    /// The interface a component of this kind exports.
    fn interface(self) -> &'static str {
        match self {
            Kind::Provider => "plinth:plugin/provider",
            Kind::Program => "plinth:plugin/callbacks",
        }
    }

    /// The name of the world, as errors say it.
    pub(crate) fn world(self) -> &'static str {
        match self {
            Kind::Provider => "provider",
            Kind::Program => "program",
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.world())
    }
}

/// `0.1.0, 0.2.0 and 0.3.0`, for messages.
pub(crate) fn supported_list() -> String {
    let versions: Vec<&str> = WitVersion::SUPPORTED.iter().map(|v| v.as_str()).collect();
    match versions.split_last() {
        Some((last, [])) => (*last).to_owned(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// The versions of `kind`'s interface that `component` exports, as written after the `@`.
fn exported_versions(engine: &Engine, component: &Component, kind: Kind) -> Vec<String> {
    let prefix = format!("{}@", kind.interface());
    component
        .component_type()
        .exports(engine)
        .filter_map(|(name, _)| name.strip_prefix(&prefix).map(str::to_owned))
        .collect()
}

/// The version of `plinth:plugin` the component at `path` was built against, as a `kind`.
pub(crate) fn detect(
    engine: &Engine,
    component: &Component,
    path: &Path,
    kind: Kind,
) -> Result<WitVersion, LoadError> {
    let exported = exported_versions(engine, component, kind);
    // A component built against one version exports one; prefer the newest if it has several.
    if let Some(version) = exported.iter().filter_map(|v| WitVersion::parse(v)).max() {
        return Ok(version);
    }
    match exported.first() {
        Some(version) => Err(LoadError::UnsupportedVersion {
            path: path.to_owned(),
            world: kind.world(),
            version: version.clone(),
            supported: supported_list(),
        }),
        None => Err(LoadError::Link {
            path: path.to_owned(),
            world: kind.world(),
            message: format!(
                "it exports no `{}` interface of any version (this plinth loads plinth:plugin {})",
                kind.interface(),
                supported_list()
            ),
        }),
    }
}

/// What `component` is: the kind and version of the first plinth interface it exports.
pub(crate) fn classify(
    engine: &Engine,
    component: &Component,
    path: &Path,
) -> Result<(Kind, WitVersion), LoadError> {
    let is = |kind| !exported_versions(engine, component, kind).is_empty();
    let kind = match (is(Kind::Provider), is(Kind::Program)) {
        (true, false) => Kind::Provider,
        (false, true) => Kind::Program,
        (provides, _) => {
            return Err(LoadError::NotPlinth {
                path: path.to_owned(),
                reason: if provides {
                    "it exports both a provider and a program".to_owned()
                } else {
                    format!(
                        "it exports neither `{}` nor `{}`",
                        Kind::Provider.interface(),
                        Kind::Program.interface()
                    )
                },
                supported: supported_list(),
            });
        }
    };
    Ok((kind, detect(engine, component, path, kind)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_and_list() {
        assert_eq!(WitVersion::parse("0.1.0"), Some(WitVersion::V0_1));
        assert_eq!(WitVersion::parse("0.2.0"), Some(WitVersion::V0_2));
        assert_eq!(WitVersion::parse("0.3.0"), Some(WitVersion::V0_3));
        assert_eq!(WitVersion::parse("0.4.0"), None);
        assert_eq!(supported_list(), "0.1.0, 0.2.0 and 0.3.0");
    }
}

//! Uniform resource names: `urn:plinth:<stack>::<project>::<type>::<name>`.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The name of a resource, unique within a stack. The type part carries the types of the
/// resource's ancestors, `parentType$childType`, so a child's name only needs to be unique under
/// its parent type.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Urn(String);

const PREFIX: &str = "urn:plinth:";

impl Urn {
    /// Builds the URN of a resource; `parent_type` is the qualified type of its parent, if any.
    pub fn new(stack: &str, project: &str, parent_type: Option<&str>, ty: &str, name: &str) -> Urn {
        let qualified = match parent_type {
            Some(parent) => format!("{parent}${ty}"),
            None => ty.to_owned(),
        };
        Urn(format!("{PREFIX}{stack}::{project}::{qualified}::{name}"))
    }

    /// Parses a URN, checking its shape.
    pub fn parse(s: &str) -> Result<Urn, String> {
        let urn = Urn(s.to_owned());
        let rest = s
            .strip_prefix(PREFIX)
            .ok_or_else(|| format!("`{s}` is not a URN: it must start with `{PREFIX}`"))?;
        if rest.splitn(4, "::").count() != 4 {
            return Err(format!(
                "`{s}` is not a URN: expected `{PREFIX}<stack>::<project>::<type>::<name>`"
            ));
        }
        Ok(urn)
    }

    fn parts(&self) -> [&str; 4] {
        let rest = &self.0[PREFIX.len()..];
        let mut it = rest.splitn(4, "::");
        std::array::from_fn(|_| it.next().unwrap_or_default())
    }

    pub fn stack(&self) -> &str {
        self.parts()[0]
    }

    pub fn project(&self) -> &str {
        self.parts()[1]
    }

    /// The type qualified by the ancestors' types, `parentType$childType`.
    pub fn qualified_type(&self) -> &str {
        self.parts()[2]
    }

    /// The resource's own type token.
    pub fn ty(&self) -> &str {
        let q = self.qualified_type();
        q.rsplit('$').next().unwrap_or(q)
    }

    pub fn name(&self) -> &str {
        self.parts()[3]
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Urn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The package a type token belongs to: the part before the first `:`. The package of a
/// provider resource (`plinth:providers:random`) is the package it provides.
pub fn package_of(ty: &str) -> &str {
    provided_package(ty).unwrap_or_else(|| ty.split(':').next().unwrap_or(ty))
}

/// The type of a provider resource begins with this, followed by the package it provides.
pub const PROVIDER_TYPE_PREFIX: &str = "plinth:providers:";

/// The package a provider resource of type `ty` provides, if it is one.
pub fn provided_package(ty: &str) -> Option<&str> {
    ty.strip_prefix(PROVIDER_TYPE_PREFIX)
}

/// The type of the provider resources of `package`.
pub fn provider_type(package: &str) -> String {
    format!("{PROVIDER_TYPE_PREFIX}{package}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_and_splits() {
        let urn = Urn::new("dev", "hello", None, "random:RandomPet", "pet");
        assert_eq!(urn.as_str(), "urn:plinth:dev::hello::random:RandomPet::pet");
        assert_eq!(urn.stack(), "dev");
        assert_eq!(urn.project(), "hello");
        assert_eq!(urn.ty(), "random:RandomPet");
        assert_eq!(urn.name(), "pet");
    }

    #[test]
    fn child_urns_carry_the_parent_type() {
        let urn = Urn::new("dev", "p", Some("my:Web"), "random:RandomPet", "a::b");
        assert_eq!(urn.qualified_type(), "my:Web$random:RandomPet");
        assert_eq!(urn.ty(), "random:RandomPet");
        assert_eq!(urn.name(), "a::b");
    }

    #[test]
    fn rejects_malformed() {
        assert!(Urn::parse("urn:pulumi:x").is_err());
        assert!(Urn::parse("urn:plinth:dev::p::t").is_err());
        assert!(Urn::parse("urn:plinth:dev::p::t::n").is_ok());
    }

    #[test]
    fn package_is_the_first_token_part() {
        assert_eq!(package_of("random:RandomPet"), "random");
        assert_eq!(package_of(&provider_type("random")), "random");
        assert_eq!(provided_package("random:RandomPet"), None);
    }
}

//! Uniform resource names: `urn:plinth:<stack>::<project>::<type>::<name>`.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::names::{self, NameProblem};

/// The name of a resource, unique within a stack. The type part carries the types of the
/// resource's ancestors, `parentType$childType`, so a child's name only needs to be unique under
/// its parent type.
///
/// Deserializing goes through [`Urn::parse`], so a URN read from a state file has its whole
/// shape checked; the accessors never panic, whatever the string.
///
/// Shared, not copied, when cloned: a state names its parent, dependencies and provider by URN,
/// and the engine keys its maps by them.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Urn(Arc<str>);

const PREFIX: &str = "urn:plinth:";

/// Why a string is not a URN.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{urn}` is not a valid URN: {problem}")]
pub struct UrnError {
    pub urn: String,
    pub problem: UrnProblem,
}

/// The first part of a URN found wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrnProblem {
    #[error("it must start with `{PREFIX}`")]
    Prefix,
    #[error("expected `{PREFIX}<stack>::<project>::<type>::<name>`")]
    Shape,
    #[error("its stack part is not a stack name ({0})")]
    Stack(NameProblem),
    #[error("its project part is not a project name ({0})")]
    Project(NameProblem),
    #[error("its type part: {0}")]
    Type(TypeTokenError),
    #[error("its name part is empty")]
    EmptyName,
}

/// Why a string is not a type token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{token}` is not a type token: expected `package:Type` or `package:module:Type`, each part non-empty and without whitespace"
)]
pub struct TypeTokenError {
    pub token: String,
}

/// Checks the shape of a type token: `package:Type` or `package:module:Type`.
pub fn check_type_token(token: &str) -> Result<(), TypeTokenError> {
    let part_ok = |p: &str| !p.is_empty() && !p.contains(|c: char| c.is_whitespace() || c == '$');
    let mut parts = 0;
    let well_formed = token.split(':').all(|p| {
        parts += 1;
        parts <= 3 && part_ok(p)
    }) && parts >= 2;
    if well_formed {
        Ok(())
    } else {
        Err(TypeTokenError {
            token: token.to_owned(),
        })
    }
}

impl Urn {
    /// Builds the URN of a resource; `parent_type` is the qualified type of its parent, if any.
    /// The result is checked by [`Urn::validate`] wherever the parts come from a program.
    pub fn new(stack: &str, project: &str, parent_type: Option<&str>, ty: &str, name: &str) -> Urn {
        let qualified = match parent_type {
            Some(parent) => format!("{parent}${ty}"),
            None => ty.to_owned(),
        };
        Urn(format!("{PREFIX}{stack}::{project}::{qualified}::{name}").into())
    }

    /// Parses a URN, checking its whole shape.
    pub fn parse(s: &str) -> Result<Urn, UrnError> {
        let urn = Urn(s.into());
        urn.validate()?;
        Ok(urn)
    }

    /// Checks the whole shape: the prefix, valid stack and project names, a type part of
    /// `$`-separated type tokens (the ancestors' types, then the resource's own) and a
    /// non-empty name.
    pub fn validate(&self) -> Result<(), UrnError> {
        let error = |problem| UrnError {
            urn: self.0.to_string(),
            problem,
        };
        let rest = self
            .0
            .strip_prefix(PREFIX)
            .ok_or_else(|| error(UrnProblem::Prefix))?;
        let Some([stack, project, qualified, name]) = split_parts(rest) else {
            return Err(error(UrnProblem::Shape));
        };
        names::check("stack", stack).map_err(|e| error(UrnProblem::Stack(e.problem)))?;
        names::check("project", project).map_err(|e| error(UrnProblem::Project(e.problem)))?;
        for token in qualified.split('$') {
            check_type_token(token).map_err(|e| error(UrnProblem::Type(e)))?;
        }
        if name.is_empty() {
            return Err(error(UrnProblem::EmptyName));
        }
        Ok(())
    }

    /// Whether it holds no control character: a program may name a resource so, but plinth
    /// records no such URN (see [`ResourceState::check_fields`](crate::resource::ResourceState::check_fields)).
    pub fn is_printable(&self) -> bool {
        !self.0.contains(char::is_control)
    }

    /// The four parts; on a string that is not a URN (only [`Urn::new`] can make one, from
    /// parts a program sent), missing parts are empty.
    fn parts(&self) -> [&str; 4] {
        let rest = self.0.strip_prefix(PREFIX).unwrap_or(&self.0);
        split_parts(rest).unwrap_or_else(|| {
            let mut it = rest.splitn(4, "::");
            std::array::from_fn(|_| it.next().unwrap_or_default())
        })
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

    /// What this resource's children qualify their type with: its qualified type, except for
    /// the stack's root, which is no part of its children's URNs (so that the resources of a
    /// stack written before the root existed keep their URNs).
    pub fn type_for_children(&self) -> Option<&str> {
        (!is_stack_type(self.ty())).then(|| self.qualified_type())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The four `::`-separated parts of a URN after its prefix (the last one takes the rest), as
/// `splitn(4, "::")` finds them, by a byte scan: URNs are read by the ten thousand.
fn split_parts(rest: &str) -> Option<[&str; 4]> {
    let mut parts = [""; 4];
    let mut start = 0;
    let bytes = rest.as_bytes();
    for part in parts.iter_mut().take(3) {
        let at = start + bytes[start..].windows(2).position(|w| w == b"::")?;
        *part = &rest[start..at];
        start = at + 2;
    }
    parts[3] = &rest[start..];
    Some(parts)
}

/// Read from a string, its whole shape checked ([`Urn::validate`]), without copying it twice.
impl<'de> Deserialize<'de> for Urn {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Urn, D::Error> {
        struct UrnVisitor;
        impl serde::de::Visitor<'_> for UrnVisitor {
            type Value = Urn;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a URN")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Urn, E> {
                Urn::parse(s).map_err(E::custom)
            }
        }
        deserializer.deserialize_str(UrnVisitor)
    }
}

impl TryFrom<String> for Urn {
    type Error = UrnError;
    fn try_from(s: String) -> Result<Urn, UrnError> {
        let urn = Urn(s.into());
        urn.validate()?;
        Ok(urn)
    }
}

impl From<Urn> for String {
    fn from(urn: Urn) -> String {
        urn.0.to_string()
    }
}

/// As its string, without copying it first.
impl Serialize for Urn {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
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

/// The type of a stack's root resource, the parent of every resource registered without one.
pub const STACK_TYPE: &str = "plinth:plinth:Stack";

/// Whether `ty` is the type of a stack's root resource.
pub fn is_stack_type(ty: &str) -> bool {
    ty == STACK_TYPE
}

/// The URN of the root resource of `stack` of `project`, named `<project>-<stack>`.
pub fn stack_urn(project: &str, stack: &str) -> Urn {
    Urn::new(
        stack,
        project,
        None,
        STACK_TYPE,
        &format!("{project}-{stack}"),
    )
}

/// Whether run summaries count resources of type `ty`: provider resources are configuration and
/// the stack's root is the stack itself.
pub fn is_counted(ty: &str) -> bool {
    provided_package(ty).is_none() && !is_stack_type(ty)
}

/// The type of the provider resources of `package`.
pub fn provider_type(package: &str) -> String {
    format!("{PROVIDER_TYPE_PREFIX}{package}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_root_is_no_part_of_its_childrens_urns() {
        let root = stack_urn("hello", "dev");
        assert_eq!(
            root.as_str(),
            "urn:plinth:dev::hello::plinth:plinth:Stack::hello-dev"
        );
        assert!(root.validate().is_ok());
        assert_eq!(root.type_for_children(), None);
        let group = Urn::new("dev", "hello", None, "my:Group", "g");
        assert_eq!(group.type_for_children(), Some("my:Group"));
        assert!(!is_counted(STACK_TYPE) && !is_counted("plinth:providers:random"));
        assert!(is_counted("random:RandomPet"));
    }

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
    fn rejects_malformed_saying_which_part() {
        for (bad, says) in [
            ("urn:pulumi:x", "must start with"),
            ("urn:plinth:dev::p::t:T", "expected `urn:plinth:"),
            ("urn:plinth:..::p::t:T::n", "stack part"),
            ("urn:plinth:dev::.::t:T::n", "project part"),
            ("urn:plinth:dev::p::t::n", "type part"),
            ("urn:plinth:dev::p::a:b:c:d::n", "type part"),
            ("urn:plinth:dev::p::my:Web$::n", "type part"),
            ("urn:plinth:dev::p::t:T::", "name part is empty"),
            ("", "must start with"),
            ("urn:plinth:", "expected"),
        ] {
            let err = Urn::parse(bad).unwrap_err().to_string();
            assert!(err.contains(says), "{bad:?}: {err}");
        }
        assert!(Urn::parse("urn:plinth:dev::p::t:T::n").is_ok());
        assert!(Urn::parse("urn:plinth:dev::p::my:Web$plinth:providers:random::a::b").is_ok());
        let err = serde_json::from_str::<Urn>("\"urn:plinth:dev\"").unwrap_err();
        assert!(
            err.to_string().contains("is not a valid URN: expected"),
            "{err}"
        );
        let err = serde_json::from_str::<Urn>("7").unwrap_err();
        assert!(
            err.to_string().starts_with("invalid type: integer `7`"),
            "{err}"
        );
    }

    proptest::proptest! {
        /// Whatever the string, parsing answers and the accessors of what it accepts (or of
        /// what `new` builds) do not panic.
        #[test]
        fn parsing_and_accessors_never_panic(s in "\\PC{0,40}|urn:plinth:[a-z.:$é]{0,30}", name in "\\PC{0,8}") {
            if let Ok(urn) = Urn::parse(&s) {
                let _ = (urn.stack(), urn.project(), urn.ty(), urn.name());
            }
            let built = Urn::new(&s, &s, Some(&s), &s, &name);
            let _ = (built.stack(), built.project(), built.ty(), built.name(), built.validate());
        }

        /// The byte scan splits as `splitn(4, "::")` does, where there are four parts.
        #[test]
        fn parts_split_as_splitn_does(s in "[a:é]{0,16}") {
            let expected: Vec<&str> = s.splitn(4, "::").collect();
            match split_parts(&s) {
                Some(parts) => proptest::prop_assert_eq!(&parts[..], &expected[..]),
                None => proptest::prop_assert!(expected.len() < 4),
            }
        }
    }

    #[test]
    fn package_is_the_first_token_part() {
        assert_eq!(package_of("random:RandomPet"), "random");
        assert_eq!(package_of(&provider_type("random")), "random");
        assert_eq!(provided_package("random:RandomPet"), None);
    }
}

//! Resource URNs: `urn:plinth:<stack>::<project>::<type>::<name>`, where the type part may carry
//! the parent's types, `parentType$childType`.

use super::ProviderError;

const PREFIX: &str = "urn:plinth:";

/// A parsed URN: the string and the offsets of its four parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Urn {
    text: String,
    /// Byte ranges of stack, project, qualified type and name within `text`.
    parts: [(usize, usize); 4],
}

impl Urn {
    /// Parses a URN; the name (the last part) may itself contain `::`.
    pub(crate) fn parse(text: String) -> Result<Urn, ProviderError> {
        let malformed = || {
            ProviderError::Failed(format!(
                "`{text}` is not a URN: expected `{PREFIX}<stack>::<project>::<type>::<name>`"
            ))
        };
        if !text.starts_with(PREFIX) {
            return Err(malformed());
        }
        let mut parts = [(0, 0); 4];
        let mut start = PREFIX.len();
        for (i, part) in parts.iter_mut().enumerate() {
            let end = if i == 3 {
                text.len()
            } else {
                separator(&text, start).ok_or_else(malformed)?
            };
            *part = (start, end);
            start = end + 2;
        }
        Ok(Urn { text, parts })
    }

    fn part(&self, i: usize) -> &str {
        let (start, end) = self.parts[i];
        &self.text[start..end]
    }

    pub(crate) fn as_str(&self) -> &str {
        &self.text
    }

    pub(crate) fn stack(&self) -> &str {
        self.part(0)
    }

    pub(crate) fn project(&self) -> &str {
        self.part(1)
    }

    /// The resource's own type token: the last `$` segment of the type part.
    pub(crate) fn type_token(&self) -> &str {
        let qualified = self.part(2);
        match qualified.bytes().rposition(|b| b == b'$') {
            Some(at) => &qualified[at + 1..],
            None => qualified,
        }
    }

    pub(crate) fn name(&self) -> &str {
        self.part(3)
    }
}

/// The offset of the first `::` in `text` at or after `start`. A plain byte scan (`str::find`
/// with a string pattern sets up a substring searcher, which costs more than the whole scan of
/// a URN, and every provider call parses one) that looks at every other byte: any `::` covers
/// one of them, and the first colon seen that starts or ends a pair is the first pair.
fn separator(text: &str, start: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut at = start + 1;
    while at < bytes.len() {
        if bytes[at] == b':' {
            if bytes[at - 1] == b':' {
                return Some(at - 1);
            }
            if bytes.get(at + 1) == Some(&b':') {
                return Some(at);
            }
        }
        at += 2;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_the_parts() {
        let urn = Urn::parse("urn:plinth:dev::hello::random:RandomPet::pet".into()).unwrap();
        assert_eq!(urn.stack(), "dev");
        assert_eq!(urn.project(), "hello");
        assert_eq!(urn.type_token(), "random:RandomPet");
        assert_eq!(urn.name(), "pet");
        assert_eq!(urn.as_str(), "urn:plinth:dev::hello::random:RandomPet::pet");
    }

    #[test]
    fn child_types_and_names_with_separators() {
        let urn = Urn::parse("urn:plinth:dev::p::my:Web$random:RandomPet::a::b".into()).unwrap();
        assert_eq!(urn.type_token(), "random:RandomPet");
        assert_eq!(urn.name(), "a::b");
    }

    #[test]
    fn rejects_malformed() {
        assert!(Urn::parse("urn:pulumi:dev::p::t::n".into()).is_err());
        assert!(Urn::parse("urn:plinth:dev::p::t".into()).is_err());
        assert!(Urn::parse("urn:plinth:dev::p::t:".into()).is_err());
        assert!(Urn::parse("urn:plinth:".into()).is_err());
    }

    #[test]
    fn separators_at_every_offset() {
        for pad in 0..6 {
            for gap in 0..4 {
                let stack = "s".repeat(pad);
                let project = ":x".repeat(gap);
                let text = format!("urn:plinth:{stack}::{project}::t:T::n::m");
                let urn = Urn::parse(text.clone()).unwrap();
                assert_eq!(urn.stack(), stack, "{text}");
                assert_eq!(urn.project(), project, "{text}");
                assert_eq!(urn.type_token(), "t:T", "{text}");
                assert_eq!(urn.name(), "n::m", "{text}");
            }
        }
        // Three colons: the separator is the first two.
        let urn = Urn::parse("urn:plinth:a:::b::c::d".into()).unwrap();
        assert_eq!((urn.stack(), urn.project()), ("a", ":b"));
    }

    #[test]
    fn empty_parts_and_single_colons() {
        let urn = Urn::parse("urn:plinth:::p:q::a:B$:c:D::".into()).unwrap();
        assert_eq!(urn.stack(), "");
        assert_eq!(urn.project(), "p:q");
        assert_eq!(urn.type_token(), ":c:D");
        assert_eq!(urn.name(), "");
        let urn = Urn::parse("urn:plinth:s::p::t$::n".into()).unwrap();
        assert_eq!(urn.type_token(), "");
        assert_eq!(urn.name(), "n");
    }
}

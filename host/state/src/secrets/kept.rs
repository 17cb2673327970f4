//! Resources' sealed texts kept for writing again as they are. A checkpoint write otherwise
//! finds, recalls and splices every secret of every resource, changed or not: with a secret in
//! each of 10,000 resources, an `up` that changes a tenth of them paid that for all of them.
//! A resource whose text in the clear is what it was when last read or written is written
//! with its sealed text of then, which opens to that same text.
//!
//! What is kept of the text in the clear is its SHA-256, not the text: a digest no provider
//! can make another text match, so that a changed resource can never be written as it was.

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::value::RawValue;
use sha2::{Digest, Sha256};

/// The SHA-256 of a resource's text in the clear.
pub type TextDigest = [u8; 32];

/// The digest of `text`.
pub fn digest(text: &str) -> TextDigest {
    Sha256::digest(text.as_bytes()).into()
}

/// A resource's text read or written, by its URN: the digest of its text in the clear and its
/// sealed text, or `None` where that text is not to be written again as it is (what was kept
/// of the resource is forgotten).
pub type KeptText<'a> = (&'a str, Option<(TextDigest, Box<RawValue>)>);

/// Sealed texts by resource URN.
#[derive(Default)]
pub(super) struct KeptTexts(Mutex<HashMap<String, (TextDigest, Box<RawValue>)>>);

impl KeptTexts {
    /// Keeps each of `texts`, replacing what was kept of the same resource.
    pub fn keep(&self, texts: Vec<KeptText>) {
        let mut kept = self.lock();
        for (urn, text) in texts {
            match (kept.get_mut(urn), text) {
                (Some(entry), Some(text)) => *entry = text,
                (None, Some(text)) => {
                    kept.insert(urn.to_owned(), text);
                }
                (Some(_), None) => {
                    kept.remove(urn);
                }
                (None, None) => {}
            }
        }
    }

    /// The sealed text kept of each resource asked for (its URN and the digest of its text in
    /// the clear now), if that text in the clear is the one kept.
    pub fn unchanged(&self, asked: &[(&str, TextDigest)]) -> Vec<Option<Box<RawValue>>> {
        let kept = self.lock();
        (asked.iter())
            .map(|(urn, digest)| {
                let (kept, sealed) = kept.get(*urn)?;
                (kept == digest).then(|| sealed.clone())
            })
            .collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (TextDigest, Box<RawValue>)>> {
        (self.0.lock()).unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_owned()).unwrap()
    }

    /// What `kept` gives back for each of `asked`, as text.
    fn given(kept: &KeptTexts, asked: &[(&str, TextDigest)]) -> Vec<Option<String>> {
        (kept.unchanged(asked).into_iter())
            .map(|text| text.map(|text| text.get().to_owned()))
            .collect()
    }

    #[test]
    fn a_kept_text_is_given_back_only_for_the_text_it_was_kept_with() {
        let kept = KeptTexts::default();
        let (a, b) = (r#"{"urn":"a","v":1}"#, r#"{"urn":"a","v":2}"#);
        let sealed = |n: u32| Some(format!(r#"{{"sealed":{n}}}"#));
        kept.keep(vec![("a", Some((digest(a), raw(r#"{"sealed":1}"#))))]);
        let asked = [("a", digest(a)), ("a", digest(b)), ("b", digest(a))];
        assert_eq!(given(&kept, &asked), [sealed(1), None, None]);

        // Kept again, the newer text replaces the older.
        kept.keep(vec![("a", Some((digest(b), raw(r#"{"sealed":2}"#))))]);
        let asked = [("a", digest(a)), ("a", digest(b))];
        assert_eq!(given(&kept, &asked), [None, sealed(2)]);

        // Forgotten, nothing is given back.
        kept.keep(vec![("a", None)]);
        assert_eq!(given(&kept, &asked), [None, None]);
    }
}

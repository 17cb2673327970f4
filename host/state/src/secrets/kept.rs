//! Resources' sealed texts kept for writing again as they are. A checkpoint write otherwise
//! finds, recalls and splices every secret of every resource, changed or not: with a secret in
//! each of 10,000 resources, an `up` that changes a tenth of them paid that for all of them.
//! A resource whose text in the clear is what it was when last read or written is written
//! with its sealed text of then, which opens to that same text.
//!
//! The text in the clear is kept whole and compared whole: no digest of it that a provider
//! could make another text match, and a comparison costs less than a digest. (It is the text
//! that was read or written anyway, moved here rather than dropped.)

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::value::RawValue;

/// A resource's text read or written: in the clear, and sealed.
pub(crate) struct KeptText {
    pub clear: String,
    pub sealed: Arc<RawValue>,
}

/// A resource's text read or written, by its URN, or `None` where that text is not to be
/// written again as it is (what was kept of the resource is forgotten).
pub(crate) type Kept<'a> = (&'a str, Option<KeptText>);

/// Sealed texts by resource URN.
#[derive(Default)]
pub(super) struct KeptTexts(Mutex<HashMap<String, KeptText>>);

impl KeptTexts {
    /// Keeps each of `texts`, replacing what was kept of the same resource.
    pub fn keep(&self, texts: Vec<Kept>) {
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

    /// The sealed text kept of each resource asked for (its URN and its text in the clear now),
    /// if that text in the clear is the one kept.
    pub fn unchanged(&self, asked: &[(&str, &str)]) -> Vec<Option<Arc<RawValue>>> {
        let kept = self.lock();
        (asked.iter())
            .map(|(urn, clear)| {
                let kept = kept.get(*urn)?;
                (kept.clear == *clear).then(|| kept.sealed.clone())
            })
            .collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, KeptText>> {
        (self.0.lock()).unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept(clear: &str, sealed: &str) -> Option<KeptText> {
        let sealed = RawValue::from_string(sealed.to_owned()).unwrap();
        Some(KeptText {
            clear: clear.to_owned(),
            sealed: Arc::from(sealed),
        })
    }

    /// What `kept` gives back for each of `asked`, as text.
    fn given(kept: &KeptTexts, asked: &[(&str, &str)]) -> Vec<Option<String>> {
        (kept.unchanged(asked).into_iter())
            .map(|text| text.map(|text| text.get().to_owned()))
            .collect()
    }

    #[test]
    fn a_kept_text_is_given_back_only_for_the_text_it_was_kept_with() {
        let texts = KeptTexts::default();
        let (a, b) = (r#"{"urn":"a","v":1}"#, r#"{"urn":"a","v":2}"#);
        let sealed = |n: u32| Some(format!(r#"{{"sealed":{n}}}"#));
        texts.keep(vec![("a", kept(a, r#"{"sealed":1}"#))]);
        let asked = [("a", a), ("a", b), ("b", a)];
        assert_eq!(given(&texts, &asked), [sealed(1), None, None]);

        // Kept again, the newer text replaces the older.
        texts.keep(vec![("a", kept(b, r#"{"sealed":2}"#))]);
        let asked = [("a", a), ("a", b)];
        assert_eq!(given(&texts, &asked), [None, sealed(2)]);

        // Forgotten, nothing is given back.
        texts.keep(vec![("a", None)]);
        assert_eq!(given(&texts, &asked), [None, None]);
    }
}

//! Sealing and opening the secrets of a resource's JSON text in the text itself. Building a
//! tree of the resource to seal or open its secrets, and reading the resource back from it,
//! cost more than everything else a checkpoint's write or load does. plinth writes every secret
//! in one form, `{"plinth:sig":"secret","value":…}` in the clear and
//! `{"ciphertext":"v1:…","plinth:sig":"secret"}` sealed, which can be found and replaced in
//! place.
//!
//! Only a text whose every secret is in that form takes this path: anything else (a secret in
//! another form, an unknown, a `ciphertext` key elsewhere, other spacing or key order) is left
//! to the tree walk, which reads every form and names what is wrong.

use std::ops::Range;
use std::sync::LazyLock;

use memchr::memmem::Finder;
use plinth_engine::value::SIG_KEY;
use serde_json::value::RawValue;

/// The start of a sealed secret as plinth writes it (keys in order, no spaces).
const HEAD: &str = r#"{"ciphertext":""#;
/// What follows its ciphertext.
const TAIL: &str = r#"","plinth:sig":"secret"}"#;
/// The start of a secret in the clear as the engine writes it, before its value.
const PLAIN_HEAD: &str = r#"{"plinth:sig":"secret","value":"#;
/// A secret `null` as the engine writes it: what stands for a sealed secret left unopened.
const STANDING: &str = r#"{"plinth:sig":"secret","value":null}"#;

/// The searchers of this module, built once: a checkpoint searches each of its resources'
/// texts for them, and building a searcher costs more than searching a short text.
static SIG_KEYS: LazyLock<Finder<'static>> = LazyLock::new(|| key_finder(SIG_KEY));
static CIPHERTEXT_KEYS: LazyLock<Finder<'static>> = LazyLock::new(|| key_finder("ciphertext"));
static HEADS: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(HEAD.as_bytes()));
static PLAIN_HEADS: LazyLock<Finder<'static>> =
    LazyLock::new(|| Finder::new(PLAIN_HEAD.as_bytes()));

/// A searcher for `key` as a key (only a key is followed by a colon: a string value of that
/// name does not count).
fn key_finder(key: &str) -> Finder<'static> {
    Finder::new(format!("\"{key}\":").as_bytes()).into_owned()
}

/// How many times `finder`'s key is a key in `bytes`.
fn keys(bytes: &[u8], finder: &Finder) -> usize {
    finder.find_iter(bytes).count()
}

/// A resource's JSON text, as the engine writes it, and where its secrets are, in document
/// order.
pub struct PlainText<'a> {
    text: &'a str,
    /// Each secret's object and, within it, its value's JSON.
    secrets: Vec<(Range<usize>, Range<usize>)>,
}

impl<'a> PlainText<'a> {
    /// The secrets of `text`, a valid JSON document, if every signature key in it belongs to a
    /// secret in the engine's own form (or is inside one's value, which is sealed whole, as the
    /// tree walk does); otherwise `None`.
    pub fn find(text: &'a str) -> Option<PlainText<'a>> {
        let bytes = text.as_bytes();
        let mut secrets: Vec<(Range<usize>, Range<usize>)> = Vec::new();
        let mut inside = 0;
        for start in PLAIN_HEADS.find_iter(bytes) {
            inside += 1;
            if secrets.last().is_some_and(|(object, _)| start < object.end) {
                continue;
            }
            let body = start + PLAIN_HEAD.len();
            let mut values =
                serde_json::Deserializer::from_str(&text[body..]).into_iter::<&RawValue>();
            values.next()?.ok()?;
            let end = body + values.byte_offset();
            if bytes.get(end) != Some(&b'}') {
                return None;
            }
            secrets.push((start..end + 1, body..end));
        }
        (keys(bytes, &SIG_KEYS) == inside).then_some(PlainText { text, secrets })
    }

    /// How many secrets the text holds.
    pub fn len(&self) -> usize {
        self.secrets.len()
    }

    /// The values' JSON, in document order: the plaintexts to seal.
    pub fn plaintexts(&self) -> impl Iterator<Item = &'a str> + '_ {
        (self.secrets.iter()).map(|(_, value)| &self.text[value.clone()])
    }

    /// The text with each secret replaced by its sealed form (`sealed`, in document order).
    /// A sealed value is written as a JSON string, escaped: a crypter (a secrets service) says
    /// what it holds, and no quote in it may end the string.
    pub fn sealed(&self, sealed: &[String]) -> String {
        let extra = wrapped_len(sealed);
        splice(self.text, &self.secrets, extra, |out, i| {
            out.push_str(&HEAD[..HEAD.len() - 1]);
            // Escaped as a JSON string without a copy of it in a tree first.
            let escaped = serde_json::to_string(&sealed[i]).expect("a string always serializes");
            out.push_str(&escaped);
            out.push_str(&TAIL[1..]);
        })
    }
}

/// About how many bytes `values` take once each is wrapped in a secret's object.
fn wrapped_len(values: &[String]) -> usize {
    values
        .iter()
        .map(|v| v.len() + HEAD.len() + TAIL.len())
        .sum()
}

/// `text` with the `i`-th of `objects` replaced by what `write` makes of `i`; `extra`: about
/// how many bytes that adds.
fn splice(
    text: &str,
    objects: &[(Range<usize>, Range<usize>)],
    extra: usize,
    mut write: impl FnMut(&mut String, usize),
) -> String {
    let mut out = String::with_capacity(text.len() + extra);
    let mut at = 0;
    for (i, (object, _)) in objects.iter().enumerate() {
        out.push_str(&text[at..object.start]);
        write(&mut out, i);
        at = object.end;
    }
    out.push_str(&text[at..]);
    out
}

/// A resource's JSON text and where its sealed secrets are, in document order.
pub struct SealedText<'a> {
    text: &'a str,
    /// Each secret's object and, within it, its ciphertext.
    secrets: Vec<(Range<usize>, Range<usize>)>,
}

impl<'a> SealedText<'a> {
    /// The sealed secrets of `text`, a valid JSON document, if every `ciphertext` key and every
    /// signature key in it belongs to a sealed secret in plinth's own form; otherwise `None`.
    ///
    /// In valid JSON, `{"` outside a string opens an object and its first key (inside a string
    /// the quote would be escaped), and a ciphertext holds no quote, so a match is the whole of
    /// a sealed secret's object and nothing else.
    pub fn find(text: &'a str) -> Option<SealedText<'a>> {
        let bytes = text.as_bytes();
        let mut secrets = Vec::new();
        for start in HEADS.find_iter(bytes) {
            let body = start + HEAD.len();
            let len = bytes[body..]
                .iter()
                .take_while(|&&b| {
                    b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=' | b':')
                })
                .count();
            let end = body + len;
            if !text[end..].starts_with(TAIL) {
                return None;
            }
            secrets.push((start..end + TAIL.len(), body..end));
        }
        (keys(bytes, &CIPHERTEXT_KEYS) == secrets.len() && keys(bytes, &SIG_KEYS) == secrets.len())
            .then_some(SealedText { text, secrets })
    }

    /// How many sealed secrets the text holds.
    pub fn len(&self) -> usize {
        self.secrets.len()
    }

    /// The ciphertexts, in document order.
    pub fn ciphertexts(&self) -> impl Iterator<Item = &'a str> + '_ {
        (self.secrets.iter()).map(|(_, ciphertext)| &self.text[ciphertext.clone()])
    }

    /// The text with each sealed secret replaced by its plaintext (`plaintexts`, in document
    /// order) as `{"plinth:sig":"secret","value":…}`; `None` if a plaintext is not exactly one
    /// JSON value, which could otherwise break out of its place in the document.
    pub fn opened(&self, plaintexts: &[String]) -> Option<String> {
        if plaintexts.len() != self.secrets.len() {
            return None;
        }
        if (plaintexts.iter()).any(|p| serde_json::from_str::<&RawValue>(p).is_err()) {
            return None;
        }
        Some(splice(
            self.text,
            &self.secrets,
            wrapped_len(plaintexts),
            |out, i| {
                out.push_str(PLAIN_HEAD);
                out.push_str(&plaintexts[i]);
                out.push('}');
            },
        ))
    }

    /// The text with each sealed secret standing as a secret `null`, as the engine writes one:
    /// what `stack export`, which opens no secret, reads to check the resource, and what
    /// writing that resource must give back for its sealed text to be copied as it is.
    pub fn standing(&self) -> String {
        let extra = self.secrets.len() * STANDING.len();
        splice(self.text, &self.secrets, extra, |out, _| {
            out.push_str(STANDING)
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn finds_plinth_s_own_sealed_secrets_and_opens_them_in_place() {
        let text = r#"{"inputs":{"a":{"ciphertext":"v1:AB+/=","plinth:sig":"secret"},"b":[{"ciphertext":"v1:CD","plinth:sig":"secret"}]},"urn":"u"}"#;
        let found = SealedText::find(text).unwrap();
        assert_eq!(
            found.ciphertexts().collect::<Vec<_>>(),
            ["v1:AB+/=", "v1:CD"]
        );
        let opened = found
            .opened(&["\"x\"".to_owned(), "{\"k\":[1,2]}".to_owned()])
            .unwrap();
        let opened: serde_json::Value = serde_json::from_str(&opened).unwrap();
        assert_eq!(
            opened,
            json!({"inputs": {"a": {SIG_KEY: "secret", "value": "x"}, "b": [{SIG_KEY: "secret", "value": {"k": [1, 2]}}]}, "urn": "u"})
        );
    }

    #[test]
    fn any_other_form_is_left_to_the_tree_walk() {
        for text in [
            // Another key order, spacing, or a third key.
            r#"{"a":{"plinth:sig":"secret","ciphertext":"v1:AB"}}"#,
            r#"{"a":{"ciphertext": "v1:AB","plinth:sig":"secret"}}"#,
            r#"{"a":{"ciphertext":"v1:AB","plinth:sig":"secret","x":1}}"#,
            // A `ciphertext` key that is not a secret's, or one in a string.
            r#"{"a":{"ciphertext":"v1:AB","plinth:sig":"secret"},"b":{"ciphertext":"x"}}"#,
            r#"{"a":{"ciphertext":"v1:AB","plinth:sig":"secret"},"\"ciphertext":1}"#,
            // A secret left unsealed, which may hold a sealed-looking object the walk keeps.
            r#"{"a":{"plinth:sig":"secret","value":{"ciphertext":"v1:AB","plinth:sig":"secret"}}}"#,
            // An unknown.
            r#"{"a":{"ciphertext":"v1:AB","plinth:sig":"secret"},"b":{"plinth:sig":"unknown"}}"#,
        ] {
            assert!(SealedText::find(text).is_none(), "{text}");
        }
        let none = SealedText::find(r#"{"a":1}"#).unwrap();
        assert_eq!(none.len(), 0);
        // The names as string values are data, not keys.
        let text =
            r#"{"a":{"ciphertext":"v1:AB","plinth:sig":"secret"},"b":["ciphertext","plinth:sig"]}"#;
        assert_eq!(SealedText::find(text).unwrap().len(), 1);
    }

    #[test]
    fn a_sealed_secret_stands_as_the_secret_null_the_engine_writes() {
        let text = r#"{"a":{"ciphertext":"v1:AB","plinth:sig":"secret"},"b":[1,{"ciphertext":"v1:CD","plinth:sig":"secret"}]}"#;
        let standing = SealedText::find(text).unwrap().standing();
        assert_eq!(
            standing,
            r#"{"a":{"plinth:sig":"secret","value":null},"b":[1,{"plinth:sig":"secret","value":null}]}"#
        );
        // Read and written back, it is the same text: what lets a resource's text be copied.
        let value: plinth_engine::value::Value = serde_json::from_str(&standing).unwrap();
        assert_eq!(serde_json::to_string(&value).unwrap(), standing);
    }

    #[test]
    fn a_plaintext_that_is_not_one_json_value_is_refused() {
        let found =
            SealedText::find(r#"{"a":{"ciphertext":"v1:AB","plinth:sig":"secret"}}"#).unwrap();
        for bad in ["1},\"id\":\"evil\"", "", "1 2", "{", "\"x"] {
            assert_eq!(found.opened(&[bad.to_owned()]), None, "{bad}");
        }
        assert_eq!(found.opened(&[]), None);
    }
    #[test]
    fn finds_the_engine_s_secrets_in_the_clear_and_seals_them_in_place() {
        // A secret inside a secret's value is sealed with it, as the tree walk does.
        let text = r#"{"a":{"plinth:sig":"secret","value":{"k":"}","n":{"plinth:sig":"secret","value":1}}},"b":[{"plinth:sig":"secret","value":"x"}],"c":"plinth:sig"}"#;
        let found = PlainText::find(text).unwrap();
        assert_eq!(
            found.plaintexts().collect::<Vec<_>>(),
            [
                r#"{"k":"}","n":{"plinth:sig":"secret","value":1}}"#,
                r#""x""#
            ]
        );
        let sealed = found.sealed(&["v1:AA".to_owned(), "v1:BB".to_owned()]);
        assert_eq!(
            sealed,
            r#"{"a":{"ciphertext":"v1:AA","plinth:sig":"secret"},"b":[{"ciphertext":"v1:BB","plinth:sig":"secret"}],"c":"plinth:sig"}"#
        );
        let reopened = SealedText::find(&sealed).unwrap();
        assert_eq!(
            reopened.ciphertexts().collect::<Vec<_>>(),
            ["v1:AA", "v1:BB"]
        );

        for other in [
            r#"{"a":{"plinth:sig":"unknown"}}"#,
            r#"{"a":{"value":1,"plinth:sig":"secret"}}"#,
            r#"{"a":{"plinth:sig":"secret","value":1,"x":2}}"#,
        ] {
            assert!(PlainText::find(other).is_none(), "{other}");
        }
    }
    #[test]
    fn a_sealed_value_holding_a_quote_stays_inside_its_string() {
        let found = PlainText::find(r#"{"a":{"plinth:sig":"secret","value":1},"b":2}"#).unwrap();
        let sealed = found.sealed(&[r#"x","b":3,"c":""#.to_owned()]);
        let sealed: serde_json::Value = serde_json::from_str(&sealed).unwrap();
        assert_eq!(
            sealed,
            json!({"a": {"ciphertext": "x\",\"b\":3,\"c\":\"", SIG_KEY: "secret"}, "b": 2})
        );
    }
}

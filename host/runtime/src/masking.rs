//! Masks the plaintext of known secrets in what guests print, as CI systems mask secrets in job
//! logs: a program that prints a revealed secret, or a plugin that logs one, must not put it in
//! plinth's log or on the terminal.
//!
//! The set of known secrets only grows during a run: every secret value that crosses the
//! boundary with a guest (the stack's secret config, secret inputs and outputs, values a program
//! marks secret) is learned as it is converted, and the CLI adds the stack's secret config up
//! front. It is process-wide because the log it protects is: one tracing subscriber serves
//! every guest of the process, and a secret one guest saw may be printed by another.
//!
//! Secrets shorter than [`MIN_MASKED_LEN`] characters are not masked: masking `1` or `ok` would
//! garble every line while hiding next to nothing (such a value is guessable anyway).

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::sync::{LazyLock, RwLock};

use aho_corasick::{AhoCorasick, MatchKind};
use plinth_engine::value::Value;

/// What an occurrence of a secret is replaced with.
pub const MASK: &str = "[secret]";

/// Shorter secrets are not masked (see the module documentation).
pub const MIN_MASKED_LEN: usize = 4;

/// The secrets known so far, and an automaton that finds them all in one pass over a line.
#[derive(Default)]
pub struct SecretMasker {
    state: RwLock<Known>,
}

#[derive(Default)]
struct Known {
    secrets: BTreeSet<String>,
    /// Rebuilt when a secret is added; `None` while there is none.
    finder: Option<AhoCorasick>,
}

static PROCESS_MASKER: LazyLock<SecretMasker> = LazyLock::new(SecretMasker::default);

/// The masker of this process: what guests print is masked with it before it is logged.
pub fn secret_masker() -> &'static SecretMasker {
    &PROCESS_MASKER
}

impl SecretMasker {
    /// Learns the plaintext of every secret inside `value` (strings, and numbers as they print).
    /// Every value crossing the boundary with a guest passes here: one without secrets costs a
    /// walk of its tree and no lock; otherwise a read lock and a set lookup per secret.
    pub fn learn(&self, value: &Value) {
        let mut found = Vec::new();
        collect_secrets(value, false, &mut found);
        if !found.is_empty() {
            self.learn_texts(found);
        }
    }

    /// Learns `text` as the plaintext of a secret.
    pub fn learn_text(&self, text: &str) {
        self.learn_texts(vec![text.to_owned()]);
    }

    fn learn_texts(&self, texts: Vec<String>) {
        let new: Vec<String> = {
            let known = self.read();
            texts
                .into_iter()
                .filter(|t| t.chars().count() >= MIN_MASKED_LEN && !known.secrets.contains(t))
                .collect()
        };
        if new.is_empty() {
            return;
        }
        let mut known = self.state.write().unwrap_or_else(|p| p.into_inner());
        known.secrets.extend(new);
        // Leftmost-longest: of two secrets where one contains the other, the longer is masked
        // whole rather than leaving its tail in the clear.
        known.finder = AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .build(&known.secrets)
            .map_err(|e| tracing::error!("cannot build the secret masker: {e}"))
            .ok();
    }

    /// `text` with every occurrence of a known secret replaced with [`MASK`].
    pub fn mask<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let known = self.read();
        match &known.finder {
            Some(finder) if finder.is_match(text) => {
                Cow::Owned(finder.replace_all(text, &vec![MASK; known.secrets.len()]))
            }
            _ => Cow::Borrowed(text),
        }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Known> {
        // Every update replaces the set and its automaton together, under the lock.
        self.state.read().unwrap_or_else(|p| p.into_inner())
    }
}

/// Pushes onto `found` the plaintext of the secrets in `value`; `secret` says whether `value`
/// is inside a secret already.
fn collect_secrets(value: &Value, secret: bool, found: &mut Vec<String>) {
    match value {
        Value::Secret(inner) => collect_secrets(inner, true, found),
        Value::Array(items) => items.iter().for_each(|v| collect_secrets(v, secret, found)),
        Value::Object(map) => map.values().for_each(|v| collect_secrets(v, secret, found)),
        Value::String(text) if secret => {
            // Output is masked line by line: each line of a multi-line secret (a PEM key) is
            // a secret of its own.
            if text.contains('\n') {
                found.extend(
                    text.lines()
                        .map(|line| line.trim_end_matches('\r').to_owned()),
                );
            }
            found.push(text.clone());
        }
        Value::Integer(n) if secret => found.push(n.to_string()),
        Value::Number(n) if secret => found.push(n.to_string()),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret(text: &str) -> Value {
        Value::Secret(Box::new(text.into()))
    }

    #[test]
    fn masks_every_known_secret_and_nothing_else() {
        let masker = SecretMasker::default();
        assert_eq!(masker.mask("nothing known yet"), "nothing known yet");
        let mut nested = plinth_engine::value::PropertyMap::new();
        nested.insert("pw".into(), secret("hunter22"));
        nested.insert("plain".into(), "visible".into());
        masker.learn(&Value::Object(nested));
        masker.learn(&Value::Secret(Box::new(Value::Array(vec![
            "tok-1234".into(),
            Value::Number(987654.0),
        ]))));
        assert_eq!(
            masker.mask("pw=hunter22 tok=tok-1234 n=987654 visible"),
            "pw=[secret] tok=[secret] n=[secret] visible"
        );
        assert!(matches!(masker.mask("no secret here"), Cow::Borrowed(_)));
    }

    #[test]
    fn a_longer_secret_containing_a_shorter_one_is_masked_whole() {
        let masker = SecretMasker::default();
        masker.learn(&secret("abcd"));
        masker.learn(&secret("abcdefgh"));
        assert_eq!(masker.mask("x abcdefgh y abcd"), "x [secret] y [secret]");
    }

    #[test]
    fn each_line_of_a_multi_line_secret_is_masked() {
        let masker = SecretMasker::default();
        masker.learn(&secret(
            "-----BEGIN KEY-----\r\nc2VjcmV0\n-----END KEY-----",
        ));
        assert_eq!(masker.mask("key: c2VjcmV0"), "key: [secret]");
    }

    #[test]
    fn short_secrets_are_not_masked() {
        let masker = SecretMasker::default();
        masker.learn(&secret("abc"));
        masker.learn(&Value::Secret(Box::new(Value::Bool(true))));
        assert_eq!(masker.mask("abc true"), "abc true");
    }
}

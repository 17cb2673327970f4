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
//! Learning must stay cheap however many secrets a stack holds (ten thousand generated
//! passwords): learning a secret is a set insertion, and the automata that find secrets are
//! built only when a text is searched, in levels whose sizes at least halve from one to the
//! next (as in a log-structured merge): a new batch becomes the smallest level, merged into the
//! one above while it is at least half its size. Each secret is thus rebuilt into an automaton
//! a logarithmic number of times, and a search runs a logarithmic number of automata.
//!
//! A text that holds none of the known secrets' first four bytes holds no secret: it is
//! screened with a bitmap of those (a multiplication and a bit test per byte) before any
//! automaton is built or run, so that the texts a run checks (payloads, ids) make the masker
//! build nothing unless one may hold a secret.
//!
//! Secrets shorter than [`MIN_MASKED_LEN`] characters are not masked: masking `1` or `ok` would
//! garble every line while hiding next to nothing (such a value is guessable anyway). Only what
//! is secret is learned (see [`collect_secrets`]): a secret's string leaves, each line of a
//! multi-line one without its indentation, and a number only when it is the whole secret.

use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::{Arc, LazyLock, RwLock, RwLockReadGuard};

use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};
use plinth_engine::value::Value;

/// What an occurrence of a secret is replaced with.
pub const MASK: &str = "[secret]";

/// Shorter secrets are not masked (see the module documentation).
pub const MIN_MASKED_LEN: usize = 4;

/// Shorter secrets do not count inside a property name (see [`SecretMasker::mask_key`]).
pub const MIN_KEY_SECRET_LEN: usize = 8;

/// Secrets learned since the last automaton was built are searched one by one until there are
/// this many: a handful of substring searches cost less than building an automaton.
const BATCH: usize = 8;

/// The secrets known so far, and the automata that find them.
#[derive(Default)]
pub struct SecretMasker {
    state: RwLock<Known>,
}

#[derive(Default)]
struct Known {
    /// Every secret learned: a secret seen again costs a lookup.
    secrets: HashSet<Arc<str>>,
    /// Automata over the older secrets, largest first.
    levels: Vec<Level>,
    /// The newest secrets, in no automaton yet.
    recent: Vec<Arc<str>>,
    /// The length in bytes of the shortest secret: a shorter text holds none (most property
    /// names and values are shorter than a generated password).
    shortest: usize,
    /// The first four bytes of every secret ([`Heads`]): a text holding none of them holds no
    /// secret, and is answered without building or running an automaton.
    heads: Heads,
}

/// A set of 4-byte strings as a bitmap of their hashes: a lookup is a multiplication and a bit
/// test, so that a text can be screened at every byte for less than an automaton costs to
/// build (tens of milliseconds for ten thousand secrets). A hash shared by two strings only
/// lets a text through to the automaton, never keeps a secret from being found.
struct Heads(Box<[u64]>);

/// Bits of a [`Heads`] hash: 65,536 bits, 8 KiB.
const HEAD_BITS: u32 = 16;

impl Default for Heads {
    fn default() -> Heads {
        Heads(vec![0; (1 << HEAD_BITS) / 64].into_boxed_slice())
    }
}

impl Heads {
    fn slot(head: &[u8]) -> usize {
        let word = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
        (word.wrapping_mul(0x9E37_79B1) >> (32 - HEAD_BITS)) as usize
    }

    /// Adds the first four bytes of `secret` (every secret has at least [`MIN_MASKED_LEN`]
    /// characters, so at least four bytes).
    fn insert(&mut self, secret: &str) {
        let slot = Heads::slot(&secret.as_bytes()[..4]);
        self.0[slot / 64] |= 1 << (slot % 64);
    }

    /// Whether some 4 bytes of `text` may begin a secret.
    fn may_begin_in(&self, text: &str) -> bool {
        (text.as_bytes().windows(4)).any(|head| {
            let slot = Heads::slot(head);
            self.0[slot / 64] & (1 << (slot % 64)) != 0
        })
    }
}

/// An automaton over some of the secrets, and those secrets, to rebuild it merged with another.
struct Level {
    secrets: Vec<Arc<str>>,
    finder: AhoCorasick,
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

    /// Learns the secrets inside all of `values` at once (a loaded state's): a single lock, and
    /// the next search builds them all into one automaton. Learned one at a time between
    /// searches, as a run meets them, each would be rebuilt a logarithmic number of times.
    pub fn learn_all<'a>(&self, values: impl IntoIterator<Item = &'a Value>) {
        let mut found = Vec::new();
        values
            .into_iter()
            .for_each(|value| collect_secrets(value, false, &mut found));
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
                .filter(|t| t.chars().count() >= MIN_MASKED_LEN && !known.secrets.contains(&**t))
                .collect()
        };
        if new.is_empty() {
            return;
        }
        let mut known = self.state.write().unwrap_or_else(|p| p.into_inner());
        for text in new {
            let text: Arc<str> = text.into();
            if known.secrets.insert(text.clone()) {
                known.heads.insert(&text);
                known.shortest = match known.shortest {
                    0 => text.len(),
                    shortest => shortest.min(text.len()),
                };
                known.recent.push(text);
            }
        }
    }

    /// True while no secret is known: nothing needs masking.
    pub fn knows_none(&self) -> bool {
        self.read().secrets.is_empty()
    }

    /// True if `text` is exactly the plaintext of a known secret.
    pub fn is_secret(&self, text: &str) -> bool {
        text.len() >= MIN_MASKED_LEN && self.read().secrets.contains(text)
    }

    /// True if `text` holds the plaintext of a known secret.
    pub fn contains_secret(&self, text: &str) -> bool {
        let Some(known) = self.searchable(text) else {
            return false;
        };
        known.levels.iter().any(|level| level.finder.is_match(text))
            || known.recent.iter().any(|secret| text.contains(&**secret))
    }

    /// `text` with every occurrence of a known secret replaced with [`MASK`]. Where secrets
    /// overlap (one inside another, or sharing a part), everything any of them covers is masked
    /// as one.
    pub fn mask<'a>(&self, text: &'a str) -> Cow<'a, str> {
        self.mask_at_least(text, MIN_MASKED_LEN)
    }

    /// `text`, a property name, with every known secret of at least [`MIN_KEY_SECRET_LEN`]
    /// characters masked. A name is short and made of common words (`name`, `port`, `admin`):
    /// a short secret found in one is most likely a coincidence (a password `admin`), and
    /// refusing every such name would fail any resource with that field; a guest that means
    /// to leak a secret can encode it, whatever the rule.
    pub fn mask_key<'a>(&self, key: &'a str) -> Cow<'a, str> {
        self.mask_at_least(key, MIN_KEY_SECRET_LEN)
    }

    /// `text` with every occurrence of a known secret of at least `min` characters masked.
    fn mask_at_least<'a>(&self, text: &'a str, min: usize) -> Cow<'a, str> {
        if text.len() < min {
            return Cow::Borrowed(text);
        }
        // `reach[i]`: how far the longest occurrence starting at byte `i` reaches.
        let mut reach: Vec<usize> = Vec::new();
        let mut cover = |start: usize, end: usize| {
            // Every learned secret has at least `MIN_MASKED_LEN` characters.
            if min > MIN_MASKED_LEN && text[start..end].chars().count() < min {
                return;
            }
            if reach.is_empty() {
                reach.resize(text.len(), 0);
            }
            reach[start] = reach[start].max(end);
        };
        {
            let Some(known) = self.searchable(text) else {
                return Cow::Borrowed(text);
            };
            for level in &known.levels {
                for found in level.finder.find_overlapping_iter(text) {
                    cover(found.start(), found.end());
                }
            }
            for secret in &known.recent {
                let mut from = 0;
                while let Some(at) = text[from..].find(&**secret) {
                    let start = from + at;
                    cover(start, start + secret.len());
                    // The next occurrence may overlap this one: search again from its next char.
                    from = start + text[start..].chars().next().map_or(1, char::len_utf8);
                }
            }
        }
        if reach.is_empty() {
            return Cow::Borrowed(text);
        }
        let mut masked = String::with_capacity(text.len());
        let (mut copied, mut start) = (0, 0);
        while start < text.len() {
            let mut end = reach[start];
            if end == 0 {
                start += 1;
                continue;
            }
            // Extend over every occurrence that starts before this run of masked text ends.
            let mut at = start;
            while at < end {
                end = end.max(reach[at]);
                at += 1;
            }
            masked.push_str(&text[copied..start]);
            masked.push_str(MASK);
            (copied, start) = (end, end);
        }
        masked.push_str(&text[copied..]);
        Cow::Owned(masked)
    }

    fn read(&self) -> RwLockReadGuard<'_, Known> {
        // Every update leaves the set, the levels and the recent secrets consistent.
        self.state.read().unwrap_or_else(|p| p.into_inner())
    }

    /// The known secrets, to search `text` for, with the recent ones built into an automaton if
    /// there are enough; `None` if `text` is too short to hold any. Nothing is built for such a
    /// text: most texts (property names, ids, short values) are shorter than a generated
    /// password, and building is what learning many secrets costs.
    fn searchable(&self, text: &str) -> Option<RwLockReadGuard<'_, Known>> {
        {
            let known = self.read();
            if known.secrets.is_empty()
                || text.len() < known.shortest.max(MIN_MASKED_LEN)
                || !known.heads.may_begin_in(text)
            {
                return None;
            }
            if known.recent.len() < BATCH {
                return Some(known);
            }
        }
        self.state
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .build_recent();
        Some(self.read())
    }
}

impl Known {
    /// Builds the recent secrets into a level, then merges each level into the one above it
    /// while it is at least half that one's size: every level is less than half the one above.
    fn build_recent(&mut self) {
        if self.recent.len() < BATCH {
            return;
        }
        let mut secrets = std::mem::take(&mut self.recent);
        while let Some(above) = self.levels.last()
            && above.secrets.len() <= 2 * secrets.len()
        {
            let above = self.levels.pop().expect("a level was just seen");
            secrets.extend(above.secrets);
        }
        match Level::build(secrets) {
            Ok(level) => self.levels.push(level),
            // Cannot happen with secrets of bounded size; if it does, keep them searchable.
            Err((secrets, e)) => {
                tracing::error!("cannot build the secret masker's automaton: {e}");
                self.recent = secrets;
            }
        }
    }
}

impl Level {
    fn build(secrets: Vec<Arc<str>>) -> Result<Level, (Vec<Arc<str>>, aho_corasick::BuildError)> {
        // Standard semantics: only they report overlapping occurrences, all of which are masked.
        // A contiguous NFA builds several times faster than a DFA and searches nearly as fast.
        let built = AhoCorasick::builder()
            .match_kind(MatchKind::Standard)
            .kind(Some(AhoCorasickKind::ContiguousNFA))
            .build(secrets.iter().map(|s| s.as_bytes()));
        match built {
            Ok(finder) => Ok(Level { secrets, finder }),
            Err(e) => Err((secrets, e)),
        }
    }
}

/// Pushes onto `found` the plaintext of the secrets in `value`; `secret` says whether `value`
/// is inside a secret already.
///
/// Only what is secret is learned: a secret's string leaves (never an object's keys, which name
/// fields such as `kind` that plain text is full of), and a number only when it is the secret
/// itself. A number inside a secret object or list (a port, a count) would otherwise mark every
/// equal number of every resource secret.
fn collect_secrets(value: &Value, secret: bool, found: &mut Vec<String>) {
    match value {
        Value::Secret(inner) => match &**inner {
            Value::Integer(n) => found.push(n.to_string()),
            Value::Number(n) => found.push(n.to_string()),
            inner => collect_secrets(inner, true, found),
        },
        Value::Array(items) => items.iter().for_each(|v| collect_secrets(v, secret, found)),
        Value::Object(map) => map.values().for_each(|v| collect_secrets(v, secret, found)),
        Value::String(text) if secret => {
            // Output is masked line by line: each line of a multi-line secret (a PEM key) is
            // a secret of its own, without the indentation it shares with plain text (a
            // line `  },` of a JSON document would otherwise mask every such line).
            if text.contains('\n') {
                found.extend(text.lines().map(|line| line.trim().to_owned()));
            }
            found.push(text.clone());
        }
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
        ]))));
        masker.learn(&Value::Secret(Box::new(Value::Number(987654.0))));
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
        masker.learn(&secret("zzabcdefghzz"));
        assert_eq!(masker.mask("<zzabcdefghzz>"), "<[secret]>");
    }

    #[test]
    fn overlapping_secrets_are_masked_as_one() {
        let masker = SecretMasker::default();
        masker.learn(&secret("abcdef"));
        masker.learn(&secret("defghi"));
        assert_eq!(masker.mask("-abcdefghi-"), "-[secret]-");
        // Overlapping occurrences of one secret.
        masker.learn(&secret("aaaa"));
        assert_eq!(masker.mask("baaaaab"), "b[secret]b");
    }

    #[test]
    fn each_line_of_a_multi_line_secret_is_masked() {
        let masker = SecretMasker::default();
        masker.learn(&secret(
            "-----BEGIN KEY-----\r\nc2VjcmV0\n-----END KEY-----",
        ));
        assert_eq!(masker.mask("key: c2VjcmV0"), "key: [secret]");
    }

    /// A secret object's keys and numbers, and the indentation of a multi-line secret's
    /// lines, are not secrets: plain text holding them stays as it is, while every string
    /// the secret holds is masked.
    #[test]
    fn only_a_secret_s_string_leaves_are_learned() {
        let masker = SecretMasker::default();
        let mut object = plinth_engine::value::PropertyMap::new();
        object.insert("kind".into(), "db-password-3f9a".into());
        object.insert("port".into(), Value::Integer(5432));
        object.insert("nested".into(), Value::Array(vec!["token-77ac".into()]));
        masker.learn(&Value::Secret(Box::new(Value::Object(object))));
        masker.learn(&secret("{\n  \"user\": \"admin-9c2e\"\n  },\n}"));
        assert_eq!(
            masker.mask("kind port 5432 nested   },"),
            "kind port 5432 nested   },"
        );
        assert!(!masker.is_secret("5432") && !masker.contains_secret("  },"));
        assert_eq!(
            masker.mask("db-password-3f9a token-77ac \"user\": \"admin-9c2e\""),
            "[secret] [secret] [secret]"
        );
    }

    #[test]
    fn short_secrets_are_not_masked() {
        let masker = SecretMasker::default();
        masker.learn(&secret("abc"));
        masker.learn(&Value::Secret(Box::new(Value::Bool(true))));
        assert_eq!(masker.mask("abc true"), "abc true");
    }

    /// A text shorter than every known secret (a property name, an id, a short value: most
    /// texts) is answered without building an automaton, which is what learning thousands of
    /// secrets costs; a text long enough builds them and finds its secret.
    #[test]
    fn a_text_too_short_for_any_secret_builds_nothing() {
        let masker = SecretMasker::default();
        for i in 0..4 * BATCH {
            masker.learn_text(&format!("generated-password-{i:04}"));
        }
        for short in ["payload", "item-0123456789abcdef", "generated-password-00"] {
            assert!(!masker.contains_secret(short), "{short}");
            assert_eq!(masker.mask(short), short);
            assert_eq!(masker.mask_key(short), short);
        }
        assert!(masker.read().levels.is_empty(), "an automaton was built");
        assert_eq!(masker.mask("a generated-password-0003 b"), "a [secret] b");
        let known = masker.read();
        assert!(known.recent.is_empty() && !known.levels.is_empty());
    }

    /// A text long enough to hold a secret but holding none's first four bytes (a payload, a
    /// long id) is answered without building an automaton; one holding a secret's start but
    /// not the secret builds them and finds nothing; every secret is still found, at the start,
    /// the end or the middle of a text, however many secrets share their first bytes.
    #[test]
    fn a_text_holding_no_secret_s_start_builds_nothing() {
        let masker = SecretMasker::default();
        let secret_of = |i: usize| format!("secret-{i:06}-of-the-bench");
        for i in 0..4 * BATCH {
            masker.learn_text(&secret_of(i));
        }
        masker.learn_text("ünï-çødé-pässwörd");
        for text in [
            "payload of item 1234, changed, and a long tail of plain words",
            "item-0123456789abcdef-0123456789abcdef",
            "nï-çødé, close to a password's start but not one",
        ] {
            assert!(!masker.contains_secret(text), "{text}");
            assert_eq!(masker.mask(text), text);
        }
        assert!(masker.read().levels.is_empty(), "an automaton was built");
        assert!(!masker.contains_secret("a secret-999999-of-the-bench is not one"));
        assert!(!masker.read().levels.is_empty());
        for i in [0, 7, 4 * BATCH - 1] {
            let secret = secret_of(i);
            for text in [
                secret.clone(),
                format!("x{secret}"),
                format!("a {secret} b"),
            ] {
                assert!(masker.contains_secret(&text), "{text}");
            }
        }
        assert_eq!(masker.mask("→ünï-çødé-pässwörd←"), "→[secret]←");
    }

    /// A property name counts a secret only from [`MIN_KEY_SECRET_LEN`] characters, counted
    /// as characters, whether the secret is recent or in an automaton; text counts them all.
    #[test]
    fn a_property_name_counts_only_secrets_of_eight_characters_or_more() {
        let masker = SecretMasker::default();
        for short in ["k3y9", "seven-7", "sevén-7"] {
            masker.learn(&secret(short));
        }
        masker.learn(&secret("eight-88"));
        let check = |masker: &SecretMasker| {
            assert_eq!(
                masker.mask_key("tag-k3y9-seven-7-sevén-7"),
                "tag-k3y9-seven-7-sevén-7"
            );
            assert_eq!(masker.mask("tag-k3y9 seven-7"), "tag-[secret] [secret]");
            assert_eq!(masker.mask_key("x-eight-88"), "x-[secret]");
            assert_eq!(masker.mask_key("seven-7eight-88"), "seven-7[secret]");
        };
        check(&masker);
        // The same once every secret is in an automaton.
        for i in 0..BATCH {
            masker.learn(&secret(&format!("filler-{i}-secret")));
        }
        assert!(!masker.contains_secret("a text long enough to be searched: filler-x"));
        assert!(masker.read().recent.is_empty());
        check(&masker);
    }

    #[test]
    fn non_ascii_secrets_and_texts_are_masked_on_char_boundaries() {
        let masker = SecretMasker::default();
        masker.learn(&secret("mot-de-passe-été"));
        masker.learn(&secret("ééé-ü"));
        assert_eq!(
            masker.mask("→mot-de-passe-été← éééé-ü!"),
            "→[secret]← é[secret]!"
        );
    }

    /// Thousands of secrets, learned one at a time between searches, as an `up` of thousands of
    /// generated passwords does: every one is found, in every level, whatever the order, and
    /// overlaps across levels are masked as one.
    #[test]
    fn every_secret_is_found_whichever_level_holds_it() {
        let masker = SecretMasker::default();
        let secret_of = |i: usize| format!("pw-{i:05}-x");
        for i in 0..3000 {
            masker.learn(&secret(&secret_of(i)));
            // Searching between learns builds levels as it goes.
            if i % 7 == 0 {
                assert_eq!(masker.mask(&secret_of(i)), MASK, "secret {i}");
            }
        }
        let known = masker.read();
        assert!(known.levels.len() > 2, "{} levels", known.levels.len());
        assert!(
            (known.levels.windows(2)).all(|w| w[1].secrets.len() * 2 < w[0].secrets.len()),
            "each level is less than half the one above"
        );
        drop(known);
        for i in 0..3000 {
            let line = format!("a {} b", secret_of(i));
            assert_eq!(masker.mask(&line), "a [secret] b", "secret {i}");
            assert!(masker.contains_secret(&line) && masker.is_secret(&secret_of(i)));
        }
        // The newest (recent) secret overlapping one in the oldest level.
        masker.learn(&secret("x-extends-the-oldest"));
        assert_eq!(masker.mask("pw-00000-x-extends-the-oldest!"), "[secret]!");
        assert!(!masker.contains_secret("pw-99999-x") && !masker.is_secret("pw-0000"));
    }

    /// A loaded state's secrets, learned in one batch, are built into one automaton by the
    /// next search, and every one of them is found; learning them again as a run meets them
    /// builds nothing more.
    #[test]
    fn secrets_learned_in_one_batch_are_built_once() {
        let masker = SecretMasker::default();
        let values: Vec<Value> = (0..1000)
            .map(|i| secret(&format!("stored-secret-{i:04}")))
            .collect();
        masker.learn_all(&values);
        assert_eq!(masker.mask("a stored-secret-0999 b"), "a [secret] b");
        assert_eq!(masker.read().levels.len(), 1);
        for (i, value) in values.iter().enumerate() {
            masker.learn(value);
            let line = format!("<stored-secret-{i:04}>");
            assert_eq!(masker.mask(&line), "<[secret]>");
        }
        let known = masker.read();
        assert!(known.levels.len() == 1 && known.recent.is_empty());
    }

    /// Learning 10,000 distinct secrets with a search after each costs the automata a
    /// logarithmic number of rebuilds per secret, not one rebuild of them all per secret.
    #[test]
    fn learning_secrets_rebuilds_each_only_a_logarithmic_number_of_times() {
        let masker = SecretMasker::default();
        let mut sizes_built = 0;
        let mut levels_seen = 0;
        for i in 0..10_000 {
            masker.learn_text(&format!("generated-password-{i}"));
            assert!(masker.contains_secret(&format!("generated-password-{i}")));
            let known = masker.read();
            // A level's size is counted each time one is (re)built: when the levels change.
            let levels: usize = known.levels.iter().map(|l| l.secrets.len()).sum();
            if levels != levels_seen {
                sizes_built += known.levels.last().map_or(0, |l| l.secrets.len());
                levels_seen = levels;
            }
        }
        // log2(10_000 / 8) ≈ 10.3 rebuilds per secret at most; quadratic would be ~5,000.
        assert!(sizes_built <= 12 * 10_000, "{sizes_built} secrets rebuilt");
    }
}

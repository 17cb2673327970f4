//! Sealing and opening the secrets of a state document (a checkpoint or a journal entry) as
//! JSON: `{"plinth:sig":"secret","value":X}` is stored as
//! `{"plinth:sig":"secret","ciphertext":"v1:..."}`, where the ciphertext seals X's JSON.
//!
//! Documents without secrets take a fast path: they are not walked.

use plinth_engine::value::SIG_KEY;
use rayon::prelude::*;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::{Crypter, PARALLEL_BATCH, PlainText, SealedText, SecretsError};
use crate::par::collect_ok;

const SECRET: &str = "secret";
const PLAIN: &str = "value";
const SEALED: &str = "ciphertext";

/// Why a state document could not be encoded or decoded.
#[derive(Debug, thiserror::Error)]
pub enum CodecError {
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    #[error(transparent)]
    Secrets(#[from] SecretsError),
}

/// Opens every secret as `null`: for reading state whose secrets are not needed (counting a
/// stack's resources), without a passphrase.
pub struct Redacted;

impl Crypter for Redacted {
    fn seal(&self, _: &str) -> Result<String, SecretsError> {
        Err(SecretsError::Redacted)
    }
    fn open(&self, _: &str) -> Result<String, SecretsError> {
        Ok("null".to_owned())
    }
}

/// Serializes `data` as JSON (`outlined` as [`crate::layout`] describes, or on one line) with
/// every secret sealed.
pub fn to_sealed_json<T: Serialize>(
    data: &T,
    crypter: &dyn Crypter,
    outlined: bool,
) -> Result<Vec<u8>, CodecError> {
    let text = write(data, outlined)?;
    // A secret always serializes as an object with the signature key; its absence is proof
    // there is nothing to seal (inside a JSON string, the quotes would be escaped).
    if !contains(&text, &format!("\"{SIG_KEY}\"")) {
        return Ok(text);
    }
    if let Some(found) = std::str::from_utf8(&text).ok().and_then(PlainText::find) {
        let plaintexts: Vec<String> = found.plaintexts().map(str::to_owned).collect();
        return Ok(found.sealed(&crypter.seal_all(&plaintexts)?).into_bytes());
    }
    let mut tree = serde_json::to_value(data)?;
    seal_tree(&mut tree, crypter)?;
    Ok(write(&tree, outlined)?)
}

fn write<T: Serialize + ?Sized>(data: &T, outlined: bool) -> serde_json::Result<Vec<u8>> {
    if outlined {
        crate::layout::to_outlined_json(data)
    } else {
        serde_json::to_vec(data)
    }
}

/// Deserializes JSON written by [`to_sealed_json`], opening every sealed secret.
pub fn from_sealed_json<T: DeserializeOwned>(
    bytes: &[u8],
    crypter: &dyn Crypter,
) -> Result<T, CodecError> {
    if !contains(bytes, &format!("\"{SEALED}\"")) {
        return serde_json::from_slice(bytes).map_err(|error| {
            with_path::<T, _>(error, || {
                serde_path_to_error::deserialize(&mut serde_json::Deserializer::from_slice(bytes))
            })
            .into()
        });
    }
    if let Some(opened) = open_in_place(bytes, crypter) {
        return Ok(opened);
    }
    let mut tree: Value = serde_json::from_slice(bytes)?;
    open_tree(&mut tree, crypter)?;
    T::deserialize(&tree)
        .map_err(|error| with_path::<T, _>(error, || serde_path_to_error::deserialize(tree)).into())
}

/// `bytes` read with their secrets opened in the text ([`SealedText`]), if they are all in
/// plinth's own form and everything reads; `None` for the tree walk to read them, or to say
/// exactly what is wrong and where.
fn open_in_place<T: DeserializeOwned>(bytes: &[u8], crypter: &dyn Crypter) -> Option<T> {
    let text = std::str::from_utf8(bytes).ok()?;
    serde_json::from_str::<&serde_json::value::RawValue>(text).ok()?;
    let found = SealedText::find(text)?;
    let sealed: Vec<String> = found.ciphertexts().map(str::to_owned).collect();
    let opened = found.opened(&crypter.open_all(&sealed).ok()?)?;
    serde_json::from_str(&opened).ok()
}

/// Tracking the path costs most of a parse: documents are parsed without it, and again with
/// it only to name the field of an error. Should the second parse succeed, the first error
/// stands.
fn with_path<T, F>(error: serde_json::Error, reparse: F) -> serde_json::Error
where
    F: FnOnce() -> Result<T, serde_path_to_error::Error<serde_json::Error>>,
{
    match reparse() {
        Err(with_path) => naming_the_field(with_path),
        Ok(_) => error,
    }
}

/// A decoding error that says which field was wrong (`snapshot.resources[2].urn: ...`).
fn naming_the_field(error: serde_path_to_error::Error<serde_json::Error>) -> serde_json::Error {
    let path = error.path().to_string();
    let inner = error.into_inner();
    if path == "." || inner.is_syntax() || inner.is_eof() {
        inner
    } else {
        serde::de::Error::custom(format!("{path}: {inner}"))
    }
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    memchr::memmem::find(haystack, needle.as_bytes()).is_some()
}

fn is_secret(map: &Map<String, Value>) -> bool {
    map.get(SIG_KEY).and_then(Value::as_str) == Some(SECRET)
}

/// Replaces each plaintext secret in `tree` with its sealed form, all sealed in one batch.
pub fn seal_tree(tree: &mut Value, crypter: &dyn Crypter) -> Result<(), SecretsError> {
    seal_trees([tree], crypter)
}

/// Replaces each plaintext secret in all of `trees` (a checkpoint's resources, each built on
/// its own) with its sealed form, all sealed in one batch.
pub fn seal_trees<'a>(
    trees: impl IntoIterator<Item = &'a mut Value>,
    crypter: &dyn Crypter,
) -> Result<(), SecretsError> {
    let mut secrets = Vec::new();
    for tree in trees {
        collect_secrets(tree, PLAIN, &mut secrets);
    }
    if secrets.is_empty() {
        return Ok(());
    }
    let plaintexts: Vec<String> = (secrets.iter_mut())
        .map(|map| {
            map.remove(PLAIN)
                .expect("collected for its value")
                .to_string()
        })
        .collect();
    let sealed = crypter.seal_all(&plaintexts)?;
    for (map, sealed) in secrets.into_iter().zip(sealed) {
        map.insert(SEALED.to_owned(), Value::String(sealed));
    }
    Ok(())
}

/// Replaces each sealed secret in `tree` with its plaintext form, all opened in one batch. A
/// secret without ciphertext (state written before secrets were sealed) is left as it is.
pub fn open_tree(tree: &mut Value, crypter: &dyn Crypter) -> Result<(), SecretsError> {
    open_trees(&mut [tree], crypter)
}

/// [`open_tree`] on each of `trees` (a checkpoint's resources, each parsed on its own), all
/// opened in one batch. An error names the resource and property of the secret at fault.
pub fn open_trees(trees: &mut [&mut Value], crypter: &dyn Crypter) -> Result<(), SecretsError> {
    let mut secrets = Vec::new();
    // How many secrets the trees up to each one hold: which tree the n-th secret is in.
    let mut ends = Vec::with_capacity(trees.len());
    for tree in trees.iter_mut() {
        collect_secrets(tree, SEALED, &mut secrets);
        ends.push(secrets.len());
    }
    if secrets.is_empty() {
        return Ok(());
    }
    let locate = |trees: &[&mut Value], i: usize, error| {
        let tree = ends.partition_point(|&end| end <= i);
        let before = tree.checked_sub(1).map_or(0, |t| ends[t]);
        located(&*trees[tree], i - before, error)
    };
    let mut sealed = Vec::with_capacity(secrets.len());
    for (i, map) in secrets.iter().enumerate() {
        match &map[SEALED] {
            Value::String(text) => sealed.push(text.clone()),
            _ => {
                drop(secrets);
                let error = SecretsError::MalformedState("`ciphertext` is not a string".into());
                return Err(locate(trees, i, error));
            }
        }
    }
    let opened = match crypter.open_all(&sealed) {
        Ok(opened) => opened,
        Err(error) => {
            drop(secrets);
            return Err(match failing_value(&error, &sealed, crypter) {
                Some(i) => locate(trees, i, error),
                None => error,
            });
        }
    };
    // Every plaintext is parsed before any secret is replaced, so that the tree still says
    // where the bad one is.
    let parse =
        |(i, plain): (usize, &String)| serde_json::from_str::<Value>(plain).map_err(|e| (i, e));
    let parsed = if opened.len() >= PARALLEL_BATCH {
        collect_ok(opened.par_iter().enumerate().map(parse))
    } else {
        opened
            .iter()
            .enumerate()
            .map(parse)
            .collect::<Result<Vec<_>, _>>()
    };
    let plains = match parsed {
        Ok(plains) => plains,
        Err((i, e)) => {
            drop(secrets);
            let error = SecretsError::MalformedState(format!("its plaintext is not JSON: {e}"));
            return Err(locate(trees, i, error));
        }
    };
    for (map, plain) in secrets.into_iter().zip(plains) {
        map.remove(SEALED);
        map.insert(PLAIN.to_owned(), plain);
    }
    Ok(())
}

/// Which of `sealed` the failure `error` of opening them all is about, for errors about one
/// value (malformed, or not decrypting): found by opening them one at a time, on this error
/// path only.
fn failing_value(error: &SecretsError, sealed: &[String], crypter: &dyn Crypter) -> Option<usize> {
    match error {
        SecretsError::Malformed { .. } | SecretsError::Undecryptable(_) if sealed.len() > 1 => {
            sealed.iter().position(|text| crypter.open(text).is_err())
        }
        SecretsError::Malformed { .. } | SecretsError::Undecryptable(_) => Some(0),
        _ => None,
    }
}

/// `error`, naming where the `index`-th sealed secret of `tree` (in document order) is: the
/// URN of the innermost object around it that has one (a resource's state) and the path to
/// it from there (`outputs.password`). Both come from a state file, so both are escaped.
fn located(tree: &Value, index: usize, error: SecretsError) -> SecretsError {
    let mut search = Locate {
        left: index,
        path: Vec::new(),
        found: None,
    };
    search.walk(tree, None);
    match search.found {
        Some((urn, path)) => SecretsError::At {
            place: match urn {
                Some(urn) => format!("of resource `{urn}` at `{path}`"),
                None => format!("at `{path}`"),
            },
            error: Box::new(error),
        },
        None => error,
    }
}

/// A walk to the n-th sealed secret of a tree, in the order [`collect_secrets`] takes them.
struct Locate {
    left: usize,
    path: Vec<String>,
    /// The URN around the secret, if any, and its path from the object holding that URN.
    found: Option<(Option<String>, String)>,
}

impl Locate {
    /// `urn`: the innermost URN around `tree`, with the length of the path where it was found.
    fn walk(&mut self, tree: &Value, urn: Option<(&str, usize)>) {
        if self.found.is_some() {
            return;
        }
        match tree {
            Value::Object(map) if is_secret(map) => {
                if !map.contains_key(SEALED) {
                    return;
                }
                if self.left == 0 {
                    let from = urn.map_or(0, |(_, depth)| depth);
                    let path = self.path[from..].join("");
                    let path = path.strip_prefix('.').unwrap_or(&path).to_owned();
                    let urn = urn.map(|(urn, _)| urn.escape_debug().to_string());
                    self.found = Some((urn, path));
                }
                self.left = self.left.wrapping_sub(1);
            }
            Value::Object(map) => {
                let urn = match map.get("urn") {
                    Some(Value::String(here)) => Some((here.as_str(), self.path.len())),
                    _ => urn,
                };
                for (key, value) in map {
                    self.path.push(format!(".{}", key.escape_debug()));
                    self.walk(value, urn);
                    self.path.pop();
                }
            }
            Value::Array(items) => {
                for (i, value) in items.iter().enumerate() {
                    self.path.push(format!("[{i}]"));
                    self.walk(value, urn);
                    self.path.pop();
                }
            }
            _ => {}
        }
    }
}

/// The secrets in `tree` that have a `field` (their plaintext or their ciphertext), in document
/// order.
fn collect_secrets<'a>(
    tree: &'a mut Value,
    field: &str,
    out: &mut Vec<&'a mut Map<String, Value>>,
) {
    match tree {
        Value::Object(map) => {
            if !is_secret(map) {
                (map.values_mut()).for_each(|v| collect_secrets(v, field, out));
            } else if map.contains_key(field) {
                out.push(map);
            }
        }
        Value::Array(items) => (items.iter_mut()).for_each(|v| collect_secrets(v, field, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secrets::PassphraseCrypter;
    use serde_json::json;

    #[test]
    fn seals_every_secret_of_a_tree_and_opens_them_back() {
        let (crypter, _) = PassphraseCrypter::create("pw", "dev").unwrap();
        let plain = json!({
            "resources": [{
                "inputs": {"token": {SIG_KEY: SECRET, PLAIN: "hunter2"}},
                "outputs": {"nested": {SIG_KEY: SECRET, PLAIN: {"a": [1, "s3cr3t"]}}, "n": 2},
            }],
            "outputs": {"unknown": {SIG_KEY: "unknown"}, "text": "ciphertext"},
        });
        let mut tree = plain.clone();
        seal_tree(&mut tree, &crypter).unwrap();
        let text = tree.to_string();
        assert!(
            !text.contains("hunter2") && !text.contains("s3cr3t"),
            "{text}"
        );
        let token = &tree["resources"][0]["inputs"]["token"];
        assert!(
            token[SEALED].as_str().unwrap().starts_with("v1:"),
            "{token}"
        );
        assert_eq!(token.get(PLAIN), None);
        open_tree(&mut tree, &crypter).unwrap();
        assert_eq!(tree, plain);
    }

    /// Counts the batches it is asked for, as a service would count requests.
    struct Counting {
        inner: PassphraseCrypter,
        batches: std::sync::atomic::AtomicUsize,
    }

    impl Crypter for Counting {
        fn seal(&self, _: &str) -> Result<String, SecretsError> {
            panic!("one value at a time")
        }
        fn open(&self, _: &str) -> Result<String, SecretsError> {
            panic!("one value at a time")
        }
        fn seal_all(&self, plaintexts: &[String]) -> Result<Vec<String>, SecretsError> {
            self.batches
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            plaintexts.iter().map(|p| self.inner.seal(p)).collect()
        }
        fn open_all(&self, sealed: &[String]) -> Result<Vec<String>, SecretsError> {
            self.batches
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            sealed.iter().map(|s| self.inner.open(s)).collect()
        }
    }

    #[test]
    fn a_tree_is_sealed_and_opened_in_one_batch_each() {
        let crypter = Counting {
            inner: PassphraseCrypter::create("pw", "dev").unwrap().0,
            batches: Default::default(),
        };
        let secrets: Vec<Value> = (0..40)
            .map(|i| json!({"r": i, "v": {SIG_KEY: SECRET, PLAIN: format!("s{i}")}}))
            .collect();
        let plain = json!({"resources": secrets, "other": {SIG_KEY: SECRET, PLAIN: [1, 2]}});
        let mut tree = plain.clone();
        seal_tree(&mut tree, &crypter).unwrap();
        assert!(!tree.to_string().contains("\"s1\""));
        open_tree(&mut tree, &crypter).unwrap();
        assert_eq!(tree, plain);
        assert_eq!(crypter.batches.load(std::sync::atomic::Ordering::SeqCst), 2);
        // Nothing to seal or open: no batch at all.
        open_tree(&mut tree, &crypter).unwrap();
        assert_eq!(crypter.batches.load(std::sync::atomic::Ordering::SeqCst), 2);
    }

    #[test]
    fn secrets_written_in_plaintext_by_an_older_plinth_still_load() {
        let (crypter, _) = PassphraseCrypter::create("pw", "dev").unwrap();
        let legacy = json!({"token": {SIG_KEY: SECRET, PLAIN: "hunter2"}});
        let mut tree = legacy.clone();
        open_tree(&mut tree, &crypter).unwrap();
        assert_eq!(tree, legacy);
    }

    #[test]
    fn documents_without_secrets_are_written_as_they_are() {
        let doc = json!({"a": "plain", "b": [1, 2]});
        let bytes = to_sealed_json(&doc, &Redacted, false).unwrap();
        assert_eq!(bytes, serde_json::to_vec(&doc).unwrap());
        let back: Value = from_sealed_json(&bytes, &Redacted).unwrap();
        assert_eq!(back, doc);
    }

    #[test]
    fn a_secret_that_does_not_open_is_named_by_resource_and_property() {
        let (crypter, _) = PassphraseCrypter::create("pw", "dev").unwrap();
        let good = crypter.seal("\"fine\"").unwrap();
        for (bad, says) in [
            (json!("v1:AAAA"), "is malformed: too short"),
            (json!(3), "`ciphertext` is not a string"),
            (
                json!(crypter.seal("not json").unwrap()),
                "its plaintext is not JSON",
            ),
        ] {
            let mut tree = json!({"snapshot": {"resources": [
                {"urn": "urn:a", "outputs": {"ok": {SIG_KEY: SECRET, SEALED: good}}},
                {"urn": "urn:b\u{1b}", "outputs": {"deep": [1, {"pw": {SIG_KEY: SECRET, SEALED: bad}}]}},
            ]}});
            let err = open_tree(&mut tree, &crypter).unwrap_err().to_string();
            assert!(
                err.contains("of resource `urn:b\\u{1b}` at `outputs.deep[1].pw`")
                    && err.contains(says),
                "{err}"
            );
        }
    }

    /// Trees sealed and opened together (a checkpoint's resources) take one batch each way,
    /// and a secret that does not open is named by its own tree's resource, not the first's.
    #[test]
    fn many_trees_take_one_batch_and_errors_name_the_right_tree() {
        // A few secrets are sealed and opened where they are, a hundred on every core.
        for n in [5, 100] {
            let crypter = Counting {
                inner: PassphraseCrypter::create("pw", "dev").unwrap().0,
                batches: Default::default(),
            };
            let plain: Vec<Value> = (0..n)
                .map(|i| json!({"urn": format!("urn:{i}"), "inputs": {"a": {SIG_KEY: SECRET, PLAIN: format!("s{i}")}, "b": {SIG_KEY: SECRET, PLAIN: i}}}))
                .collect();
            let mut trees = plain.clone();
            seal_trees(trees.iter_mut(), &crypter).unwrap();
            let mut refs: Vec<&mut Value> = trees.iter_mut().collect();
            open_trees(&mut refs, &crypter).unwrap();
            assert_eq!(trees, plain);
            assert_eq!(crypter.batches.load(std::sync::atomic::Ordering::SeqCst), 2);

            // The error path opens the values one at a time, to find the one at fault.
            let crypter = crypter.inner;
            seal_trees(trees.iter_mut(), &crypter).unwrap();
            let bad = n * 3 / 4;
            trees[bad]["inputs"]["b"][SEALED] = json!("v1:AAAA");
            let mut refs: Vec<&mut Value> = trees.iter_mut().collect();
            let err = open_trees(&mut refs, &crypter).unwrap_err().to_string();
            assert!(
                err.contains(&format!("of resource `urn:{bad}` at `inputs.b`")),
                "{err}"
            );
        }
    }

    #[test]
    fn a_malformed_ciphertext_is_an_error() {
        let (crypter, _) = PassphraseCrypter::create("pw", "dev").unwrap();
        for bad in [
            json!({SIG_KEY: SECRET, SEALED: 3}),
            json!({SIG_KEY: SECRET, SEALED: "v1:AAAA"}),
        ] {
            let mut tree = bad.clone();
            assert!(open_tree(&mut tree, &crypter).is_err(), "{bad}");
        }
    }
}

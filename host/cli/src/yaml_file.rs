//! Reading the YAML files of a project (`Plinth.yaml`, `Plinth.<stack>.yaml`, `Plinth.lock`):
//! anyone who can write the project directory writes them, so they are read as hostile input.
//!
//! - Size: at most [`MAX_BYTES`], checked while reading, so a huge file is never read whole.
//! - Nesting: at most [`MAX_DEPTH`] open flow brackets, checked before parsing. The YAML
//!   parser's time grows with the square of the depth of nested brackets (a 200 KB file of
//!   `[` took 23 s to refuse); a count of brackets takes microseconds.
//! - Duplicate keys: refused, naming the key and its line. serde fills a map or struct with
//!   the last of duplicate keys, so one setting could silently hide another; a first walk of
//!   the document catches them at any depth.

use std::cell::RefCell;
use std::collections::HashSet;
use std::fmt;
use std::io::Read;
use std::path::Path;

use anyhow::{Context, Result, bail};
use serde::de::{
    self, DeserializeOwned, DeserializeSeed, Deserializer, EnumAccess, IgnoredAny, MapAccess,
    SeqAccess, VariantAccess, Visitor,
};

/// The largest project or stack file read.
pub const MAX_BYTES: u64 = 1024 * 1024;

/// The deepest nesting of flow collections (`[...]`, `{...}`) read.
pub const MAX_DEPTH: usize = 64;

/// The text of the file at `path`, or `None` if there is none; an error if it is larger than
/// [`MAX_BYTES`] or not UTF-8.
pub fn read(path: &Path) -> Result<Option<String>> {
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let mut bytes = Vec::new();
    file.take(MAX_BYTES + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("cannot read {}", path.display()))?;
    if bytes.len() as u64 > MAX_BYTES {
        bail!(
            "{} is larger than {} KiB, the most plinth reads of a project or stack file; \
             it is not a file plinth wrote or a person would: check what put it there",
            path.display(),
            MAX_BYTES / 1024
        );
    }
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|e| anyhow::anyhow!("{} is malformed: it is not UTF-8 ({e})", path.display()))
}

/// Parses `text`, the contents of `path`, refusing it if nested deeper than [`MAX_DEPTH`] or
/// if any mapping gives a key twice. Errors say `<path> is malformed: ...`.
pub fn parse<T: DeserializeOwned>(path: &Path, text: &str) -> Result<T> {
    let malformed = |e: serde_yaml_ng::Error| {
        anyhow::anyhow!(
            "{} is malformed: {}",
            path.display(),
            e.to_string().replace('\n', " ")
        )
    };
    if let Some(line) = too_deep(text) {
        bail!(
            "{} is malformed: brackets nest more than {MAX_DEPTH} levels deep at line {line}; \
             refused before parsing",
            path.display()
        );
    }
    let twice = RefCell::new(None);
    let walk = Walk { twice: &twice };
    if let Err(e) = walk.deserialize(serde_yaml_ng::Deserializer::from_str(text)) {
        let Some(key) = twice.take() else {
            return Err(malformed(e));
        };
        let (line, column) = e.location().map_or((1, 1), |at| (at.line(), at.column()));
        let at = match second_key_line(text, line, column, &key) {
            Some(second) => format!("the second time at line {second}"),
            None => format!("in the mapping at line {line} column {column}"),
        };
        bail!(
            "{} is malformed: the key `{}` is given twice, {at}; give each key once",
            path.display(),
            key.escape_debug()
        );
    }
    serde_yaml_ng::from_str(text).map_err(malformed)
}

/// Walks a YAML document and fails at the first mapping that gives a key twice, recording the
/// key in `twice` (serde_yaml_ng's own check names only the mapping's first line, and lets a
/// map or struct keep the last of the two).
#[derive(Clone, Copy)]
struct Walk<'a> {
    twice: &'a RefCell<Option<String>>,
}

impl<'de> DeserializeSeed<'de> for Walk<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any YAML value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_i128<E>(self, _: i128) -> Result<(), E> {
        Ok(())
    }
    fn visit_u128<E>(self, _: u128) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_bytes<E>(self, _: &[u8]) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_none<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
    fn visit_newtype_struct<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<(), A::Error> {
        while items.next_element_seed(self)?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<serde_yaml_ng::Value>()? {
            if !seen.insert(key.clone()) {
                let text = match key {
                    serde_yaml_ng::Value::String(text) => text,
                    other => serde_yaml_ng::to_string(&other)
                        .unwrap_or_default()
                        .trim()
                        .to_owned(),
                };
                *self.twice.borrow_mut() = Some(text);
                return Err(de::Error::custom("a key is given twice"));
            }
            map.next_value_seed(self)?;
        }
        Ok(())
    }

    /// A value with a tag of its own (`!name value`).
    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<(), A::Error> {
        let (_, value) = data.variant::<IgnoredAny>()?;
        value.newtype_variant_seed(self)
    }
}

/// The line of the second key `key` of the block mapping whose first key is at `line` and
/// `column` (1-based), if it can be told from the text (not in a flow mapping `{...}`).
fn second_key_line(text: &str, line: usize, column: usize, key: &str) -> Option<usize> {
    let indent = column.checked_sub(1)?;
    let mut seen = 0;
    for (i, text_line) in text.lines().enumerate().skip(line.checked_sub(1)?) {
        let number = i + 1;
        let rest = if number == line {
            text_line.get(indent..)?
        } else {
            let rest = text_line.trim_start_matches(' ');
            if rest.is_empty() || rest.starts_with('#') {
                continue;
            }
            match (text_line.len() - rest.len()).cmp(&indent) {
                // The mapping ended.
                std::cmp::Ordering::Less => return None,
                // A value of one of its keys.
                std::cmp::Ordering::Greater => continue,
                std::cmp::Ordering::Equal => rest,
            }
        };
        let quoted = [key.to_owned(), format!("\"{key}\""), format!("'{key}'")];
        let is_key = quoted.iter().any(|k| {
            (rest.strip_prefix(k.as_str())).is_some_and(|after| after.trim_start().starts_with(':'))
        });
        if is_key {
            seen += 1;
            if seen == 2 {
                return Some(number);
            }
        }
    }
    None
}

/// The line at which `text`'s flow brackets first nest deeper than [`MAX_DEPTH`], if they do.
/// Brackets are counted everywhere, quoted or not: an overestimate, which only a value holding
/// dozens of unclosed brackets could meet, and which no quote can hide a real nesting from.
fn too_deep(text: &str) -> Option<usize> {
    let mut depth = 0usize;
    let mut line = 1;
    for byte in text.bytes() {
        match byte {
            b'[' | b'{' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Some(line);
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            b'\n' => line += 1,
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct File {
        name: String,
        #[serde(default)]
        config: serde_yaml_ng::Value,
    }

    fn parse_file(text: &str) -> Result<File> {
        parse(Path::new("Plinth.dev.yaml"), text)
    }

    #[test]
    fn a_duplicate_key_is_refused_naming_it_and_its_line() {
        for (text, says) in [
            (
                "name: p\nconfig:\n  a: 1\n  b:\n    a: 0\n  # a: 2\n  'a': 3\n",
                "the key `a` is given twice, the second time at line 7",
            ),
            (
                "name: p\nname: q\n",
                "the key `name` is given twice, the second time at line 2",
            ),
            (
                "name: p\nconfig:\n- x: 1\n  a: 1\n  a: 2\n",
                "the key `a` is given twice, the second time at line 5",
            ),
            (
                "name: p\nconfig: {a: 1, b: 2, a: 3}\n",
                "the key `a` is given twice, in the mapping at line 2 column 9",
            ),
            (
                "name: p\nconfig:\n  x: !tagged {k: 1, k: 2}\n",
                "the key `k` is given twice, in the mapping at line 3",
            ),
        ] {
            let err = format!("{:#}", parse_file(text).unwrap_err());
            assert!(
                err.starts_with("Plinth.dev.yaml is malformed: ") && err.contains(says),
                "{text:?}: {err}"
            );
        }
        parse_file("name: p\nconfig:\n  a: 1\n  b: 2\n").unwrap();
    }

    #[test]
    fn deep_nesting_is_refused_before_parsing() {
        let deep = format!("name: p\nconfig: {}", "[".repeat(200_000));
        let err = parse_file(&deep).unwrap_err().to_string();
        assert!(
            err.contains("more than 64 levels") && err.contains("line 2"),
            "{err}"
        );
        // Within the limit, and brackets that close: parsed as usual.
        let fine = format!("name: \"{}\"\n", "[]".repeat(10_000));
        parse_file(&fine).unwrap();
    }

    #[test]
    fn a_file_over_the_size_limit_is_refused_unread() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("Plinth.yaml");
        std::fs::write(&path, vec![b'#'; MAX_BYTES as usize + 1]).unwrap();
        let err = read(&path).unwrap_err().to_string();
        assert!(err.contains("larger than 1024 KiB"), "{err}");
        std::fs::write(&path, vec![b'#'; MAX_BYTES as usize]).unwrap();
        assert!(read(&path).unwrap().is_some());
        assert!(read(&dir.path().join("none")).unwrap().is_none());
    }
}

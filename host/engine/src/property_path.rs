//! Property paths, as `ignore_changes` names them: `tags.env`, `rules[0].port`,
//! `labels["app.kubernetes.io/name"]`.

use std::fmt;

use crate::value::{PropertyMap, Value};

/// One step of a path: an object key or an array index.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Key(String),
    Index(usize),
}

/// A parsed property path; the first segment is always a top-level property name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PropertyPath {
    segments: Vec<Segment>,
}

/// Why a path does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid property path `{path}`: {reason}")]
pub struct PathError {
    pub path: String,
    pub reason: &'static str,
}

impl PropertyPath {
    pub fn parse(path: &str) -> Result<PropertyPath, PathError> {
        let fail = |reason| PathError {
            path: path.to_owned(),
            reason,
        };
        let mut segments = Vec::new();
        let mut rest = path;
        while !rest.is_empty() {
            if let Some(bracketed) = rest.strip_prefix('[') {
                let end = bracketed.find(']').ok_or_else(|| fail("unclosed `[`"))?;
                let inner = &bracketed[..end];
                let segment = if let Some(quoted) = inner.strip_prefix('"') {
                    let key = quoted
                        .strip_suffix('"')
                        .ok_or_else(|| fail("unclosed quote in `[\"…\"]`"))?;
                    Segment::Key(key.to_owned())
                } else {
                    let index = inner
                        .parse()
                        .map_err(|_| fail("`[…]` holds an index or a quoted key"))?;
                    Segment::Index(index)
                };
                segments.push(segment);
                rest = &bracketed[end + 1..];
            } else {
                if !segments.is_empty() {
                    rest = rest
                        .strip_prefix('.')
                        .ok_or_else(|| fail("expected `.` or `[` after a segment"))?;
                }
                let end = rest.find(['.', '[', ']', '"']).unwrap_or(rest.len());
                if end == 0 {
                    return Err(fail("empty property name"));
                }
                segments.push(Segment::Key(rest[..end].to_owned()));
                rest = &rest[end..];
            }
        }
        match segments.first() {
            None => Err(fail("empty path")),
            Some(Segment::Index(_)) => Err(fail("a path starts with a property name")),
            Some(Segment::Key(_)) => Ok(PropertyPath { segments }),
        }
    }

    /// The value at this path in `map`, if there is one.
    pub fn get<'a>(&self, map: &'a PropertyMap) -> Option<&'a Value> {
        let (Segment::Key(first), rest) = self.segments.split_first()? else {
            return None;
        };
        rest.iter().try_fold(map.get(first)?, |v, s| match (v, s) {
            (Value::Object(m), Segment::Key(k)) => m.get(k),
            (Value::Array(items), Segment::Index(i)) => items.get(*i),
            _ => None,
        })
    }

    /// Sets the value at this path in `map`, creating missing objects on the way. Returns false
    /// when the path runs through something that is not a container of the right kind (or past
    /// the end of an array), leaving `map` unchanged.
    pub fn set(&self, map: &mut PropertyMap, value: Value) -> bool {
        let Some((Segment::Key(first), rest)) = self.segments.split_first() else {
            return false;
        };
        let Some((last, middle)) = rest.split_last() else {
            map.insert(first.clone(), value);
            return true;
        };
        let mut here = map
            .entry(first.clone())
            .or_insert_with(|| Value::Object(PropertyMap::new()));
        for segment in middle {
            here = match (here, segment) {
                (Value::Object(m), Segment::Key(k)) => m
                    .entry(k.clone())
                    .or_insert_with(|| Value::Object(PropertyMap::new())),
                (Value::Array(items), Segment::Index(i)) => match items.get_mut(*i) {
                    Some(v) => v,
                    None => return false,
                },
                _ => return false,
            };
        }
        match (here, last) {
            (Value::Object(m), Segment::Key(k)) => {
                m.insert(k.clone(), value);
                true
            }
            (Value::Array(items), Segment::Index(i)) if *i < items.len() => {
                items[*i] = value;
                true
            }
            _ => false,
        }
    }

    /// Removes the value at this path from `map` (an array element becomes null, so that later
    /// indices keep their meaning).
    pub fn remove(&self, map: &mut PropertyMap) {
        let Some((Segment::Key(first), rest)) = self.segments.split_first() else {
            return;
        };
        let Some((last, middle)) = rest.split_last() else {
            map.remove(first);
            return;
        };
        let mut here = match map.get_mut(first) {
            Some(v) => v,
            None => return,
        };
        for segment in middle {
            here = match (here, segment) {
                (Value::Object(m), Segment::Key(k)) => match m.get_mut(k) {
                    Some(v) => v,
                    None => return,
                },
                (Value::Array(items), Segment::Index(i)) => match items.get_mut(*i) {
                    Some(v) => v,
                    None => return,
                },
                _ => return,
            };
        }
        match (here, last) {
            (Value::Object(m), Segment::Key(k)) => {
                m.remove(k);
            }
            (Value::Array(items), Segment::Index(i)) => {
                if let Some(v) = items.get_mut(*i) {
                    *v = Value::Null;
                }
            }
            _ => {}
        }
    }

    /// Keeps the old value at this path in `news` (or its absence), so that a change there is
    /// not seen. A path that cannot be applied to `news` leaves it as it is.
    pub fn keep_old(&self, olds: &PropertyMap, news: &mut PropertyMap) {
        match self.get(olds) {
            Some(old) => {
                self.set(news, old.clone());
            }
            None => self.remove(news),
        }
    }
}

impl fmt::Display for PropertyPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, segment) in self.segments.iter().enumerate() {
            match segment {
                Segment::Key(k) if k.contains(['.', '[', ']', '"']) => write!(f, "[\"{k}\"]")?,
                Segment::Key(k) if i == 0 => write!(f, "{k}")?,
                Segment::Key(k) => write!(f, ".{k}")?,
                Segment::Index(n) => write!(f, "[{n}]")?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(json: serde_json::Value) -> PropertyMap {
        match serde_json::from_value(json).unwrap() {
            Value::Object(m) => m,
            other => panic!("not an object: {other:?}"),
        }
    }

    #[test]
    fn parses_keys_indices_and_quoted_keys() {
        for (text, shown) in [
            ("tags", "tags"),
            ("tags.env", "tags.env"),
            ("rules[0].port", "rules[0].port"),
            (
                "labels[\"app.kubernetes.io/name\"]",
                "labels[\"app.kubernetes.io/name\"]",
            ),
        ] {
            assert_eq!(PropertyPath::parse(text).unwrap().to_string(), shown);
        }
        for bad in ["", "[0]", "a..b", "a[", "a[x]", "a[\"b]", "a]b", ".a"] {
            assert!(PropertyPath::parse(bad).is_err(), "{bad} parsed");
        }
    }

    #[test]
    fn keep_old_restores_a_nested_value_or_its_absence() {
        let olds = map(serde_json::json!({"tags": {"env": "prod", "team": "a"}, "n": 1}));
        let mut news = map(serde_json::json!({"tags": {"env": "dev", "team": "b"}, "n": 2}));
        PropertyPath::parse("tags.env")
            .unwrap()
            .keep_old(&olds, &mut news);
        assert_eq!(
            news,
            map(serde_json::json!({"tags": {"env": "prod", "team": "b"}, "n": 2}))
        );
        let mut news = map(serde_json::json!({"tags": {"extra": "x"}}));
        PropertyPath::parse("tags.extra")
            .unwrap()
            .keep_old(&olds, &mut news);
        assert_eq!(news, map(serde_json::json!({"tags": {}})));
    }

    #[test]
    fn array_elements_are_kept_by_index() {
        let olds = map(serde_json::json!({"rules": [{"port": 80}, {"port": 443}]}));
        let mut news = map(serde_json::json!({"rules": [{"port": 81}, {"port": 8443}]}));
        PropertyPath::parse("rules[1].port")
            .unwrap()
            .keep_old(&olds, &mut news);
        assert_eq!(
            news,
            map(serde_json::json!({"rules": [{"port": 81}, {"port": 443}]}))
        );
        // Past the end of the new array: nothing to keep it in, nothing changes.
        let mut short = map(serde_json::json!({"rules": []}));
        PropertyPath::parse("rules[1].port")
            .unwrap()
            .keep_old(&olds, &mut short);
        assert_eq!(short, map(serde_json::json!({"rules": []})));
    }
}

//! `plinth config set|get --path a.b[0]`: a structured value under one config key, stored as
//! that key's JSON text (which a program reads and parses like any value).

use anyhow::{Result, bail};
use serde_json::Value;

/// One step of a path after its key: a field of an object or an index of an array.
#[derive(Debug, Clone, PartialEq)]
enum Step {
    Field(String),
    Index(usize),
}

/// A parsed `key.field[0].other` path.
#[derive(Debug, PartialEq)]
pub struct ConfigPath {
    /// The config key that holds the whole value (`key`, or `ns:key`).
    pub key: String,
    steps: Vec<Step>,
}

impl ConfigPath {
    pub fn parse(path: &str) -> Result<ConfigPath> {
        let bad = |why: &str| -> anyhow::Error {
            anyhow::anyhow!(
                "`{}` is not a config path ({why}): write `key.field[0].other`",
                plinth_engine::shown::escape_controls(path)
            )
        };
        let end = path.find(['.', '[']).unwrap_or(path.len());
        let key = &path[..end];
        if key.is_empty() {
            return Err(bad("it starts with no key"));
        }
        let mut steps = Vec::new();
        let mut rest = &path[end..];
        while !rest.is_empty() {
            if let Some(after) = rest.strip_prefix('.') {
                let end = after.find(['.', '[']).unwrap_or(after.len());
                if end == 0 {
                    return Err(bad("a `.` is followed by no name"));
                }
                steps.push(Step::Field(after[..end].to_owned()));
                rest = &after[end..];
            } else if let Some(after) = rest.strip_prefix('[') {
                let close = after.find(']').ok_or_else(|| bad("a `[` is not closed"))?;
                let index = after[..close]
                    .parse::<usize>()
                    .map_err(|_| bad("an index is not a number"))?;
                steps.push(Step::Index(index));
                rest = &after[close + 1..];
            } else {
                return Err(bad("expected `.` or `[`"));
            }
        }
        if steps.is_empty() {
            return Err(bad(
                "it names no field or index; set the key without --path",
            ));
        }
        Ok(ConfigPath {
            key: key.to_owned(),
            steps,
        })
    }

    /// `root` (the key's current value, if any) with `value` set at the path, objects and
    /// arrays made as needed; an index may name an element or the one after the last.
    pub fn set(&self, root: Option<Value>, value: Value) -> Result<Value> {
        let mut root = root.unwrap_or(Value::Null);
        let mut at = &mut root;
        for step in &self.steps {
            at = match step {
                Step::Field(name) => {
                    if at.is_null() {
                        *at = Value::Object(Default::default());
                    }
                    let Value::Object(map) = at else {
                        bail!(
                            "{}: `.{name}` names a field of something not an object",
                            self.key
                        );
                    };
                    map.entry(name.clone()).or_insert(Value::Null)
                }
                Step::Index(i) => {
                    if at.is_null() {
                        *at = Value::Array(Vec::new());
                    }
                    let Value::Array(items) = at else {
                        bail!("{}: `[{i}]` indexes something not an array", self.key);
                    };
                    if *i > items.len() {
                        bail!(
                            "{}: `[{i}]` is past the end of an array of {} (use `[{}]` to add one)",
                            self.key,
                            items.len(),
                            items.len()
                        );
                    }
                    if *i == items.len() {
                        items.push(Value::Null);
                    }
                    &mut items[*i]
                }
            };
        }
        *at = value;
        Ok(root)
    }

    /// The value at the path in `root`, if there is one.
    pub fn get<'a>(&self, root: &'a Value) -> Option<&'a Value> {
        self.steps.iter().try_fold(root, |at, step| match step {
            Step::Field(name) => at.get(name),
            Step::Index(i) => at.get(i),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths_parse_into_fields_and_indexes() {
        let path = ConfigPath::parse("db.hosts[1].name").unwrap();
        assert_eq!(path.key, "db");
        assert_eq!(
            path.steps,
            [
                Step::Field("hosts".into()),
                Step::Index(1),
                Step::Field("name".into())
            ]
        );
        assert_eq!(ConfigPath::parse("ns:k[0]").unwrap().key, "ns:k");
        for bad in ["", ".a", "a.", "a[", "a[x]", "a[0]x", "a..b", "a"] {
            assert!(ConfigPath::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn set_makes_objects_and_arrays_and_keeps_the_rest() {
        let path = ConfigPath::parse("a.b[0]").unwrap();
        let v = path.set(None, json!("x")).unwrap();
        assert_eq!(v, json!({"b": ["x"]}));
        let v = ConfigPath::parse("a.b[1]")
            .unwrap()
            .set(Some(v), json!("y"))
            .unwrap();
        let v = ConfigPath::parse("a.c")
            .unwrap()
            .set(Some(v), json!("z"))
            .unwrap();
        assert_eq!(v, json!({"b": ["x", "y"], "c": "z"}));
        assert_eq!(path.get(&v), Some(&json!("x")));
        assert_eq!(ConfigPath::parse("a.b[5]").unwrap().get(&v), None);
    }

    #[test]
    fn set_refuses_gaps_and_shape_changes() {
        let v = json!({"b": ["x"]});
        let err = ConfigPath::parse("a.b[3]")
            .unwrap()
            .set(Some(v.clone()), json!(1));
        assert!(err.unwrap_err().to_string().contains("past the end"));
        let err = ConfigPath::parse("a.b.c").unwrap().set(Some(v), json!(1));
        assert!(err.unwrap_err().to_string().contains("not an object"));
    }
}

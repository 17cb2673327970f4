//! Reading a journal entry. An entry is a map tagged by its `entry` key, which plinth always
//! writes first: the variant's fields are then read straight from the rest of the map. serde's
//! derived reading of a tagged enum would first copy every entry whole into a buffer of its own,
//! to look for the tag anywhere in it, which costs more than the reading itself. A map whose tag
//! comes later (an entry edited by hand) is still read, through a buffer.
//!
//! What is accepted is what the derived reading accepts: the same field names and defaults,
//! unknown fields ignored (a second `entry` key after the first too), a sequence of the tag and
//! the fields in order. Errors are serde's own (unknown variant, missing field, wrong type), and
//! name the field at fault when read with a path tracker, which the buffered reading could not.

use std::fmt;

use serde::Deserialize;
use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{
    self, DeserializeSeed, Deserializer, IntoDeserializer, MapAccess, SeqAccess, Visitor,
};

use super::entry::JournalEntry;

/// The key that names an entry's variant.
const TAG: &str = "entry";

/// The variant an entry's tag names.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum Tag {
    Begin,
    Created,
    Updated,
    Deleted,
    Failed,
    Same,
    ComponentOutputs,
    Forgotten,
    ResolvePending,
}

/// Each variant's fields, read as a struct of its own (named as the variant, which errors say).
mod fields {
    use serde::Deserialize;

    use crate::resource::ResourceState;
    use crate::snapshot::PendingKind;
    use crate::urn::Urn;
    use crate::value::PropertyMap;

    #[derive(Deserialize)]
    pub struct Begin {
        pub seq: u64,
        pub kind: PendingKind,
        pub resource: ResourceState,
        #[serde(default)]
        pub old: Option<usize>,
    }

    #[derive(Deserialize)]
    pub struct Created {
        pub seq: u64,
        pub resource: ResourceState,
        #[serde(default)]
        pub replaces: Option<usize>,
    }

    #[derive(Deserialize)]
    pub struct Updated {
        pub seq: u64,
        pub old: usize,
        pub resource: ResourceState,
    }

    #[derive(Deserialize)]
    pub struct Deleted {
        #[serde(default)]
        pub seq: Option<u64>,
        pub old: usize,
    }

    #[derive(Deserialize)]
    pub struct Failed {
        pub seq: u64,
    }

    #[derive(Deserialize)]
    pub struct Same {
        pub old: usize,
        #[serde(default)]
        pub resource: Option<ResourceState>,
    }

    #[derive(Deserialize)]
    pub struct ComponentOutputs {
        pub urn: Urn,
        pub outputs: PropertyMap,
    }

    #[derive(Deserialize)]
    pub struct Forgotten {
        pub old: usize,
    }

    #[derive(Deserialize)]
    pub struct ResolvePending {
        pub kind: PendingKind,
        pub urn: Urn,
    }
}

/// The entry of variant `tag` whose fields `fields` holds.
fn variant<'de, D: Deserializer<'de>>(tag: Tag, fields: D) -> Result<JournalEntry, D::Error> {
    Ok(match tag {
        Tag::Begin => {
            let fields::Begin {
                seq,
                kind,
                resource,
                old,
            } = Deserialize::deserialize(fields)?;
            JournalEntry::Begin {
                seq,
                kind,
                resource,
                old,
            }
        }
        Tag::Created => {
            let fields::Created {
                seq,
                resource,
                replaces,
            } = Deserialize::deserialize(fields)?;
            JournalEntry::Created {
                seq,
                resource,
                replaces,
            }
        }
        Tag::Updated => {
            let fields::Updated { seq, old, resource } = Deserialize::deserialize(fields)?;
            JournalEntry::Updated { seq, old, resource }
        }
        Tag::Deleted => {
            let fields::Deleted { seq, old } = Deserialize::deserialize(fields)?;
            JournalEntry::Deleted { seq, old }
        }
        Tag::Failed => {
            let fields::Failed { seq } = Deserialize::deserialize(fields)?;
            JournalEntry::Failed { seq }
        }
        Tag::Same => {
            let fields::Same { old, resource } = Deserialize::deserialize(fields)?;
            JournalEntry::Same { old, resource }
        }
        Tag::ComponentOutputs => {
            let fields::ComponentOutputs { urn, outputs } = Deserialize::deserialize(fields)?;
            JournalEntry::ComponentOutputs { urn, outputs }
        }
        Tag::Forgotten => {
            let fields::Forgotten { old } = Deserialize::deserialize(fields)?;
            JournalEntry::Forgotten { old }
        }
        Tag::ResolvePending => {
            let fields::ResolvePending { kind, urn } = Deserialize::deserialize(fields)?;
            JournalEntry::ResolvePending { kind, urn }
        }
    })
}

impl<'de> Deserialize<'de> for JournalEntry {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(EntryVisitor)
    }
}

struct EntryVisitor;

impl<'de> Visitor<'de> for EntryVisitor {
    type Value = JournalEntry;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a journal entry (a map with an `entry` key)")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<JournalEntry, A::Error> {
        match map.next_key_seed(KeySeed)? {
            Some(Key::Tag) => {
                let tag = map.next_value_seed(TagSeed)?;
                variant(tag, MapAccessDeserializer::new(map))
            }
            Some(Key::Other(first)) => buffered(first, map),
            None => Err(de::Error::missing_field(TAG)),
        }
    }

    /// The tag followed by the fields in order, as serde's derived reading also accepts.
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<JournalEntry, A::Error> {
        let tag = (seq.next_element_seed(TagSeed)?).ok_or_else(|| de::Error::missing_field(TAG))?;
        variant(tag, SeqAccessDeserializer::new(seq))
    }
}

/// Reads an entry whose first key, `first`, is not the tag: the map is buffered until its end,
/// where the tag may be.
fn buffered<'de, A: MapAccess<'de>>(first: String, mut map: A) -> Result<JournalEntry, A::Error> {
    let mut fields = serde_json::Map::new();
    fields.insert(first, map.next_value()?);
    let mut tag = None;
    while let Some(key) = map.next_key_seed(KeySeed)? {
        match key {
            Key::Tag if tag.is_some() => return Err(de::Error::duplicate_field(TAG)),
            Key::Tag => tag = Some(map.next_value_seed(TagSeed)?),
            Key::Other(key) => {
                fields.insert(key, map.next_value()?);
            }
        }
    }
    let tag = tag.ok_or_else(|| de::Error::missing_field(TAG))?;
    variant(tag, serde_json::Value::Object(fields)).map_err(de::Error::custom)
}

/// Reads a tag from whatever value the map holds, so that a tag of the wrong type is reported
/// as such (serde_json reports only "expected value" when asked for an identifier).
struct TagSeed;

impl<'de> DeserializeSeed<'de> for TagSeed {
    type Value = Tag;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Tag, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for TagSeed {
    type Value = Tag;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("variant identifier")
    }

    fn visit_str<E: de::Error>(self, tag: &str) -> Result<Tag, E> {
        Tag::deserialize(tag.into_deserializer())
    }

    /// A variant's index, as serde's derived reading accepts.
    fn visit_u64<E: de::Error>(self, index: u64) -> Result<Tag, E> {
        Tag::deserialize(index.into_deserializer())
    }
}

/// A key of an entry's map: the tag, or another (kept only when the tag is not first).
enum Key {
    Tag,
    Other(String),
}

struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Key;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Key, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed {
    type Value = Key;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a field name")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<Key, E> {
        Ok(if key == TAG {
            Key::Tag
        } else {
            Key::Other(key.to_owned())
        })
    }

    fn visit_string<E: de::Error>(self, key: String) -> Result<Key, E> {
        Ok(if key == TAG {
            Key::Tag
        } else {
            Key::Other(key)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::{ProviderRef, ResourceState};
    use crate::snapshot::PendingKind;
    use crate::snapshot::tests::{state, urn};
    use crate::value::{PropertyMap, Value};

    fn full_state() -> ResourceState {
        let mut s = state("b", &["a"]);
        s.inputs = [
            ("n".to_owned(), Value::Integer(3)),
            ("pw".to_owned(), Value::Secret(Box::new("x".into()))),
        ]
        .into();
        s.outputs = [("u".to_owned(), Value::Unknown)].into();
        s.parent = Some(urn("a"));
        s.protect = true;
        s.provider = Some(ProviderRef {
            urn: urn("a"),
            id: "p-1".into(),
        });
        s
    }

    fn every_variant() -> Vec<JournalEntry> {
        let outputs: PropertyMap = [("o".to_owned(), Value::from("v"))].into();
        vec![
            JournalEntry::Begin {
                seq: 1,
                kind: PendingKind::Creating,
                resource: full_state(),
                old: None,
            },
            JournalEntry::Begin {
                seq: 2,
                kind: PendingKind::Deleting,
                resource: state("a", &[]),
                old: Some(4),
            },
            JournalEntry::Created {
                seq: 1,
                resource: full_state(),
                replaces: Some(2),
            },
            JournalEntry::Created {
                seq: 1,
                resource: state("a", &[]),
                replaces: None,
            },
            JournalEntry::Updated {
                seq: 3,
                old: 0,
                resource: full_state(),
            },
            JournalEntry::Deleted { seq: None, old: 1 },
            JournalEntry::Deleted {
                seq: Some(9),
                old: 1,
            },
            JournalEntry::Failed { seq: 5 },
            JournalEntry::Same {
                old: 2,
                resource: None,
            },
            JournalEntry::Same {
                old: 2,
                resource: Some(full_state()),
            },
            JournalEntry::ComponentOutputs {
                urn: urn("a"),
                outputs,
            },
            JournalEntry::Forgotten { old: 7 },
            JournalEntry::ResolvePending {
                kind: PendingKind::Updating,
                urn: urn("b"),
            },
        ]
    }

    fn parse(json: &str) -> Result<JournalEntry, String> {
        serde_json::from_str(json).map_err(|e| e.to_string())
    }

    /// `entry`'s JSON with its tag moved from first to last.
    fn tag_last(entry: &JournalEntry) -> String {
        let json = serde_json::to_string(entry).unwrap();
        let (tag, rest) = json[1..].split_once(',').unwrap();
        assert!(tag.starts_with("\"entry\":"), "{json}");
        format!("{{{},{tag}}}", rest.strip_suffix('}').unwrap())
    }

    #[test]
    fn every_variant_round_trips_with_its_tag_first_or_last() {
        for entry in every_variant() {
            let json = serde_json::to_string(&entry).unwrap();
            assert!(json.starts_with("{\"entry\":"), "{json}");
            assert_eq!(parse(&json).unwrap(), entry, "{json}");
            let last = tag_last(&entry);
            assert_eq!(parse(&last).unwrap(), entry, "{last}");
            // Read from a JSON tree too, as entries holding secrets are.
            let tree: serde_json::Value = serde_json::from_str(&last).unwrap();
            assert_eq!(JournalEntry::deserialize(&tree).unwrap(), entry);
        }
    }

    #[test]
    fn the_tag_in_the_middle_is_found() {
        let json = r#"{"seq":4,"entry":"failed","note":1}"#;
        assert_eq!(parse(json).unwrap(), JournalEntry::Failed { seq: 4 });
    }

    #[test]
    fn unknown_fields_are_ignored_and_defaults_apply() {
        let json = r#"{"entry":"deleted","extra":{"deep":[1,{"x":null}]},"old":3,"more":"y"}"#;
        assert_eq!(
            parse(json).unwrap(),
            JournalEntry::Deleted { seq: None, old: 3 }
        );
        let json = r#"{"x":1,"old":3,"entry":"same"}"#;
        assert_eq!(
            parse(json).unwrap(),
            JournalEntry::Same {
                old: 3,
                resource: None
            }
        );
    }

    #[test]
    fn an_unknown_tag_is_named_with_those_known() {
        for json in [r#"{"entry":"made","seq":1}"#, r#"{"seq":1,"entry":"made"}"#] {
            let err = parse(json).unwrap_err();
            assert!(err.starts_with("unknown variant `made`, expected one of `begin`, `created`"));
            assert!(err.contains("`resolve-pending`"), "{err}");
        }
    }

    #[test]
    fn a_missing_tag_or_field_is_named() {
        for json in [r#"{"seq":1}"#, "{}"] {
            let err = parse(json).unwrap_err();
            assert!(err.starts_with("missing field `entry`"), "{err}");
        }
        for json in [
            r#"{"entry":"updated","seq":1,"old":0}"#,
            r#"{"seq":1,"old":0,"entry":"updated"}"#,
        ] {
            let err = parse(json).unwrap_err();
            assert!(err.starts_with("missing field `resource`"), "{err}");
        }
        let err = parse(r#"{"seq":1,"entry":"failed","entry":"failed"}"#).unwrap_err();
        assert!(err.starts_with("duplicate field `entry`"), "{err}");
    }

    #[test]
    fn a_value_of_the_wrong_type_is_named() {
        let err = parse(r#"{"entry":"failed","seq":"one"}"#).unwrap_err();
        assert!(
            err.starts_with("invalid type: string \"one\", expected u64"),
            "{err}"
        );
        let err = parse(r#"{"seq":"one","entry":"failed"}"#).unwrap_err();
        assert!(
            err.starts_with("invalid type: string \"one\", expected u64"),
            "{err}"
        );
        let err = parse(r#"{"entry":true}"#).unwrap_err();
        assert!(err.starts_with("invalid type: boolean `true`"), "{err}");
        let err = parse(r#"{"entry":"begin","seq":1,"kind":"making","resource":{}}"#).unwrap_err();
        assert!(err.starts_with("unknown variant `making`"), "{err}");
        let err = parse(r#""begin""#).unwrap_err();
        assert!(err.starts_with("invalid type: string \"begin\", expected a journal entry"));
    }

    #[test]
    fn the_fields_may_follow_the_tag_in_a_sequence() {
        let entry = parse(r#"["deleted", 4, 2]"#).unwrap();
        assert_eq!(
            entry,
            JournalEntry::Deleted {
                seq: Some(4),
                old: 2
            }
        );
    }
}

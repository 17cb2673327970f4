//! [`SortedMap`]: names to values, kept as one vector sorted by name. The engine's
//! [`PropertyMap`](super::PropertyMap) is a `SortedMap` of property values.
//!
//! A resource holds two or three small maps (inputs, outputs, nested objects), and a stack of
//! 100,000 resources holds hundreds of thousands of them. A `BTreeMap` gives each, however
//! small, a node of eleven slots (632 bytes here); a sorted vector holds what it has, in one
//! allocation that is copied, compared and walked in order. Lookups are a binary search;
//! building from many entries sorts once (`collect`, `extend`, deserializing), so a map with keys
//! in any order, even a hostile guest's, costs O(n log n). Only [`SortedMap::insert`] of a
//! key below the last moves the entries after it: the engine's own inserts are few per map.

use std::borrow::Borrow;
use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, Serializer};

/// A map of names to values, ordered by name.
#[derive(Clone, PartialEq)]
pub struct SortedMap<V> {
    /// Sorted by key, each key once.
    entries: Vec<(String, V)>,
}

impl<V> Default for SortedMap<V> {
    fn default() -> Self {
        SortedMap::new()
    }
}

/// Borrowed entries, as `BTreeMap::iter` yields them.
pub type Iter<'a, V> =
    std::iter::Map<std::slice::Iter<'a, (String, V)>, fn(&'a (String, V)) -> (&'a String, &'a V)>;
/// Entries with their values mutable.
pub type IterMut<'a, V> = std::iter::Map<
    std::slice::IterMut<'a, (String, V)>,
    fn(&'a mut (String, V)) -> (&'a String, &'a mut V),
>;
/// Owned entries, in key order.
pub type IntoIter<V> = std::vec::IntoIter<(String, V)>;

impl<V> SortedMap<V> {
    pub const fn new() -> SortedMap<V> {
        SortedMap {
            entries: Vec::new(),
        }
    }

    pub fn with_capacity(capacity: usize) -> SortedMap<V> {
        SortedMap {
            entries: Vec::with_capacity(capacity),
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn position<Q>(&self, key: &Q) -> Result<usize, usize>
    where
        String: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.entries.binary_search_by(|(k, _)| k.borrow().cmp(key))
    }

    pub fn get<Q>(&self, key: &Q) -> Option<&V>
    where
        String: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        let i = self.position(key).ok()?;
        Some(&self.entries[i].1)
    }

    pub fn get_mut<Q>(&mut self, key: &Q) -> Option<&mut V>
    where
        String: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        let i = self.position(key).ok()?;
        Some(&mut self.entries[i].1)
    }

    pub fn contains_key<Q>(&self, key: &Q) -> bool
    where
        String: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.position(key).is_ok()
    }

    /// Sets `key` to `value`, returning the value it replaced. Appending (a key above every
    /// other) is O(1); a key below the last moves the entries after it.
    pub fn insert(&mut self, key: String, value: V) -> Option<V> {
        if self.entries.last().is_none_or(|(last, _)| *last < key) {
            self.entries.push((key, value));
            return None;
        }
        match self.position(key.as_str()) {
            Ok(i) => Some(std::mem::replace(&mut self.entries[i].1, value)),
            Err(i) => {
                self.entries.insert(i, (key, value));
                None
            }
        }
    }

    pub fn remove<Q>(&mut self, key: &Q) -> Option<V>
    where
        String: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        let i = self.position(key).ok()?;
        Some(self.entries.remove(i).1)
    }

    pub fn retain(&mut self, mut keep: impl FnMut(&String, &mut V) -> bool) {
        self.entries.retain_mut(|(k, v)| keep(k, v));
    }

    pub fn clear(&mut self) {
        self.entries.clear();
    }

    /// The entry of `key`, to read, fill or change in place.
    pub fn entry(&mut self, key: String) -> Entry<'_, V> {
        match self.position(key.as_str()) {
            Ok(index) => Entry::Occupied(OccupiedEntry { map: self, index }),
            Err(index) => Entry::Vacant(VacantEntry {
                map: self,
                index,
                key,
            }),
        }
    }

    pub fn first_key_value(&self) -> Option<(&String, &V)> {
        self.entries.first().map(|(k, v)| (k, v))
    }

    pub fn iter(&self) -> Iter<'_, V> {
        self.entries.iter().map(|(k, v)| (k, v))
    }

    pub fn iter_mut(&mut self) -> IterMut<'_, V> {
        self.entries.iter_mut().map(|(k, v)| (&*k, v))
    }

    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &String> + ExactSizeIterator {
        self.entries.iter().map(|(k, _)| k)
    }

    pub fn values(&self) -> impl DoubleEndedIterator<Item = &V> + ExactSizeIterator {
        self.entries.iter().map(|(_, v)| v)
    }

    pub fn values_mut(&mut self) -> impl DoubleEndedIterator<Item = &mut V> + ExactSizeIterator {
        self.entries.iter_mut().map(|(_, v)| v)
    }

    pub fn into_values(self) -> impl DoubleEndedIterator<Item = V> + ExactSizeIterator {
        self.entries.into_iter().map(|(_, v)| v)
    }

    /// A map of `entries`, whose keys must be unique: the error is a key that came twice.
    pub fn from_unique(mut entries: Vec<(String, V)>) -> Result<SortedMap<V>, String> {
        entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        if let Some(twice) = entries.windows(2).position(|w| w[0].0 == w[1].0) {
            return Err(std::mem::take(&mut entries[twice].0));
        }
        Ok(SortedMap { entries })
    }

    /// Sorts `entries` by key, the last of equal keys winning (as inserting them in turn would).
    fn from_unsorted(mut entries: Vec<(String, V)>) -> SortedMap<V> {
        if !entries.is_sorted_by(|a, b| a.0 < b.0) {
            // Stable: of equal keys, the later stays later, and `dedup_by` keeps its value.
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            entries.dedup_by(|later, kept| {
                let same = later.0 == kept.0;
                if same {
                    std::mem::swap(&mut later.1, &mut kept.1);
                }
                same
            });
        }
        SortedMap { entries }
    }
}

/// A place in a map, as `BTreeMap::entry` gives.
pub enum Entry<'a, V> {
    Occupied(OccupiedEntry<'a, V>),
    Vacant(VacantEntry<'a, V>),
}

pub struct OccupiedEntry<'a, V> {
    map: &'a mut SortedMap<V>,
    index: usize,
}

pub struct VacantEntry<'a, V> {
    map: &'a mut SortedMap<V>,
    index: usize,
    key: String,
}

impl<'a, V> Entry<'a, V> {
    pub fn or_insert_with(self, make: impl FnOnce() -> V) -> &'a mut V {
        match self {
            Entry::Occupied(entry) => entry.into_mut(),
            Entry::Vacant(entry) => entry.insert(make()),
        }
    }

    pub fn or_insert(self, value: V) -> &'a mut V {
        self.or_insert_with(|| value)
    }

    pub fn or_default(self) -> &'a mut V
    where
        V: Default,
    {
        self.or_insert_with(V::default)
    }

    pub fn key(&self) -> &str {
        match self {
            Entry::Occupied(entry) => entry.key(),
            Entry::Vacant(entry) => &entry.key,
        }
    }
}

impl<'a, V> OccupiedEntry<'a, V> {
    pub fn key(&self) -> &str {
        &self.map.entries[self.index].0
    }

    pub fn get(&self) -> &V {
        &self.map.entries[self.index].1
    }

    pub fn get_mut(&mut self) -> &mut V {
        &mut self.map.entries[self.index].1
    }

    pub fn into_mut(self) -> &'a mut V {
        &mut self.map.entries[self.index].1
    }

    pub fn insert(&mut self, value: V) -> V {
        std::mem::replace(self.get_mut(), value)
    }

    pub fn remove(self) -> V {
        self.map.entries.remove(self.index).1
    }
}

impl<'a, V> VacantEntry<'a, V> {
    pub fn key(&self) -> &str {
        &self.key
    }

    pub fn insert(self, value: V) -> &'a mut V {
        self.map.entries.insert(self.index, (self.key, value));
        &mut self.map.entries[self.index].1
    }
}

impl<V: fmt::Debug> fmt::Debug for SortedMap<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<V, Q> std::ops::Index<&Q> for SortedMap<V>
where
    String: Borrow<Q>,
    Q: Ord + ?Sized,
{
    type Output = V;

    fn index(&self, key: &Q) -> &V {
        self.get(key).expect("no entry found for key")
    }
}

impl<V> FromIterator<(String, V)> for SortedMap<V> {
    fn from_iter<I: IntoIterator<Item = (String, V)>>(items: I) -> SortedMap<V> {
        SortedMap::from_unsorted(items.into_iter().collect())
    }
}

impl<V, const N: usize> From<[(String, V); N]> for SortedMap<V> {
    fn from(items: [(String, V); N]) -> SortedMap<V> {
        SortedMap::from_unsorted(items.into())
    }
}

impl<V> Extend<(String, V)> for SortedMap<V> {
    fn extend<I: IntoIterator<Item = (String, V)>>(&mut self, items: I) {
        let mut entries = std::mem::take(&mut self.entries);
        let sorted = entries.len();
        entries.extend(items);
        // Only what came after the sorted prefix can be out of order.
        if !entries[sorted.saturating_sub(1)..].is_sorted_by(|a, b| a.0 < b.0) {
            *self = SortedMap::from_unsorted(entries);
        } else {
            self.entries = entries;
        }
    }
}

impl<V> IntoIterator for SortedMap<V> {
    type Item = (String, V);
    type IntoIter = IntoIter<V>;

    fn into_iter(self) -> IntoIter<V> {
        self.entries.into_iter()
    }
}

impl<'a, V> IntoIterator for &'a SortedMap<V> {
    type Item = (&'a String, &'a V);
    type IntoIter = Iter<'a, V>;

    fn into_iter(self) -> Iter<'a, V> {
        self.iter()
    }
}

impl<'a, V> IntoIterator for &'a mut SortedMap<V> {
    type Item = (&'a String, &'a mut V);
    type IntoIter = IterMut<'a, V>;

    fn into_iter(self) -> IterMut<'a, V> {
        self.iter_mut()
    }
}

impl<V: Serialize> Serialize for SortedMap<V> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.len()))?;
        for (k, v) in &self.entries {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

impl<'de, V: Deserialize<'de>> Deserialize<'de> for SortedMap<V> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(MapVisitor(std::marker::PhantomData))
    }
}

struct MapVisitor<V>(std::marker::PhantomData<V>);

impl<'de, V: Deserialize<'de>> Visitor<'de> for MapVisitor<V> {
    type Value = SortedMap<V>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a map of property names to values")
    }

    fn visit_map<A: MapAccess<'de>>(self, access: A) -> Result<SortedMap<V>, A::Error> {
        read_entries(access)
    }
}

/// Reads a serialized map's entries, sorting them once at the end.
pub(super) fn read_entries<'de, A: MapAccess<'de>, V: Deserialize<'de>>(
    mut access: A,
) -> Result<SortedMap<V>, A::Error> {
    // Bounded: the size hint is the input's claim, not a promise.
    let mut entries = Vec::with_capacity(access.size_hint().unwrap_or(0).min(64));
    while let Some(entry) = access.next_entry::<String, V>()? {
        entries.push(entry);
    }
    Ok(SortedMap::from_unsorted(entries))
}

#[cfg(test)]
mod tests {
    use super::Entry;
    use crate::value::{PropertyMap, Value};

    fn keys(map: &PropertyMap) -> Vec<&str> {
        map.keys().map(String::as_str).collect()
    }

    #[test]
    fn entries_stay_sorted_and_unique_however_they_come() {
        let mut map = PropertyMap::new();
        for key in ["m", "b", "z", "a", "m"] {
            map.insert(key.to_owned(), Value::from(key));
        }
        assert_eq!(keys(&map), ["a", "b", "m", "z"]);
        map.extend([("c".to_owned(), Value::Null), ("a".to_owned(), true.into())]);
        assert_eq!(keys(&map), ["a", "b", "c", "m", "z"]);
        assert_eq!(
            map.get("a"),
            Some(&Value::Bool(true)),
            "the later value wins"
        );
        assert_eq!(map.remove("m"), Some(Value::from("m")));
        assert!(!map.contains_key("m"));
    }

    #[test]
    fn unique_entries_make_a_map_and_a_repeated_key_is_named() {
        let entry = |k: &str| (k.to_owned(), Value::Null);
        let map = PropertyMap::from_unique(vec![entry("b"), entry("a")]).unwrap();
        assert_eq!(keys(&map), ["a", "b"]);
        let twice = PropertyMap::from_unique(vec![entry("b"), entry("a"), entry("b")]);
        assert_eq!(twice, Err("b".to_owned()));
    }

    #[test]
    fn collecting_keeps_the_last_of_equal_keys_as_a_btreemap_does() {
        let items = [("k", 1), ("a", 2), ("k", 3), ("k", 4), ("a", 5)]
            .map(|(k, n)| (k.to_owned(), Value::Integer(n)));
        let ours: PropertyMap = items.clone().into_iter().collect();
        let theirs: std::collections::BTreeMap<String, Value> = items.into_iter().collect();
        assert_eq!(
            ours.iter().collect::<Vec<_>>(),
            theirs.iter().collect::<Vec<_>>()
        );
    }

    #[test]
    fn a_json_object_with_keys_in_any_order_and_repeated_reads_as_a_btreemap_does() {
        let json = r#"{"z": 1, "a": {"y": 2, "b": 3}, "z": 4}"#;
        let ours: PropertyMap = serde_json::from_str(json).unwrap();
        let theirs: std::collections::BTreeMap<String, Value> = serde_json::from_str(json).unwrap();
        assert_eq!(
            ours.iter().collect::<Vec<_>>(),
            theirs.iter().collect::<Vec<_>>()
        );
        assert_eq!(
            serde_json::to_string(&ours).unwrap(),
            r#"{"a":{"b":3,"y":2},"z":4}"#
        );
    }

    #[test]
    fn entries_are_found_filled_and_changed_in_place() {
        let mut map = PropertyMap::from([("b".to_owned(), Value::Integer(1))]);
        *map.entry("b".to_owned()).or_insert(Value::Null) = Value::Integer(2);
        map.entry("a".to_owned())
            .or_insert_with(|| Value::Integer(3));
        if let Entry::Occupied(mut entry) = map.entry("a".to_owned()) {
            entry.insert(Value::Integer(4));
        }
        assert_eq!(keys(&map), ["a", "b"]);
        assert_eq!(map["a"], Value::Integer(4));
        assert_eq!(map["b"], Value::Integer(2));
    }
}

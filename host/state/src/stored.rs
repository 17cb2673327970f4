//! How a checkpoint of schema 3 stores its snapshot: each resource with the fields the engine
//! records, less what is implied.
//!
//! - `parent` is left out when it is the stack's root, which parents most resources: the first
//!   stack root (`plinth:plinth:Stack` without a parent) above it in the list. Below the root, a
//!   resource with no parent at all says `"parent": null`.
//! - `inputs` and `outputs` are left out when empty.
//!
//! Every other field is written as the engine's own serialization writes it, so a checkpoint
//! stays a file anyone can read and diff, one resource per line.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use plinth_engine::program::CustomTimeouts;
use plinth_engine::resource::{ProviderRef, ResourceState};
use plinth_engine::snapshot::{PendingKind, PendingOperation, Snapshot};
use plinth_engine::urn::{Urn, is_stack_type};
use plinth_engine::value::{PropertyMap, Value};
use rayon::prelude::*;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;

use crate::par::{all_some, collect_ok, collect_some};
use crate::secrets::{
    CodecError, Crypter, Kept, KeptText, PlainText, SealedMemory, SealedText, Slot, open_trees,
    seal_trees, secret_paths,
};

/// The first schema that stores snapshots this way.
pub(crate) const STORED_SINCE: u32 = 3;

/// Serializes `snapshot` as schema 3 stores it (for `#[serde(serialize_with)]`).
pub(crate) fn serialize<S: Serializer>(
    snapshot: &&Snapshot,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    StoredSnapshotRef(snapshot).serialize(serializer)
}

/// The parent schema 3 implies for the resources below `state`, if `state` is the first root.
fn root_after<'a>(root: Option<&'a Urn>, state: &'a ResourceState) -> Option<&'a Urn> {
    root.or_else(|| (state.parent.is_none() && is_stack_type(&state.ty)).then_some(&state.urn))
}

/// A snapshot as schema 3 writes it.
pub(crate) struct StoredSnapshotRef<'a>(pub &'a Snapshot);

impl Serialize for StoredSnapshotRef<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        stored_shape(self.0).serialize(serializer)
    }
}

/// The resources of `snapshot` as schema 3 writes them.
fn stored_shape(snapshot: &Snapshot) -> Shape<StoredRef<'_>> {
    let Snapshot {
        resources,
        pending_operations,
    } = snapshot;
    let mut root = None;
    let resources = (resources.iter())
        .map(|state| {
            let stored = StoredRef::of(state, root);
            root = root_after(root, state);
            stored
        })
        .collect();
    Shape {
        resources,
        pending_operations: (pending_operations.iter())
            .map(|PendingOperation { kind, resource }| Pending {
                kind: *kind,
                resource: StoredRef::of(resource, root),
            })
            .collect(),
    }
}

/// A snapshot as schema 3 writes it ([`StoredSnapshotRef`]), each resource already written as
/// JSON with its secrets sealed, all of them in parallel: a state's resources are most of what a
/// checkpoint writes. Serialized only as JSON (a resource is a [`RawValue`]).
pub(crate) struct WrittenSnapshot(Shape<Written>);

/// A resource's text as a checkpoint writes it: its own, or its sealed text as kept since it
/// was last read or written (shared with the crypter's memory, not copied).
pub(crate) enum Written {
    Own(Box<RawValue>),
    Kept(Arc<RawValue>),
}

impl std::ops::Deref for Written {
    type Target = RawValue;

    fn deref(&self) -> &RawValue {
        match self {
            Written::Own(raw) => raw,
            Written::Kept(raw) => raw,
        }
    }
}

impl Serialize for Written {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        (**self).serialize(serializer)
    }
}

impl WrittenSnapshot {
    /// Only the resources holding a secret are built as trees to seal (all of them in one
    /// batch, as a secrets service wants): the document as a whole never is.
    pub fn of(snapshot: &Snapshot, crypter: &dyn Crypter) -> Result<WrittenSnapshot, CodecError> {
        let (all, kinds) = stored_shape(snapshot).flatten();
        let resources = match seal_in_place(&all, crypter)? {
            Some(resources) => resources,
            None => (seal_as_trees(&all, crypter)?.into_iter())
                .map(Written::Own)
                .collect(),
        };
        Ok(WrittenSnapshot(Shape::rebuild(resources, kinds)))
    }
}

impl WrittenSnapshot {
    /// `snapshot`, read by [`SealedSnapshot::carry`] as `carried`, written with each resource
    /// that holds sealed secrets copied as the file held it: what [`WrittenSnapshot::of`]
    /// writes of it with the ciphertexts carried through, at no cost per secret. `None` if a
    /// resource is not written back as it was read (a file another tool wrote, its keys in
    /// another order), or holds a secret in the clear (to seal): the ordinary write does those.
    pub fn carried(snapshot: &Snapshot, carried: Vec<Carried>) -> Option<WrittenSnapshot> {
        let (all, kinds) = stored_shape(snapshot).flatten();
        if all.len() != carried.len() {
            return None;
        }
        let resources = collect_some((all.par_iter().zip(carried)).map(|(resource, carried)| {
            match carried {
                Carried::Plain if resource.holds_secrets() => None,
                Carried::Plain => serde_json::value::to_raw_value(resource)
                    .ok()
                    .map(Written::Own),
                Carried::Sealed { text, standing } => {
                    let written = serde_json::to_string(resource).ok()?;
                    (written == standing).then_some(Written::Own(text))
                }
            }
        }))?;
        Some(WrittenSnapshot(Shape::rebuild(resources, kinds)))
    }
}

/// Writes `all` with their secrets sealed in their text, all in one batch, if every secret is
/// in the engine's own form ([`PlainText`]); `None` otherwise, for [`seal_as_trees`]. With a
/// crypter that remembers, a resource whose text is what it was when last read or written
/// is written with its sealed text of then, its secrets neither found nor sealed again.
fn seal_in_place(
    all: &[StoredRef],
    crypter: &dyn Crypter,
) -> Result<Option<Vec<Written>>, CodecError> {
    let memory = crypter.memory();
    let mut texts =
        collect_ok(all.par_iter().map(|resource| {
            match resource.holds_secrets() {
                true => serde_json::to_string(resource).map(Text::WithSecrets),
                false => serde_json::value::to_raw_value(resource)
                    .map(|raw| Text::Written(Written::Own(raw))),
            }
        }))?;
    let own = match memory {
        Some(memory) => write_unchanged(&mut texts, all, memory),
        None => Vec::new(),
    };
    let found = collect_some(
        (texts.par_iter().zip(all)).map(|(text, resource)| match text {
            Text::Written(_) => Some(None),
            Text::WithSecrets(text) => PlainText::find(text).map(|found| {
                // The places of the secrets only matter to a crypter that reuses ciphertexts
                // by place.
                let slots = match memory {
                    Some(_) => slots(resource, found.len()),
                    None => Vec::new(),
                };
                Some((found, slots))
            }),
        }),
    );
    let Some(found) = found else {
        return Ok(None);
    };
    let (found, slots): (Vec<Option<PlainText>>, Vec<Vec<Slot>>) = (found.into_iter())
        .map(|found| match found {
            Some((text, slots)) => (Some(text), slots),
            None => (None, Vec::new()),
        })
        .unzip();
    let plaintexts: Vec<String> = (found.iter().flatten())
        .flat_map(PlainText::plaintexts)
        .map(str::to_owned)
        .collect();
    let sealed = match (plaintexts.is_empty(), memory) {
        (true, _) => Vec::new(),
        (false, Some(memory)) => {
            memory.seal(slots.into_iter().flatten().collect(), plaintexts, crypter)?
        }
        (false, None) => crypter.seal_all(&plaintexts)?,
    };
    let mut rest = sealed.as_slice();
    let sealed: Vec<(&PlainText, &[String])> = (found.iter().flatten())
        .map(|text| {
            let (these, after) = rest.split_at(text.len());
            rest = after;
            (text, these)
        })
        .collect();
    let mut sealed_texts = collect_ok(
        (sealed.into_par_iter()).map(|(text, sealed)| RawValue::from_string(text.sealed(sealed))),
    )?
    .into_iter();
    drop(found);
    let mut kept = Vec::new();
    let written = (texts.into_iter().enumerate())
        .map(|(i, text)| match text {
            Text::Written(written) => written,
            Text::WithSecrets(clear) => {
                let sealed =
                    (sealed_texts.next()).expect("one sealed text per resource with secrets");
                let urn = all[i].urn.as_str();
                match memory.is_some() && own[i] {
                    true => {
                        let sealed: Arc<RawValue> = Arc::from(sealed);
                        let text = KeptText {
                            clear,
                            sealed: sealed.clone(),
                        };
                        kept.push((urn, Some(text)));
                        Written::Kept(sealed)
                    }
                    false => {
                        kept.push((urn, None));
                        Written::Own(sealed)
                    }
                }
            }
        })
        .collect();
    if let Some(memory) = memory {
        memory.keep_texts(kept);
    }
    Ok(Some(written))
}

/// Turns each of `texts` whose sealed text `memory` kept, its text in the clear unchanged since,
/// into that sealed text. Says of each resource whether its URN is the only one among those
/// holding secrets: only such a resource's sealed text is kept or written again (two resources
/// of one URN would be written with the same ciphertexts).
fn write_unchanged(texts: &mut [Text], all: &[StoredRef], memory: &SealedMemory) -> Vec<bool> {
    let own = only_ones((texts.iter().zip(all)).map(|(text, resource)| match text {
        Text::WithSecrets(_) => Some(resource.urn.as_str()),
        Text::Written(_) => None,
    }));
    let (at, asked): (Vec<usize>, Vec<(&str, &str)>) = (texts.iter().enumerate())
        .filter_map(|(i, text)| match text {
            Text::WithSecrets(clear) if own[i] => Some((i, (all[i].urn.as_str(), clear.as_str()))),
            _ => None,
        })
        .unzip();
    let unchanged = memory.unchanged_texts(&asked);
    for (i, sealed) in at.into_iter().zip(unchanged) {
        if let Some(sealed) = sealed {
            texts[i] = Text::Written(Written::Kept(sealed));
        }
    }
    own
}

/// Whether each of `urns` (`None`: not counted) is the only one of its value among them.
fn only_ones<'a>(urns: impl Iterator<Item = Option<&'a str>>) -> Vec<bool> {
    let urns: Vec<Option<&str>> = urns.collect();
    let mut counts: HashMap<&str, u32> = HashMap::new();
    for urn in urns.iter().flatten() {
        *counts.entry(urn).or_default() += 1;
    }
    (urns.iter())
        .map(|urn| urn.is_some_and(|urn| counts[urn] == 1))
        .collect()
}

/// The places of the `count` secrets of `resource`, as its text holds them: unknown (never
/// reused) should the walk of its values not find as many.
fn slots<'a>(resource: &StoredRef<'a>, count: usize) -> Vec<Slot<'a>> {
    places(
        resource.urn.as_str(),
        resource.inputs,
        resource.outputs,
        count,
    )
}

fn places<'a>(
    urn: &'a str,
    inputs: &PropertyMap,
    outputs: &PropertyMap,
    count: usize,
) -> Vec<Slot<'a>> {
    let paths = secret_paths(inputs, outputs);
    if paths.len() != count {
        return (0..count).map(|_| Slot { urn, path: None }).collect();
    }
    (paths.into_iter())
        .map(|path| Slot {
            urn,
            path: Some(path),
        })
        .collect()
}

/// A resource written as JSON: final, or with its secrets still in the clear.
enum Text {
    Written(Written),
    WithSecrets(String),
}

/// Writes `all`, building those holding a secret as trees to seal (all in one batch).
fn seal_as_trees(
    all: &[StoredRef],
    crypter: &dyn Crypter,
) -> Result<Vec<Box<RawValue>>, CodecError> {
    let mut writing = collect_ok(all.par_iter().map(Writing::start))?;
    seal_trees(writing.iter_mut().filter_map(Writing::tree), crypter)?;
    Ok(collect_ok(writing.into_par_iter().map(Writing::finish))?)
}

/// A resource being written: as JSON already, or as a tree whose secrets are to be sealed.
enum Writing {
    Written(Box<RawValue>),
    Sealing(serde_json::Value),
}

impl Writing {
    fn start(resource: &StoredRef) -> serde_json::Result<Writing> {
        Ok(if resource.holds_secrets() {
            Writing::Sealing(serde_json::to_value(resource)?)
        } else {
            Writing::Written(serde_json::value::to_raw_value(resource)?)
        })
    }

    fn tree(&mut self) -> Option<&mut serde_json::Value> {
        match self {
            Writing::Sealing(tree) => Some(tree),
            Writing::Written(_) => None,
        }
    }

    fn finish(self) -> serde_json::Result<Box<RawValue>> {
        match self {
            Writing::Written(raw) => Ok(raw),
            Writing::Sealing(tree) => serde_json::value::to_raw_value(&tree),
        }
    }
}

impl WrittenSnapshot {
    /// About how many bytes the resources take in a checkpoint file: their texts, each on a
    /// line of its own, indented (a pending operation's a little more, with its kind).
    pub fn written_len(&self) -> usize {
        let Shape {
            resources,
            pending_operations,
        } = &self.0;
        let line = |text: &Written| text.get().len() + LINE;
        (resources.iter().map(line).sum::<usize>())
            + (pending_operations.iter())
                .map(|p| line(&p.resource) + 32)
                .sum::<usize>()
    }
}

/// What a resource's line adds to its text: indentation, a comma, a newline.
const LINE: usize = 8;

impl Serialize for WrittenSnapshot {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

/// The fields of a snapshot, over either form of resource.
#[derive(Serialize, Deserialize)]
#[serde(bound(deserialize = "R: Deserialize<'de>"))]
struct Shape<R> {
    #[serde(default)]
    resources: Vec<R>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pending_operations: Vec<Pending<R>>,
}

impl<R> Shape<R> {
    /// Every resource, the pending operations' last, with the kinds of those operations: a
    /// snapshot's resources are read and written as one list.
    fn flatten(self) -> (Vec<R>, Vec<PendingKind>) {
        let kinds = self.pending_operations.iter().map(|p| p.kind).collect();
        let all = (self.resources.into_iter())
            .chain(self.pending_operations.into_iter().map(|p| p.resource))
            .collect();
        (all, kinds)
    }

    /// The shape [`flatten`](Self::flatten) made `all` and `kinds` of.
    fn rebuild(mut all: Vec<R>, kinds: Vec<PendingKind>) -> Shape<R> {
        let pending = all.split_off(all.len() - kinds.len());
        let pending_operations = (kinds.into_iter().zip(pending))
            .map(|(kind, resource)| Pending { kind, resource })
            .collect();
        Shape {
            resources: all,
            pending_operations,
        }
    }
}

#[derive(Serialize, Deserialize)]
struct Pending<R> {
    kind: PendingKind,
    resource: R,
}

/// A resource as schema 3 writes it: the fields of [`ResourceState`], in its order.
#[derive(Serialize)]
struct StoredRef<'a> {
    urn: &'a Urn,
    #[serde(rename = "type")]
    ty: &'a str,
    custom: bool,
    #[serde(skip_serializing_if = "str::is_empty")]
    id: &'a str,
    #[serde(skip_serializing_if = "PropertyMap::is_empty")]
    inputs: &'a PropertyMap,
    #[serde(skip_serializing_if = "PropertyMap::is_empty")]
    outputs: &'a PropertyMap,
    /// `None`: the implied root; `Some(None)`: no parent, written as `null`.
    #[serde(skip_serializing_if = "Option::is_none")]
    parent: Option<Option<&'a Urn>>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    dependencies: &'a [Urn],
    #[serde(skip_serializing_if = "is_false")]
    protect: bool,
    #[serde(skip_serializing_if = "is_false")]
    retain_on_delete: bool,
    #[serde(skip_serializing_if = "is_false")]
    delete: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    provider: Option<&'a ProviderRef>,
    #[serde(skip_serializing_if = "Option::is_none")]
    custom_timeouts: Option<&'a CustomTimeouts>,
}

fn is_false(b: &bool) -> bool {
    !b
}

impl<'a> StoredRef<'a> {
    /// Whether a secret is among the resource's properties (nothing else holds values).
    fn holds_secrets(&self) -> bool {
        (self.inputs.values().chain(self.outputs.values())).any(Value::contains_secrets)
    }

    fn of(state: &'a ResourceState, root: Option<&'a Urn>) -> StoredRef<'a> {
        // Every field named, so that a field the engine adds cannot be left out unnoticed.
        let ResourceState {
            urn,
            ty,
            custom,
            id,
            inputs,
            outputs,
            parent,
            dependencies,
            protect,
            retain_on_delete,
            delete,
            provider,
            custom_timeouts,
        } = state;
        let parent = parent.as_ref();
        StoredRef {
            urn,
            ty,
            custom: *custom,
            id,
            inputs,
            outputs,
            parent: (parent != root).then_some(parent),
            dependencies,
            protect: *protect,
            retain_on_delete: *retain_on_delete,
            delete: *delete,
            provider: provider.as_ref(),
            custom_timeouts: custom_timeouts.as_ref(),
        }
    }
}

/// A snapshot as schema 3 stores it, read back.
#[derive(Deserialize)]
#[serde(transparent)]
pub(crate) struct StoredSnapshot(Shape<Stored>);

impl StoredSnapshot {
    pub fn into_snapshot(self) -> Snapshot {
        let Shape {
            resources,
            pending_operations,
        } = self.0;
        let mut root: Option<Urn> = None;
        let mut urns = SharedUrns::with_capacity(resources.len());
        let mut states = Vec::with_capacity(resources.len());
        for stored in resources {
            let mut state = stored.into_state(root.as_ref());
            if root.is_none() {
                root = root_after(None, &state).cloned();
            }
            urns.share(&mut state);
            states.push(state);
        }
        let pending_operations = (pending_operations.into_iter())
            .map(|Pending { kind, resource }| {
                let mut resource = resource.into_state(root.as_ref());
                urns.share(&mut resource);
                PendingOperation { kind, resource }
            })
            .collect();
        Snapshot {
            resources: states,
            pending_operations,
        }
    }
}

/// The URNs of the states read so far, each held once. A state names its parent, dependencies
/// and provider by URNs of states above it, which the file repeats as text: sharing them saves
/// an allocation each (at 100,000 resources, two to three per resource).
struct SharedUrns(HashSet<Urn>);

impl SharedUrns {
    fn with_capacity(states: usize) -> SharedUrns {
        SharedUrns(HashSet::with_capacity(states))
    }

    /// Points the URNs `state` names at those of the states read before it, then adds its own.
    fn share(&mut self, state: &mut ResourceState) {
        let named = (state.parent.iter_mut())
            .chain(state.dependencies.iter_mut())
            .chain(state.provider.as_mut().map(|p| &mut p.urn));
        for urn in named {
            if let Some(shared) = self.0.get(urn) {
                *urn = shared.clone();
            }
        }
        self.0.insert(state.urn.clone());
    }
}

/// A snapshot as schema 3 stores it, each resource still JSON, borrowed from the file's bytes
/// (at 100,000 resources a copy of each one's text was 50 MB more to allocate and fill): only
/// the resources holding a sealed secret are parsed as trees to open (all of them in one
/// batch), the document as a whole never is; each resource is read on its own, in parallel.
#[derive(Deserialize)]
#[serde(transparent)]
pub(crate) struct SealedSnapshot<'a>(#[serde(borrow)] Shape<&'a RawValue>);

impl SealedSnapshot<'_> {
    pub fn open(self, crypter: &dyn Crypter) -> Result<StoredSnapshot, CodecError> {
        let (all, kinds) = self.0.flatten();
        let resources = match open_in_place(&all, crypter) {
            Some(resources) => resources,
            None => open_as_trees(&all, crypter)?,
        };
        Ok(StoredSnapshot(Shape::rebuild(resources, kinds)))
    }
}

/// A resource as [`SealedSnapshot::carry`] read it.
pub(crate) enum Carried {
    /// No sealed secret: written back the ordinary way.
    Plain,
    /// Its sealed secrets left unopened: its text as the file holds it, copied as it is, and
    /// that text with each secret standing as `null` ([`SealedText::standing`]), what was read
    /// and what writing the resource must give back.
    Sealed {
        text: Box<RawValue>,
        standing: String,
    },
}

impl SealedSnapshot<'_> {
    /// The snapshot with every sealed secret standing as a secret `null`, and each resource's
    /// text to copy it as it is ([`WrittenSnapshot::carried`]): for `stack export`, which opens
    /// no secret. `None` if a resource's secrets are not all in plinth's own form, or a
    /// resource does not read: the ordinary read says what is wrong and where.
    pub fn carry(self) -> Option<(StoredSnapshot, Vec<Carried>)> {
        let (all, kinds) = self.0.flatten();
        // Unzipped as they are read, a resource that does not read standing as `None`.
        let (resources, carried): (Vec<Option<Stored>>, Vec<Carried>) = (all.into_par_iter())
            .map(|text| {
                if !text.get().contains("\"ciphertext\"") {
                    return (serde_json::from_str(text.get()).ok(), Carried::Plain);
                }
                let Some(found) = SealedText::find(text.get()) else {
                    return (None, Carried::Plain);
                };
                let standing = found.standing();
                let stored = serde_json::from_str(&standing).ok();
                let text = text.to_owned();
                (stored, Carried::Sealed { text, standing })
            })
            .unzip();
        let resources = all_some(resources)?;
        Some((StoredSnapshot(Shape::rebuild(resources, kinds)), carried))
    }
}

/// Reads `all` with their secrets opened in their text, all in one batch, if every sealed secret
/// is in plinth's own form ([`SealedText`]) and everything reads; `None` otherwise, for
/// [`open_as_trees`] to read them or to say exactly what is wrong and where.
fn open_in_place(all: &[&RawValue], crypter: &dyn Crypter) -> Option<Vec<Stored>> {
    let found = collect_some(all.par_iter().map(
        |raw| match raw.get().contains("\"ciphertext\"") {
            true => SealedText::find(raw.get()).map(Some),
            false => Some(None),
        },
    ))?;
    let sealed: Vec<String> = (found.iter().flatten())
        .flat_map(SealedText::ciphertexts)
        .map(str::to_owned)
        .collect();
    let opened = match sealed.is_empty() {
        true => Vec::new(),
        false => crypter.open_all(&sealed).ok()?,
    };
    let mut rest = opened.as_slice();
    let plaintexts: Vec<&[String]> = (found.iter())
        .map(|text| {
            let (these, after) = rest.split_at(text.as_ref().map_or(0, SealedText::len));
            rest = after;
            these
        })
        .collect();
    let remembering = crypter.memory().is_some();
    // Unzipped as they are read, a resource that does not read standing as `None`.
    let (stored, clear): (Vec<Option<Stored>>, Vec<Option<String>>) =
        (all.par_iter().zip(&found).zip(&plaintexts))
            .map(|((raw, text), plaintexts)| {
                let Some(text) = text else {
                    return (serde_json::from_str(raw.get()).ok(), None);
                };
                let Some(opened) = text.opened(plaintexts) else {
                    return (None, None);
                };
                let stored = serde_json::from_str(&opened).ok();
                (stored, remembering.then_some(opened))
            })
            .unzip();
    let stored = all_some(stored)?;
    if let Some(memory) = crypter.memory() {
        remember_read(all, &stored, &found, clear, opened, sealed, memory);
    }
    Some(stored)
}

/// Remembers the ciphertexts of `found` (read from `all`, `stored`) at their places, and the
/// texts of the resources (`clear`, opened), for the checkpoint written next
/// ([`seal_in_place`]). A ciphertext the file holds twice is remembered nowhere, nor the text
/// of a resource holding one or whose URN is there twice: each is sealed afresh, so that no
/// ciphertext is written in two places, whatever the file held.
fn remember_read(
    all: &[&RawValue],
    stored: &[Stored],
    found: &[Option<SealedText>],
    clear: Vec<Option<String>>,
    opened: Vec<String>,
    sealed: Vec<String>,
    memory: &SealedMemory,
) {
    let mut seen = HashSet::with_capacity(sealed.len());
    let twice: HashSet<&str> = (sealed.iter())
        .filter(|ciphertext| !seen.insert(ciphertext.as_str()))
        .map(String::as_str)
        .collect();
    let own = only_ones(
        (stored.iter().zip(found)).map(|(stored, text)| text.as_ref().map(|_| stored.urn.as_str())),
    );
    let read: Vec<(Vec<Slot>, Kept)> = (found.par_iter().zip(clear).enumerate())
        .filter_map(|(i, (text, clear))| {
            let (text, stored) = (text.as_ref()?, &stored[i]);
            let urn = stored.urn.as_str();
            let mut slots = places(urn, &stored.inputs, &stored.outputs, text.len());
            let mut repeated = false;
            for (slot, ciphertext) in slots.iter_mut().zip(text.ciphertexts()) {
                if twice.contains(ciphertext) {
                    slot.path = None;
                    repeated = true;
                }
            }
            let text = (clear.filter(|_| own[i] && !repeated)).map(|clear| KeptText {
                clear,
                sealed: Arc::from(all[i].to_owned()),
            });
            Some((slots, (urn, text)))
        })
        .collect();
    let (slots, texts): (Vec<Vec<Slot>>, Vec<Kept>) = read.into_iter().unzip();
    memory.remember(slots.into_iter().flatten().collect(), opened, sealed);
    memory.keep_texts(texts);
}

/// Reads `all`, parsing those holding a sealed secret as trees to open (all in one batch).
fn open_as_trees(all: &[&RawValue], crypter: &dyn Crypter) -> Result<Vec<Stored>, CodecError> {
    let mut opening = collect_ok(all.par_iter().map(|raw| Opening::start(raw)))?;
    let mut trees: Vec<&mut serde_json::Value> =
        opening.iter_mut().filter_map(Opening::tree).collect();
    open_trees(&mut trees, crypter)?;
    Ok(collect_ok(opening.into_par_iter().map(Opening::finish))?)
}

/// A resource being read: as JSON still, or as a tree whose secrets are to be opened.
enum Opening<'a> {
    Json(&'a RawValue),
    Tree(serde_json::Value),
}

impl<'a> Opening<'a> {
    fn start(raw: &'a RawValue) -> serde_json::Result<Opening<'a>> {
        // A sealed secret always has this key; inside a JSON string the quotes are escaped.
        Ok(if raw.get().contains("\"ciphertext\"") {
            Opening::Tree(serde_json::from_str(raw.get())?)
        } else {
            Opening::Json(raw)
        })
    }

    fn tree(&mut self) -> Option<&mut serde_json::Value> {
        match self {
            Opening::Tree(tree) => Some(tree),
            Opening::Json(_) => None,
        }
    }

    fn finish(self) -> serde_json::Result<Stored> {
        match self {
            Opening::Json(raw) => serde_json::from_str(raw.get()),
            Opening::Tree(tree) => Stored::deserialize(tree),
        }
    }
}

/// A resource as schema 3 stores it, read back.
#[derive(Deserialize)]
struct Stored {
    urn: Urn,
    #[serde(rename = "type")]
    ty: String,
    custom: bool,
    #[serde(default)]
    id: String,
    #[serde(default)]
    inputs: PropertyMap,
    #[serde(default)]
    outputs: PropertyMap,
    /// `None` when left out (the implied root), `Some(None)` for `null`.
    #[serde(default, deserialize_with = "present")]
    parent: Option<Option<Urn>>,
    #[serde(default)]
    dependencies: Vec<Urn>,
    #[serde(default)]
    protect: bool,
    #[serde(default)]
    retain_on_delete: bool,
    #[serde(default)]
    delete: bool,
    #[serde(default)]
    provider: Option<ProviderRef>,
    #[serde(default)]
    custom_timeouts: Option<CustomTimeouts>,
}

/// A field that is present, `null` or not.
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Option<Urn>>, D::Error> {
    Option::<Urn>::deserialize(d).map(Some)
}

impl Stored {
    fn into_state(self, root: Option<&Urn>) -> ResourceState {
        let Stored {
            urn,
            ty,
            custom,
            id,
            inputs,
            outputs,
            parent,
            dependencies,
            protect,
            retain_on_delete,
            delete,
            provider,
            custom_timeouts,
        } = self;
        ResourceState {
            urn,
            ty,
            custom,
            id,
            inputs,
            outputs,
            parent: parent.unwrap_or_else(|| root.cloned()),
            dependencies,
            protect,
            retain_on_delete,
            delete,
            provider,
            custom_timeouts,
        }
    }
}

#[cfg(test)]
mod tests {
    use plinth_engine::names::{ProjectName, StackName};
    use plinth_engine::urn::{STACK_TYPE, stack_urn};

    use super::*;

    fn state(ty: &str, name: &str, parent: Option<&Urn>) -> ResourceState {
        ResourceState {
            urn: Urn::new("dev", "p", None, ty, name),
            ty: ty.into(),
            custom: ty != STACK_TYPE,
            id: if ty == STACK_TYPE {
                String::new()
            } else {
                format!("{name}-1")
            },
            inputs: PropertyMap::new(),
            outputs: PropertyMap::new(),
            parent: parent.cloned(),
            dependencies: vec![],
            protect: false,
            retain_on_delete: false,
            delete: false,
            provider: None,
            custom_timeouts: None,
        }
    }

    /// The lines of the resources, as a checkpoint lays them out.
    fn lines(snapshot: &Snapshot) -> Vec<String> {
        let (project, stack) = (
            ProjectName::new("p").unwrap(),
            StackName::new("dev").unwrap(),
        );
        let file = crate::checkpoint::CheckpointView::current(&project, &stack, &[], snapshot);
        let json = crate::layout::to_outlined_json(&file).unwrap();
        (String::from_utf8(json).unwrap().lines())
            .map(|l| l.trim().trim_end_matches(','))
            .filter(|l| l.starts_with("{\"urn\""))
            .map(str::to_owned)
            .collect()
    }

    fn round_trip(snapshot: &Snapshot) -> Snapshot {
        let json = serde_json::to_vec(&StoredSnapshotRef(snapshot)).unwrap();
        serde_json::from_slice::<StoredSnapshot>(&json)
            .unwrap()
            .into_snapshot()
    }

    #[test]
    fn parents_that_are_the_root_are_implied_and_every_other_one_is_written() {
        let root = state(STACK_TYPE, "p-dev", None);
        let provider = state("plinth:providers:t", "default", None);
        let group = state("t:Group", "g", Some(&root.urn));
        let child = state("t:T", "c", Some(&group.urn));
        let snapshot = Snapshot {
            resources: vec![root.clone(), provider, group.clone(), child.clone()],
            pending_operations: vec![PendingOperation {
                kind: PendingKind::Creating,
                resource: state("t:T", "new", Some(&root.urn)),
            }],
        };
        let urn = |r: &ResourceState| r.urn.to_string();
        assert_eq!(
            lines(&snapshot),
            [
                format!(
                    r#"{{"urn":"{}","type":"{STACK_TYPE}","custom":false}}"#,
                    urn(&root)
                ),
                r#"{"urn":"urn:plinth:dev::p::plinth:providers:t::default","type":"plinth:providers:t","custom":true,"id":"default-1","parent":null}"#
                    .to_owned(),
                format!(
                    r#"{{"urn":"{}","type":"t:Group","custom":true,"id":"g-1"}}"#,
                    urn(&group)
                ),
                format!(
                    r#"{{"urn":"{}","type":"t:T","custom":true,"id":"c-1","parent":"{}"}}"#,
                    urn(&child),
                    urn(&group)
                ),
            ]
        );
        let json = serde_json::to_value(StoredSnapshotRef(&snapshot)).unwrap();
        assert_eq!(
            json["pending_operations"][0]["resource"].get("parent"),
            None
        );
        assert_eq!(round_trip(&snapshot), snapshot);
    }

    /// Whether two URNs are one allocation, not two equal strings.
    fn shared(a: &Urn, b: &Urn) -> bool {
        std::ptr::eq(a.as_str().as_ptr(), b.as_str().as_ptr())
    }

    #[test]
    fn the_urns_a_state_names_are_those_of_the_states_above_it() {
        let root = state(STACK_TYPE, "p-dev", None);
        let provider = state("plinth:providers:t", "default", Some(&root.urn));
        let group = state("t:Group", "g", Some(&root.urn));
        let mut child = state("t:T", "c", Some(&group.urn));
        child.dependencies = vec![group.urn.clone(), Urn::new("dev", "p", None, "t:T", "gone")];
        child.provider = Some(ProviderRef {
            urn: provider.urn.clone(),
            id: "default-1".into(),
        });
        let mut pending = state("t:T", "new", Some(&group.urn));
        pending.dependencies = vec![child.urn.clone()];
        let snapshot = Snapshot {
            resources: vec![root, provider, group, child],
            pending_operations: vec![PendingOperation {
                kind: PendingKind::Creating,
                resource: pending,
            }],
        };
        let read = round_trip(&snapshot);
        assert_eq!(read, snapshot);
        let [root, provider, group, child] = &read.resources[..] else {
            panic!("four resources: {read:?}");
        };
        assert!(shared(group.parent.as_ref().unwrap(), &root.urn));
        assert!(shared(child.parent.as_ref().unwrap(), &group.urn));
        assert!(shared(&child.dependencies[0], &group.urn));
        assert!(shared(&child.provider.as_ref().unwrap().urn, &provider.urn));
        let pending = &read.pending_operations[0].resource;
        assert!(shared(pending.parent.as_ref().unwrap(), &group.urn));
        assert!(shared(&pending.dependencies[0], &child.urn));
    }

    #[test]
    fn the_root_is_implied_only_below_it() {
        let root = stack_urn("p", "dev");
        // A provider recorded before the root, and one after it; no parent is implied above
        // the root.
        let snapshot = Snapshot {
            resources: vec![
                state("plinth:providers:t", "default", None),
                state(STACK_TYPE, "p-dev", None),
                state("t:T", "a", Some(&root)),
                state("plinth:providers:u", "default", None),
            ],
            ..Default::default()
        };
        let lines = lines(&snapshot);
        let parents: Vec<Option<&str>> = (lines.iter())
            .map(|l| l.split_once("\"parent\":").map(|(_, rest)| &rest[..4]))
            .collect();
        assert_eq!(parents, [None, None, None, Some("null")], "{lines:?}");
        assert_eq!(round_trip(&snapshot), snapshot);
        assert_eq!(round_trip(&Snapshot::default()), Snapshot::default());
        // Without a root, every parent is written.
        let rootless = Snapshot {
            resources: vec![state("t:T", "b", None), state("t:T", "c", Some(&root))],
            ..Default::default()
        };
        assert_eq!(round_trip(&rootless), rootless);
    }

    #[test]
    fn every_field_round_trips() {
        let root = state(STACK_TYPE, "p-dev", None);
        let provider = state("plinth:providers:t", "default", None);
        // Every field set to something other than its default.
        let full = ResourceState {
            urn: Urn::new("dev", "p", None, "t:T", "full"),
            ty: "t:T".into(),
            custom: true,
            id: "full-1".into(),
            inputs: [("a".to_owned(), Value::from("x"))].into(),
            outputs: [("b".to_owned(), Value::Secret(Box::new(1.5.into())))].into(),
            parent: Some(root.urn.clone()),
            dependencies: vec![provider.urn.clone()],
            protect: true,
            retain_on_delete: true,
            delete: true,
            provider: Some(ProviderRef {
                urn: provider.urn.clone(),
                id: provider.id.clone(),
            }),
            custom_timeouts: Some(CustomTimeouts {
                create_seconds: Some(1),
                update_seconds: None,
                delete_seconds: Some(3),
            }),
        };
        let snapshot = Snapshot {
            resources: vec![root, provider, full.clone()],
            pending_operations: vec![PendingOperation {
                kind: PendingKind::Deleting,
                resource: full,
            }],
        };
        assert_eq!(round_trip(&snapshot), snapshot);
    }
    /// A checkpoint's sealed secrets, wherever they are in a resource (nested in objects and
    /// arrays, in pending operations), open in their text as they would as trees.
    #[test]
    fn secrets_open_in_place_as_they_open_as_trees() {
        let (crypter, _) = crate::secrets::PassphraseCrypter::create("pw", "dev").unwrap();
        let secret = |v: Value| Value::Secret(Box::new(v));
        let mut resources = vec![state(STACK_TYPE, "p-dev", None)];
        for i in 0..100 {
            let mut r = state("t:T", &format!("r{i}"), None);
            r.inputs = [
                ("password".to_owned(), secret(format!("pw-{i}").into())),
                (
                    "nested".to_owned(),
                    Value::Array(vec![Value::Object(
                        [(
                            "k".to_owned(),
                            secret(Value::Array(vec![i.into(), "\"}".into()])),
                        )]
                        .into(),
                    )]),
                ),
            ]
            .into();
            r.outputs = [("plain".to_owned(), Value::from("ciphertext"))].into();
            resources.push(r);
        }
        let snapshot = Snapshot {
            pending_operations: vec![PendingOperation {
                kind: PendingKind::Creating,
                resource: resources[7].clone(),
            }],
            resources,
        };
        let refs: Vec<StoredRef> = (snapshot.resources.iter())
            .map(|r| StoredRef::of(r, None))
            .collect();
        let in_place = seal_in_place(&refs, &crypter)
            .unwrap()
            .expect("the engine's own form");
        // What an earlier plinth wrote, sealed as trees, opens in place as well.
        let as_trees = seal_as_trees(&refs, &crypter).unwrap();
        let as_trees: Vec<Written> = as_trees.into_iter().map(Written::Own).collect();
        for sealed in [&in_place, &as_trees] {
            let sealed: Vec<&RawValue> = sealed.iter().map(|raw| &**raw).collect();
            let opened = open_in_place(&sealed, &crypter).expect("plinth's own form");
            let opened: Vec<ResourceState> =
                opened.into_iter().map(|s| s.into_state(None)).collect();
            assert_eq!(opened, snapshot.resources);
        }
        let written = WrittenSnapshot::of(&snapshot, &crypter).unwrap();
        let json = serde_json::to_string(&written).unwrap();
        assert!(!json.contains("pw-7"), "sealed");
        // Its checkpoint file fits the buffer the file's writer begins with, nearly filling it.
        let (project, stack) = (
            ProjectName::new("p").unwrap(),
            StackName::new("dev").unwrap(),
        );
        let file = crate::checkpoint::CheckpointWritten {
            version: STORED_SINCE,
            project: &project,
            stack: &stack,
            plinth: "0.0.0",
            plugins: &[],
            snapshot: written,
        };
        let (written, estimate) = (file.to_json().unwrap().len(), file.snapshot.written_len());
        assert!(
            written <= estimate + 4096 && written >= estimate,
            "{written} {estimate}"
        );
        let sealed: SealedSnapshot = serde_json::from_str(&json).unwrap();
        let all: Vec<&RawValue> = (sealed.0.resources.iter())
            .chain(sealed.0.pending_operations.iter().map(|p| &p.resource))
            .copied()
            .collect();
        let in_place = open_in_place(&all, &crypter).expect("plinth's own form opens in place");
        let as_trees = open_as_trees(&all, &crypter).unwrap();
        let states = |stored: Vec<Stored>| -> Vec<ResourceState> {
            stored.into_iter().map(|s| s.into_state(None)).collect()
        };
        assert_eq!(states(in_place), states(as_trees));
        assert_eq!(sealed.open(&crypter).unwrap().into_snapshot(), snapshot);

        // A value that does not open takes the tree walk, which names the resource.
        let broken = json.replacen("\"ciphertext\":\"v1:", "\"ciphertext\":\"v1:A", 1);
        let sealed: SealedSnapshot = serde_json::from_str(&broken).unwrap();
        let error = sealed.open(&crypter).err().unwrap().to_string();
        assert!(
            error.contains("of resource `urn:plinth:dev::p::t:T::r0`"),
            "{error}"
        );
    }
}

//! Rebuilding a new version of a stack's state from its base checkpoint and an update's journal
//! entries, without any key: what a service that never sees plaintext does at completion. Every
//! secret stays sealed as it came; the journal is replayed by the engine's own replay, so the
//! service and the file backend cannot disagree about what a journal means.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rayon::prelude::*;

use plinth_engine::events::ChangeSummary;
use plinth_engine::journal::{JournalEntry, JournalState};
use plinth_engine::names::{ProjectName, StackName};
use plinth_engine::snapshot::{PendingKind, Snapshot};

use serde_json::value::RawValue;

use crate::checkpoint::{Checkpoint, PluginUse, SCHEMA_VERSION};
use crate::error::StateError;
use crate::journal_short::{Begun, Line, decode_line};
use crate::par::collect_ok;
use crate::secrets::{Crypter, SecretsError};

/// "Opens" a ciphertext as a JSON string holding it, and "seals" that string back to it: the
/// sealed secrets of the base and of the entries pass through replay untouched.
pub(crate) struct KeepSealed;

impl Crypter for KeepSealed {
    fn seal(&self, plaintext: &str) -> Result<String, SecretsError> {
        serde_json::from_str(plaintext).map_err(|e| {
            SecretsError::MalformedState(format!("a sealed secret was not kept as a string: {e}"))
        })
    }
    fn open(&self, sealed: &str) -> Result<String, SecretsError> {
        Ok(serde_json::Value::String(sealed.to_owned()).to_string())
    }
}

/// The checkpoint `base` (none for a stack never updated) becomes once the journal `batches`
/// are applied, each a JSON array of entries as the client sent them (secrets sealed); secrets
/// stay sealed. It records `plugins` as the update's (the base's if `None`). `origin` names
/// where the base came from in errors.
///
/// The base and the batches are parsed in parallel (most of the work, and a client waits for
/// its end), then replayed in order.
pub fn rebuild_sealed<B: AsRef<[u8]> + Sync>(
    project: &ProjectName,
    stack: &StackName,
    base: Option<&[u8]>,
    batches: &[B],
    plugins: Option<Vec<PluginUse>>,
    origin: &Path,
) -> Result<Vec<u8>, StateError> {
    let parsed = (batches.par_iter().enumerate())
        .map(|(index, batch)| ParsedBatch::parse(index, batch.as_ref(), origin));
    rebuild_from(
        project,
        stack,
        base,
        parsed,
        plugins,
        origin,
        Replay::Checked,
    )
    .map(|r| r.checkpoint)
}

/// Whether a rebuild checks the fields of every state the journal records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replay {
    /// As every version a client's update makes is: a state no plinth records is refused.
    Checked,
    /// For an update that ended without completing, whose journal an older plinth may have
    /// written with such a state (an id with a control character): what it recorded is kept,
    /// as the file backend keeps its journal; every client's load then refuses the state
    /// saying how to repair it, and `stack export` shows it as it is.
    Unchecked,
}

/// A journal batch for [`rebuild_parsed`]: parsed already (as it arrived:
/// [`ParsedBatch::check`]), or its text.
pub enum JournalBatch {
    Parsed(ParsedBatch),
    Text(String),
}

/// [`rebuild_sealed`] of `batches`, some of them parsed already, in order, with the changes
/// they recorded, checking the fields of the states they record as `replay` says.
pub fn rebuild_parsed(
    project: &ProjectName,
    stack: &StackName,
    base: Option<&[u8]>,
    batches: Vec<JournalBatch>,
    plugins: Option<Vec<PluginUse>>,
    origin: &Path,
    replay: Replay,
) -> Result<Rebuilt, StateError> {
    let parsed = (batches.into_par_iter().enumerate()).map(|(index, batch)| match batch {
        JournalBatch::Parsed(parsed) => Ok(parsed),
        JournalBatch::Text(text) => ParsedBatch::parse(index, text.as_bytes(), origin),
    });
    rebuild_from(project, stack, base, parsed, plugins, origin, replay)
}

/// Parses `base` while the batches are `parsed`, then replays them over it.
fn rebuild_from(
    project: &ProjectName,
    stack: &StackName,
    base: Option<&[u8]>,
    parsed: impl IndexedParallelIterator<Item = Result<ParsedBatch, StateError>>,
    plugins: Option<Vec<PluginUse>>,
    origin: &Path,
    replay: Replay,
) -> Result<Rebuilt, StateError> {
    let (checkpoint, parsed) = rayon::join(
        || parse_base(project, stack, base, origin),
        // The first malformed batch is the one reported, whichever was parsed first.
        || collect_ok(parsed),
    );
    replay_parsed(
        project,
        stack,
        checkpoint?,
        parsed?,
        plugins,
        origin,
        replay,
    )
}

/// The checkpoint `base` of stack `stack` (the empty state's if `None`), secrets kept sealed.
fn parse_base(
    project: &ProjectName,
    stack: &StackName,
    base: Option<&[u8]>,
    origin: &Path,
) -> Result<Checkpoint, StateError> {
    match base {
        Some(bytes) => Checkpoint::parse(bytes, stack, origin, &KeepSealed),
        None => Ok(Checkpoint::new(project, stack, Snapshot::default())),
    }
}

/// A journal batch's entries, parsed, the short ones not completed yet (that needs the batches
/// before it).
pub struct ParsedBatch(Vec<Line>);

impl ParsedBatch {
    /// Parses `entries`, as a client sent them (secrets sealed): for refusing a malformed one
    /// when it arrives rather than when the state is rebuilt. The error names the entry, from
    /// 1. Whether a short entry's `begin` came before is known at the rebuild.
    pub fn check<'a>(
        entries: impl IntoIterator<Item = &'a str>,
    ) -> Result<ParsedBatch, (usize, String)> {
        // Parsed straight from the text, secrets kept sealed; most entries hold none and are
        // never made a JSON tree.
        (entries.into_iter().enumerate())
            .map(|(place, entry)| {
                decode_line(entry.as_bytes(), &KeepSealed).map_err(|e| (place + 1, e.to_string()))
            })
            .collect::<Result<_, _>>()
            .map(ParsedBatch)
    }

    /// The entries of `batch`, the journal batch numbered `index` from 0: a JSON array.
    fn parse(index: usize, batch: &[u8], origin: &Path) -> Result<ParsedBatch, StateError> {
        let entries: Vec<&RawValue> =
            serde_json::from_slice(batch).map_err(|e| corrupt(origin, index, e))?;
        ParsedBatch::check(entries.into_iter().map(RawValue::get))
            .map_err(|(place, e)| corrupt(origin, index, format!("entry {place}: {e}")))
    }

    /// How many entries it holds.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The creates this batch leaves open and those it needs open from the batches before it,
    /// for checking a batch against the journal it extends when it arrives: a short entry whose
    /// `begin` is in no earlier batch would make the journal impossible to rebuild.
    pub fn creates(&self) -> Creates {
        let mut creates = Creates::default();
        let mut opened = std::collections::BTreeSet::new();
        for line in &self.0 {
            match line {
                Line::Entry(JournalEntry::Begin {
                    seq,
                    kind: PendingKind::Creating,
                    ..
                }) => {
                    opened.insert(*seq);
                }
                Line::Entry(
                    JournalEntry::Created { seq, .. }
                    | JournalEntry::Updated { seq, .. }
                    | JournalEntry::Failed { seq }
                    | JournalEntry::Deleted { seq: Some(seq), .. },
                ) => {
                    if !opened.remove(seq) {
                        creates.closed.push(*seq);
                    }
                }
                Line::Entry(_) => {}
                Line::Short(short) => {
                    if !opened.remove(&short.seq()) {
                        creates.needed.push(short.seq());
                    }
                }
            }
        }
        creates.opened = opened.into_iter().collect();
        creates
    }
}

/// What a batch does to the creates open in its update's journal ([`ParsedBatch::creates`]).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Creates {
    /// Begun in the batch and not ended in it.
    pub opened: Vec<u64>,
    /// Operations begun earlier that the batch ends with a whole entry (creates among them).
    pub closed: Vec<u64>,
    /// Creates the batch ends with a short entry, which must have been begun earlier.
    pub needed: Vec<u64>,
}

/// A rebuilt state and the changes its journal recorded.
pub struct Rebuilt {
    pub checkpoint: Vec<u8>,
    pub changes: ChangeSummary,
    /// Its resources as `stack ls` counts them (neither the stack's root nor providers),
    /// counted before it was written: reading the checkpoint again to count them took as long
    /// as writing it.
    pub resources: usize,
}

/// Replays `batches` over `checkpoint` and writes the result.
fn replay_parsed(
    project: &ProjectName,
    stack: &StackName,
    checkpoint: Checkpoint,
    batches: Vec<ParsedBatch>,
    plugins: Option<Vec<PluginUse>>,
    origin: &Path,
    fields: Replay,
) -> Result<Rebuilt, StateError> {
    let mut replayer = Replayer::over(project, stack, checkpoint, origin, fields);
    for batch in batches {
        replayer.apply(batch)?;
    }
    replayer.finish(plugins)
}

/// A journal replayed batch by batch over its base, as the batches arrive: what
/// [`Replayer::finish`] writes is what [`rebuild_parsed`] of the same base and batches writes,
/// the replay done already.
pub struct Replayer {
    project: ProjectName,
    stack: StackName,
    /// The base's plugins, recorded unless the update says its own.
    plugins: Vec<PluginUse>,
    /// Shared with the replay so that it too is freed off the path of the answer (the replay
    /// then copies the base states it keeps untouched: an update not limited to targets has
    /// none).
    base: Arc<Snapshot>,
    state: JournalState,
    /// Short entries completed in order, from the `begin` entries of this and earlier batches.
    begun: Begun,
    changes: Changes,
    /// How many batches were applied.
    batches: usize,
    origin: PathBuf,
}

impl Replayer {
    /// A replay over `base`, the checkpoint of stack `stack` (the empty state's if `None`).
    pub fn new(
        project: &ProjectName,
        stack: &StackName,
        base: Option<&[u8]>,
        origin: &Path,
        fields: Replay,
    ) -> Result<Replayer, StateError> {
        let checkpoint = parse_base(project, stack, base, origin)?;
        Ok(Replayer::over(project, stack, checkpoint, origin, fields))
    }

    fn over(
        project: &ProjectName,
        stack: &StackName,
        checkpoint: Checkpoint,
        origin: &Path,
        fields: Replay,
    ) -> Replayer {
        let base = Arc::new(checkpoint.snapshot);
        let state = match fields {
            Replay::Checked => JournalState::new(base.clone()),
            Replay::Unchecked => JournalState::unchecked(base.clone()),
        };
        Replayer {
            project: project.clone(),
            stack: stack.clone(),
            plugins: checkpoint.plugins,
            base,
            state,
            begun: Begun::default(),
            changes: Changes::default(),
            batches: 0,
            origin: origin.to_owned(),
        }
    }

    /// Applies the next batch. After an error the replay is of no further use.
    pub fn apply(&mut self, ParsedBatch(batch): ParsedBatch) -> Result<(), StateError> {
        let index = self.batches;
        self.batches += 1;
        for line in batch {
            let entry = match line {
                Line::Entry(entry) => {
                    self.begun.follow(&entry);
                    entry
                }
                Line::Short(short) => self.begun.complete(short).ok_or_else(|| {
                    corrupt(
                        &self.origin,
                        index,
                        "the end of a create that no entry began",
                    )
                })?,
            };
            self.changes.count(&entry);
            (self.state.apply_owned(entry)).map_err(|e| not_applying(&self.origin, e))?;
        }
        Ok(())
    }

    /// The checkpoint the batches applied make, recording `plugins` (the base's if `None`).
    pub fn finish(self, plugins: Option<Vec<PluginUse>>) -> Result<Rebuilt, StateError> {
        let Replayer {
            project,
            stack,
            plugins: base_plugins,
            base,
            state,
            changes,
            origin,
            ..
        } = self;
        let replayed = state.replayed();
        rayon::spawn(move || drop(base));
        let snapshot = replayed.map_err(|e| not_applying(&origin, e))?;
        let resources = (snapshot.resources.iter())
            .filter(|r| plinth_engine::urn::is_counted(&r.ty))
            .count();
        let checkpoint = Checkpoint::new(&project, &stack, snapshot)
            .with_plugins(plugins.unwrap_or(base_plugins));
        let json = checkpoint.to_json(&KeepSealed);
        // Freeing the state's many small allocations takes about as long as writing it: it is
        // done off the path of the answer.
        rayon::spawn(move || drop(checkpoint));
        Ok(Rebuilt {
            checkpoint: json?,
            changes: changes.summary,
            resources,
        })
    }
}

/// A journal that does not apply to its base.
fn not_applying(origin: &Path, e: impl std::fmt::Display) -> StateError {
    StateError::Corrupt {
        path: origin.to_owned(),
        reason: format!("the journal does not apply to its base: {e}"),
    }
}

/// The changes a journal records, as an update's history counts them: what the service says
/// of an update it ended on its client's behalf. (A replaced resource's deletion is part of
/// its replacement; what stayed the same is not journaled.)
#[derive(Default)]
struct Changes {
    summary: ChangeSummary,
    /// The resources replaced so far, whose deletions are not counted.
    replaced: std::collections::HashSet<usize>,
}

impl Changes {
    fn count(&mut self, entry: &JournalEntry) {
        let changes = &mut self.summary;
        match entry {
            JournalEntry::Created {
                replaces: Some(old),
                ..
            } => {
                self.replaced.insert(*old);
                changes.replace += 1;
            }
            JournalEntry::Created { .. } => changes.create += 1,
            JournalEntry::Updated { .. } => changes.update += 1,
            JournalEntry::Deleted { old, .. } if !self.replaced.contains(old) => {
                changes.delete += 1
            }
            _ => {}
        }
    }
}

/// The journal batch numbered `index` from 0 is not what `reason` says.
fn corrupt(origin: &Path, index: usize, reason: impl std::fmt::Display) -> StateError {
    StateError::Corrupt {
        path: origin.to_owned(),
        reason: format!("journal batch {}: {reason}", index + 1),
    }
}

/// Whether `base`, a checkpoint as [`rebuild_sealed`] writes it, is already what rebuilding it
/// from no journal entries would write: of this plinth's schema, recording `plugins` (`None`:
/// whatever it records). A phase that journaled nothing then keeps its base as it is, rather
/// than parsing and writing again megabytes that do not change; its snapshot is skipped, not
/// parsed.
pub fn rebuilt_as_is(base: &[u8], plugins: Option<&[PluginUse]>) -> bool {
    #[derive(serde::Deserialize)]
    struct Head {
        version: u32,
        #[serde(default)]
        plugins: Vec<PluginUse>,
    }
    serde_json::from_slice::<Head>(base)
        .is_ok_and(|head| head_as_is(head.version, &head.plugins, plugins))
}

fn head_as_is(version: u32, recorded: &[PluginUse], plugins: Option<&[PluginUse]>) -> bool {
    version == SCHEMA_VERSION && plugins.is_none_or(|p| p == recorded)
}

/// How many bytes of a checkpoint [`rebuilt_as_is_by_head`] needs: plinth writes the schema
/// version and the plugins before the snapshot, in well under this.
pub const CHECKPOINT_HEAD: usize = 64 * 1024;

/// [`rebuilt_as_is`] from the first bytes of the checkpoint (up to [`CHECKPOINT_HEAD`]), without
/// the megabytes of its snapshot: `None` unless they hold its schema `version` and `plugins`,
/// each once, before its `snapshot`, as plinth writes a checkpoint; the whole is then to be
/// read.
pub fn rebuilt_as_is_by_head(head: &[u8], plugins: Option<&[PluginUse]>) -> Option<bool> {
    let (version, recorded) = read_head(head)?;
    Some(head_as_is(version, &recorded, plugins))
}

/// The schema version and plugins at the start of a checkpoint's text, read member by member up
/// to its `snapshot`, which is left unread.
fn read_head(text: &[u8]) -> Option<(u32, Vec<PluginUse>)> {
    /// Reads one JSON value of type `T` at the start of `text` (after any whitespace), and
    /// what follows it.
    fn value<T: serde::de::DeserializeOwned>(text: &[u8]) -> Option<(T, &[u8])> {
        let mut values = serde_json::Deserializer::from_slice(text).into_iter::<T>();
        let value = values.next()?.ok()?;
        Some((value, &text[values.byte_offset()..]))
    }
    /// `text` after `byte` (whitespace before it skipped), if it starts with it.
    fn after(text: &[u8], byte: u8) -> Option<&[u8]> {
        text.trim_ascii_start().strip_prefix(&[byte])
    }
    let (mut version, mut plugins) = (None, None);
    let mut rest = after(text, b'{')?;
    loop {
        let (key, value_text) = value::<String>(rest)?;
        let value_text = after(value_text, b':')?;
        rest = match key.as_str() {
            "snapshot" => return Some((version?, plugins?)),
            "version" if version.is_none() => {
                let (read, rest) = value::<u32>(value_text)?;
                version = Some(read);
                rest
            }
            "plugins" if plugins.is_none() => {
                let (read, rest) = value::<Vec<PluginUse>>(value_text)?;
                plugins = Some(read);
                rest
            }
            // A member repeated is for the whole read to refuse.
            "version" | "plugins" => return None,
            _ => value::<serde::de::IgnoredAny>(value_text)?.1,
        };
        rest = after(rest, b',')?;
    }
}

/// The journal entry as the client sends it: JSON with every secret sealed by `crypter`.
pub fn seal_entry(
    entry: &JournalEntry,
    crypter: &dyn Crypter,
) -> Result<serde_json::Value, StateError> {
    let mut tree = serde_json::to_value(entry).map_err(|e| StateError::Encode(e.to_string()))?;
    crate::secrets::seal_tree(&mut tree, crypter)?;
    Ok(tree)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Why `entry` is not a journal entry as a client sends it, if it is not.
    fn check_entry(entry: &str) -> Result<(), String> {
        ParsedBatch::check([entry]).map(drop).map_err(|(_, e)| e)
    }
    use crate::secrets::PassphraseCrypter;
    use plinth_engine::resource::ResourceState;
    use plinth_engine::value::{PropertyMap, Value};

    /// A custom resource `name` of type `t:T` in stack `dev` of project `p`, not created yet.
    fn resource(name: &str, inputs: PropertyMap) -> ResourceState {
        ResourceState {
            urn: plinth_engine::urn::Urn::new("dev", "p", None, "t:T", name),
            ty: "t:T".into(),
            custom: true,
            id: String::new(),
            inputs,
            outputs: Default::default(),
            parent: None,
            dependencies: vec![],
            protect: false,
            retain_on_delete: false,
            delete: false,
            provider: None,
            custom_timeouts: None,
        }
    }

    #[test]
    fn a_journal_rebuilds_the_state_the_file_backend_would_and_secrets_stay_sealed() {
        let (crypter, _) = PassphraseCrypter::create("pw", "dev").unwrap();
        let project = ProjectName::new("p").unwrap();
        let stack = StackName::new("dev").unwrap();
        let secret = Value::Secret(Box::new(Value::String("hunter2".into())));
        let resource = ResourceState {
            id: "a-1".into(),
            ..resource("a", [("token".to_owned(), secret)].into())
        };
        let entries = [
            JournalEntry::Begin {
                seq: 1,
                kind: plinth_engine::snapshot::PendingKind::Creating,
                resource: resource.clone(),
                old: None,
            },
            JournalEntry::Created {
                seq: 1,
                resource: resource.clone(),
                replaces: None,
            },
        ];
        let sealed: Vec<_> = (entries.iter())
            .map(|e| seal_entry(e, &crypter).unwrap())
            .collect();
        assert!(!serde_json::to_string(&sealed).unwrap().contains("hunter2"));
        assert_eq!(
            (sealed.iter()).try_for_each(|entry| check_entry(&entry.to_string())),
            Ok(())
        );
        assert!(check_entry(r#"{"entry": "begin", "urn": "a"}"#).is_err());
        assert!(check_entry("{").is_err());
        let used = PluginUse {
            name: "t".into(),
            version: "1.0.0".into(),
            sha256: "00".into(),
        };
        let plugins = Some(vec![used.clone()]);
        let bytes = rebuild_sealed(
            &project,
            &stack,
            None,
            &[serde_json::to_vec(&sealed).unwrap()],
            plugins,
            Path::new("service"),
        )
        .unwrap();
        assert!(!String::from_utf8_lossy(&bytes).contains("hunter2"));
        let opened = Checkpoint::parse(&bytes, &stack, Path::new("x"), &crypter).unwrap();
        assert_eq!(opened.snapshot.resources, vec![resource]);
        assert_eq!(opened.plugins, std::slice::from_ref(&used));
        // The version rebuilt is a base for the next update, again without a key.
        // ... and keeps the plugins the base records unless told others.
        let again = rebuild_sealed(
            &project,
            &stack,
            Some(&bytes),
            &[] as &[&[u8]],
            None,
            Path::new("service"),
        )
        .unwrap();
        let opened = Checkpoint::parse(&again, &stack, Path::new("x"), &crypter).unwrap();
        assert_eq!(opened.snapshot.resources.len(), 1);
        assert_eq!(opened.plugins, std::slice::from_ref(&used));
        // Which an empty journal leaves as it is, unless other plugins are to be recorded or
        // its schema is an older one.
        assert!(rebuilt_as_is(&bytes, None));
        assert!(rebuilt_as_is(&bytes, Some(std::slice::from_ref(&used))));
        assert!(!rebuilt_as_is(&bytes, Some(&[])));
        let mut older: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        older["version"] = (SCHEMA_VERSION - 1).into();
        assert!(!rebuilt_as_is(&serde_json::to_vec(&older).unwrap(), None));
        assert!(!rebuilt_as_is(b"{", None));
        // The same answers from the head alone, cut where the snapshot begins.
        let cut = |bytes: &[u8]| {
            let at = memchr::memmem::find(bytes, br#""snapshot""#).unwrap();
            bytes[..at + 20].to_vec()
        };
        let head = cut(&bytes);
        assert!(head.len() < CHECKPOINT_HEAD);
        assert_eq!(rebuilt_as_is_by_head(&head, None), Some(true));
        let used = std::slice::from_ref(&used);
        assert_eq!(rebuilt_as_is_by_head(&head, Some(used)), Some(true));
        assert_eq!(rebuilt_as_is_by_head(&head, Some(&[])), Some(false));
        let current = format!(r#""version": {SCHEMA_VERSION},"#);
        let older = String::from_utf8(head).unwrap().replacen(
            &current,
            &format!(r#""version": {},"#, SCHEMA_VERSION - 1),
            1,
        );
        assert_eq!(rebuilt_as_is_by_head(older.as_bytes(), None), Some(false));
    }

    #[test]
    fn a_rebuild_counts_its_resources_as_the_written_checkpoint_lists_them() {
        use plinth_engine::urn::{STACK_TYPE, provider_type};
        let (project, stack) = (
            ProjectName::new("p").unwrap(),
            StackName::new("dev").unwrap(),
        );
        let typed = |name: &str, ty: &str| ResourceState {
            urn: plinth_engine::urn::Urn::new("dev", "p", None, ty, name),
            ty: ty.into(),
            id: format!("{name}-1"),
            ..resource(name, Default::default())
        };
        let resources = vec![
            typed("dev", STACK_TYPE),
            typed("default", &provider_type("t")),
            typed("a", "t:T"),
            typed("b", "t:T"),
        ];
        let snapshot = Snapshot {
            resources,
            ..Snapshot::default()
        };
        let base = Checkpoint::new(&project, &stack, snapshot)
            .to_json(&KeepSealed)
            .unwrap();
        let origin = Path::new("service");
        let rebuilt = rebuild_parsed(
            &project,
            &stack,
            Some(&base),
            vec![],
            None,
            origin,
            Replay::Checked,
        )
        .unwrap();
        // Neither the stack's root nor the provider, as `stack ls` counts.
        assert_eq!(rebuilt.resources, 2);
        let listed: serde_json::Value = serde_json::from_slice(&rebuilt.checkpoint).unwrap();
        assert_eq!(listed["snapshot"]["resources"].as_array().unwrap().len(), 4);
    }

    #[test]
    fn a_head_that_does_not_say_it_all_before_the_snapshot_is_read_whole() {
        let plugin = r#"{"name":"p","version":"1.0.0","sha256":"00"}"#;
        let by_head = |text: &str| rebuilt_as_is_by_head(text.as_bytes(), None);
        let current = format!(r#"{{"version":{SCHEMA_VERSION},"plugins":[{plugin}],"snapshot":{{"#);
        assert_eq!(by_head(&current), Some(true));
        let spaced = format!(
            "{{\n \"version\" : {SCHEMA_VERSION} ,\n \"x\": [1, {{}}], \"plugins\": [] , \"snapshot\" :"
        );
        assert_eq!(by_head(&spaced), Some(true));
        for unsure in [
            // The plugins after the snapshot, or not there at all.
            format!(r#"{{"version":{SCHEMA_VERSION},"snapshot":{{}},"plugins":[]}}"#),
            // A member repeated, which the whole read refuses.
            format!(r#"{{"version":{SCHEMA_VERSION},"version":1,"plugins":[],"snapshot":"#),
            // Cut before the snapshot, or not a checkpoint.
            format!(r#"{{"version":{SCHEMA_VERSION},"plugins":[{plugin}"#),
            r#"{"version":"three","plugins":[],"snapshot":"#.to_owned(),
            "[]".to_owned(),
            String::new(),
        ] {
            assert_eq!(by_head(&unsure), None, "{unsure}");
        }
    }

    #[test]
    fn a_malformed_entry_is_refused_naming_what_is_wrong_and_where() {
        // An entry is read without being buffered first, so an error names its field (which a
        // buffered read could not: it said "missing field `type`", not where).
        let refused = |entry: &str| check_entry(entry).unwrap_err();
        let resource = r#"{"urn":"urn:plinth:dev::p::t:T::a","type":"t:T","custom":true,"id":"1"}"#;
        for (entry, expected) in [
            (
                r#"{"entry":"made","seq":1}"#.to_owned(),
                "entry: unknown variant `made`, expected one of `begin`",
            ),
            (r#"{"entry":"failed"}"#.to_owned(), "missing field `seq`"),
            (
                r#"{"entry":"failed","seq":"x"}"#.to_owned(),
                "seq: invalid type: string \"x\", expected u64",
            ),
            (
                r#"{"entry":"created","seq":1,"resource":{"urn":"urn:plinth:dev::p::t:T::a"}}"#
                    .to_owned(),
                "resource: missing field `type`",
            ),
            (
                format!(
                    r#"{{"entry":"created","seq":1,"resource":{}}}"#,
                    resource.replace(r#""id":"1""#, r#""id":2"#)
                ),
                "resource.id: invalid type: integer `2`, expected a string",
            ),
            (
                format!(r#"{{"entry":"begin","seq":1,"kind":"making","resource":{resource}}}"#),
                "kind: unknown variant `making`, expected one of `creating`",
            ),
        ] {
            let message = refused(&entry);
            assert!(message.starts_with(expected), "{entry}: {message}");
        }
        // Unknown fields are ignored, wherever the tag is.
        let entry = format!(r#"{{"seq":1,"later":[1],"entry":"created","resource":{resource}}}"#);
        assert_eq!(check_entry(&entry), Ok(()));
    }

    #[test]
    fn of_several_malformed_batches_the_first_is_reported() {
        let mut batches = vec![b"[]".to_vec(); 40];
        batches[5] = br#"[{"entry":"failed","seq":"five"}]"#.to_vec();
        batches[30] = b"[{".to_vec();
        let err = rebuild_sealed(
            &ProjectName::new("p").unwrap(),
            &StackName::new("dev").unwrap(),
            None,
            &batches,
            None,
            Path::new("service"),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("journal batch 6: entry 1: seq: invalid type"),
            "{err}"
        );
    }

    #[test]
    fn a_replay_batch_by_batch_writes_what_the_rebuild_of_its_batches_writes() {
        let project = ProjectName::new("p").unwrap();
        let stack = StackName::new("dev").unwrap();
        let origin = Path::new("s");
        let sized =
            |name, size: f64| resource(name, [("size".to_owned(), Value::Number(size))].into());
        let entry = |entry: JournalEntry| serde_json::to_value(entry).unwrap();
        let begin = |seq, kind, resource, old| {
            entry(JournalEntry::Begin {
                seq,
                kind,
                resource,
                old,
            })
        };
        let short = |seq: u64| serde_json::json!({ "entry": "created-as-begun", "seq": seq, "id": format!("id-{seq}") });
        let first = [
            serde_json::to_vec(&[
                begin(1, PendingKind::Creating, sized("a", 1.0), None),
                begin(2, PendingKind::Creating, sized("b", 1.0), None),
            ])
            .unwrap(),
            serde_json::to_vec(&[short(1), short(2)]).unwrap(),
        ];
        let base = rebuild_sealed(&project, &stack, None, &first, None, origin).unwrap();
        // Over that base: `a` updated, `b` replaced (its deletion part of the replacement), `c`
        // created across batches.
        let updated = ResourceState {
            id: "id-1".into(),
            ..sized("a", 2.0)
        };
        let replacement = ResourceState {
            id: "id-5".into(),
            ..sized("b", 2.0)
        };
        let batches = [
            serde_json::to_vec(&[
                begin(3, PendingKind::Updating, updated.clone(), Some(0)),
                begin(4, PendingKind::Creating, sized("c", 1.0), None),
            ])
            .unwrap(),
            serde_json::to_vec(&[
                entry(JournalEntry::Updated {
                    seq: 3,
                    old: 0,
                    resource: updated,
                }),
                begin(5, PendingKind::Creating, replacement.clone(), Some(1)),
            ])
            .unwrap(),
            serde_json::to_vec(&[
                entry(JournalEntry::Created {
                    seq: 5,
                    resource: replacement,
                    replaces: Some(1),
                }),
                begin(
                    6,
                    PendingKind::Deleting,
                    ResourceState {
                        id: "id-2".into(),
                        ..sized("b", 1.0)
                    },
                    Some(1),
                ),
                entry(JournalEntry::Deleted {
                    seq: Some(6),
                    old: 1,
                }),
                short(4),
            ])
            .unwrap(),
        ];
        let parsed = |batch: &[u8]| ParsedBatch::parse(0, batch, origin).unwrap();
        let plugins = || Some(vec![]);
        let whole = rebuild_parsed(
            &project,
            &stack,
            Some(&base),
            batches
                .iter()
                .map(|b| JournalBatch::Parsed(parsed(b)))
                .collect(),
            plugins(),
            origin,
            Replay::Checked,
        )
        .unwrap();
        let mut replayer =
            Replayer::new(&project, &stack, Some(&base), origin, Replay::Checked).unwrap();
        for batch in &batches {
            replayer.apply(parsed(batch)).unwrap();
        }
        let replayed = replayer.finish(plugins()).unwrap();
        assert_eq!(replayed.checkpoint, whole.checkpoint);
        assert_eq!(replayed.resources, 3);
        assert_eq!(replayed.resources, whole.resources);
        let changes = |c: &ChangeSummary| (c.create, c.update, c.replace, c.delete);
        assert_eq!(changes(&replayed.changes), (1, 1, 1, 0));
        assert_eq!(changes(&replayed.changes), changes(&whole.changes));

        // A batch that does not apply fails the replay as it fails the rebuild.
        let mut replayer =
            Replayer::new(&project, &stack, Some(&base), origin, Replay::Checked).unwrap();
        let orphan = serde_json::to_vec(&[short(9)]).unwrap();
        let error = replayer.apply(parsed(&orphan)).unwrap_err().to_string();
        assert!(
            error.contains("journal batch 1: the end of a create that no entry began"),
            "{error}"
        );
    }

    #[test]
    fn a_short_create_end_is_completed_from_its_begin_in_an_earlier_batch() {
        let project = ProjectName::new("p").unwrap();
        let stack = StackName::new("dev").unwrap();
        let resource = |name| resource(name, [("size".to_owned(), Value::Number(3.0))].into());
        let begin = |seq, name| {
            serde_json::to_value(JournalEntry::Begin {
                seq,
                kind: plinth_engine::snapshot::PendingKind::Creating,
                resource: resource(name),
                old: None,
            })
            .unwrap()
        };
        let short = |seq: u64| {
            serde_json::json!({ "entry": "created-as-begun", "seq": seq, "id": format!("id-{seq}"),
                "outputs": { "arn": format!("arn-{seq}") } })
        };
        for entry in [short(1), begin(1, "a")] {
            assert_eq!(check_entry(&entry.to_string()), Ok(()), "{entry}");
        }
        assert!(check_entry(r#"{"entry":"created-as-begun","id":"x"}"#).is_err());
        // Written spaced, its tag last: still a short entry.
        let spaced = r#"{ "seq": 2, "entry": "created-as-begun" }"#;
        assert_eq!(check_entry(spaced), Ok(()));

        let batches = [
            serde_json::to_vec(&[begin(1, "a"), begin(2, "b")]).unwrap(),
            serde_json::to_vec(&[short(2), short(1)]).unwrap(),
        ];
        let bytes = rebuild_sealed(&project, &stack, None, &batches, None, Path::new("s")).unwrap();
        let opened = Checkpoint::parse(&bytes, &stack, Path::new("x"), &KeepSealed).unwrap();
        let resources = &opened.snapshot.resources;
        assert_eq!(resources.len(), 2);
        assert_eq!(
            (resources[0].urn.name(), resources[0].id.as_str()),
            ("b", "id-2")
        );
        assert_eq!(
            resources[0].inputs,
            resource("b").inputs,
            "kept from its begin"
        );
        assert_eq!(resources[1].outputs["arn"], Value::String("arn-1".into()));

        // A short end with no begin before it cannot be completed.
        let orphan = [serde_json::to_vec(&[short(1), begin(1, "a")]).unwrap()];
        let error =
            rebuild_sealed(&project, &stack, None, &orphan, None, Path::new("s")).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("journal batch 1: the end of a create that no entry began"),
            "{error}"
        );
    }
}

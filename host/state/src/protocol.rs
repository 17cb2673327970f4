//! The service protocol's shared vocabulary: the limits client and service must agree on, and
//! the typed bodies of its requests and answers, written once for both.

/// The most journal entries one batch carries to a service that does not say how many it takes
/// (one older than [`Begun::journal_batch`]).
pub const JOURNAL_BATCH: usize = 100;
/// The most journal entries one batch carries to this service, as it tells each update it
/// begins (it refuses more): a batch costs a round trip and a commit whatever its size.
pub const JOURNAL_BATCH_MAX: usize = 1_000;
/// The most events one batch carries to a service that does not say how many it takes (one
/// older than [`Begun::events_batch`]).
pub const EVENTS_BATCH: usize = 50;
/// The most events one batch carries to this service, as it tells each update it begins (it
/// refuses more).
pub const EVENTS_BATCH_MAX: usize = 1_000;
/// The most event batches a client has in flight at once: the service stores a batch only once
/// every batch up to this many before it is stored.
pub const EVENTS_IN_FLIGHT: usize = 3;
/// The most journal batches a client has in flight at once on this service, as it tells each
/// update it begins: a batch that arrives before the one ahead of it (within this many of the
/// last stored) waits on the service for it, so a client may send the next batch while the
/// previous one commits. A service that does not say takes one at a time.
pub const JOURNAL_IN_FLIGHT: usize = 2;
/// The most creates one update's journal may have begun and not ended at once, as many as a
/// client has operations in flight: a service keeps them in memory, and refuses a batch that
/// would leave more.
pub const MAX_OPEN_CREATES: usize = plinth_engine::deployment::MAX_PARALLEL;
/// The most history entries one page carries.
pub const HISTORY_PAGE: usize = 500;

mod answers;

pub use answers::{
    AuditPage, Completed, Health, JournalEntries, ListedToken, Refusal, Revoked, Running,
    TokenCreated, TokenList, journal_batch_body,
};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;
use uuid::Uuid;

pub mod policy;
pub mod version;

use crate::checkpoint::PluginUse;
use crate::history::HistoryEntry;
use crate::logs::LogEntry;
use crate::tags::StackTags;

// Bodies that were once `json!` objects keep their fields in alphabetical order: the order a
// `json!` map wrote them in, so that what goes on the wire is byte for byte what it was.

/// `GET user`: who the token is.
#[derive(Debug, Serialize, Deserialize)]
pub struct Whoami {
    /// What it may do, as `plinth serve token list` says it.
    #[serde(default)]
    pub grants: String,
    pub name: String,
}

/// `GET stacks/P`: the project's stacks the token sees, by name.
#[derive(Debug, Serialize, Deserialize)]
pub struct StackList {
    pub stacks: Vec<ListedStack>,
}

/// One stack of a [`StackList`].
#[derive(Debug, Serialize, Deserialize)]
pub struct ListedStack {
    /// Whether an update holds it.
    pub locked: bool,
    pub name: String,
    /// Its resources, provider resources not counted.
    pub resources: usize,
    /// Its tags (absent from a service older than tags).
    #[serde(default, skip_serializing_if = "StackTags::is_empty")]
    pub tags: StackTags,
}

/// `POST stacks/P/S/rename`: the stack's new name.
#[derive(Debug, Serialize, Deserialize)]
pub struct RenameRequest {
    pub name: String,
}

/// `GET stacks/P/S/tags`: the stack's tags; also the answer to setting or removing one.
#[derive(Debug, Serialize, Deserialize)]
pub struct TagList {
    pub tags: StackTags,
}

/// `PUT stacks/P/S/tags/NAME`: the tag's value.
#[derive(Debug, Serialize, Deserialize)]
pub struct TagValue {
    pub value: String,
}

/// `POST stacks/P/S`: the stack created.
#[derive(Debug, Serialize, Deserialize)]
pub struct StackCreated {
    pub name: String,
    pub project: String,
}

/// `GET stacks/P/S`: the stack, and the update running on it if there is one.
#[derive(Debug, Serialize, Deserialize)]
pub struct StackFound {
    pub holder: Option<Holder>,
    pub name: String,
    pub project: String,
}

/// The update running on a stack, as others see it (in [`StackFound`], and in the answer 409
/// to a begin while it runs, which has no `expired`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Holder {
    /// Its lease has expired: the next update takes the stack over.
    #[serde(default)]
    pub expired: bool,
    /// The kind of update, as history names it.
    pub kind: String,
    /// When its lease runs out unless renewed, and when it started: Unix times.
    pub lease_expires: u64,
    pub started: u64,
    pub user: String,
}

/// `POST stacks/P/S/updates`: begin an update.
#[derive(Debug, Serialize, Deserialize)]
pub struct BeginRequest {
    /// The kind of update, as history names it.
    pub kind: String,
    /// Chosen by the client and sent again with a retry, which then gets the same update.
    #[serde(default)]
    pub request_id: Option<Uuid>,
    /// The stack's configuration keys as the update runs with them, for the console to show:
    /// never a secret's value.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub config: Vec<ConfigKey>,
    /// Asks for the base checkpoint as JSON within the answer ([`Checkpoint::Embedded`])
    /// rather than as a string of it: nothing to escape, nor to unescape. A service older than
    /// this field ignores it and sends the string.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub checkpoint_embedded: bool,
}

/// A key of a stack's configuration, as an update's client sends it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigKey {
    pub key: String,
    #[serde(default)]
    pub secret: bool,
    /// The value as text, for a key that is not secret; never a secret's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
}

/// A begun update, as its client gets it.
#[derive(Debug, Serialize, Deserialize)]
pub struct Begun {
    pub update_id: String,
    /// Shown once: the client acts on the update with it.
    pub lease_token: String,
    /// Seconds since the Unix epoch.
    pub lease_expires: i64,
    /// How long a lease lasts; the client renews at half of it.
    pub lease_seconds: f64,
    /// The version the update starts from (0: the empty state) and its checkpoint, secrets
    /// sealed as the client sealed them; none for version 0.
    #[serde(default)]
    pub base_version: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_checkpoint: Option<Checkpoint>,
    /// The base holds what an update that ended without completing (its lease expired, or it
    /// was cancelled) journaled: its interrupted operations are pending.
    #[serde(default)]
    pub recovered: bool,
    /// What journal batches may carry beyond whole entries: the short end of a create (none
    /// before this field was added).
    #[serde(default)]
    pub journal_extensions: Vec<String>,
    /// The policy packs the service enforces on the stack: the update must run them (none
    /// from a service before they were added).
    #[serde(default)]
    pub policy_packs: Vec<policy::RequiredPack>,
    /// The most journal entries, and events, one batch of this update may carry
    /// ([`JOURNAL_BATCH`] and [`EVENTS_BATCH`] from a service older than these fields).
    #[serde(default = "journal_batch")]
    pub journal_batch: usize,
    #[serde(default = "events_batch")]
    pub events_batch: usize,
    /// How many journal batches of this update may be in flight at once (1, in order, from a
    /// service older than this field).
    #[serde(default = "journal_in_flight")]
    pub journal_in_flight: usize,
}

fn journal_in_flight() -> usize {
    1
}

fn journal_batch() -> usize {
    JOURNAL_BATCH
}

fn events_batch() -> usize {
    EVENTS_BATCH
}

impl Begun {
    /// The answer to a begin: `self` with `base` (the base checkpoint's stored text) as a
    /// string of it, or, if `embedded`, as the JSON itself, copied in as it is stored: the
    /// service neither parses nor escapes a checkpoint of megabytes. The service wrote `base`
    /// when it made the version, from a checkpoint it had parsed and checked.
    pub fn answer(mut self, base: Option<String>, embedded: bool) -> Vec<u8> {
        let base = match base {
            Some(base) if embedded => base,
            base => {
                self.base_checkpoint = base.map(Checkpoint::Quoted);
                return serde_json::to_vec(&self).expect("a begun update serializes");
            }
        };
        self.base_checkpoint = None;
        let mut body = serde_json::to_vec(&self).expect("a begun update serializes");
        debug_assert_eq!(body.last(), Some(&b'}'));
        body.pop();
        body.reserve(base.len() + 24);
        body.extend_from_slice(b",\"base_checkpoint\":");
        body.extend_from_slice(base.as_bytes());
        body.push(b'}');
        body
    }
}

/// A checkpoint within an answer: a string of its JSON, as every service can send it, or the
/// JSON itself.
#[derive(Debug)]
pub enum Checkpoint {
    Quoted(String),
    Embedded(Box<RawValue>),
}

impl Checkpoint {
    /// The checkpoint's JSON text.
    pub fn into_text(self) -> String {
        match self {
            Checkpoint::Quoted(text) => text,
            Checkpoint::Embedded(raw) => Box::<str>::from(raw).into_string(),
        }
    }
}

impl Serialize for Checkpoint {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Checkpoint::Quoted(text) => serializer.serialize_str(text),
            Checkpoint::Embedded(raw) => raw.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for Checkpoint {
    /// Either form; read from JSON text (a checkpoint is never parsed into a tree here).
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = Box::<RawValue>::deserialize(deserializer)?;
        match raw.get().starts_with('"') {
            true => serde_json::from_str(raw.get())
                .map(Checkpoint::Quoted)
                .map_err(serde::de::Error::custom),
            false => Ok(Checkpoint::Embedded(raw)),
        }
    }
}

/// `POST updates/U/renew`: the lease's new end.
#[derive(Debug, Serialize, Deserialize)]
pub struct Renewed {
    /// Seconds since the Unix epoch.
    pub lease_expires: i64,
}

/// `POST stacks/P/S/cancel`: the update cancelled, if one was running.
#[derive(Debug, Serialize, Deserialize)]
pub struct Cancelled {
    pub cancelled: Option<Uuid>,
}

/// `POST updates/U/phases`: record a phase of the update.
#[derive(Debug, Serialize, Deserialize)]
pub struct PhaseRequest {
    /// A whole checkpoint replacing the state (an import, an edit by hand) instead of the
    /// journal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<String>,
    /// The history entry, as the client's history records it.
    pub entry: Value,
    /// Phases of an update are numbered from 1; a retry repeats the number.
    pub phase: i32,
    /// The plugins the phase used, for its checkpoint to record (the base's if absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plugins: Option<Vec<PluginUse>>,
}

/// The version a phase made.
#[derive(Debug, Serialize, Deserialize)]
pub struct Recorded {
    pub version: i64,
}

/// `POST updates/U/complete`: end the update.
#[derive(Debug, Serialize, Deserialize)]
pub struct CompleteRequest {
    /// The history entry of journal batches no phase recorded yet.
    #[serde(default)]
    pub entry: Option<Value>,
    /// How the update ended, as history says it.
    pub result: String,
}

/// `POST updates/U/journal`: a batch of journal entries, numbered from 1. The client writes
/// this shape by hand, its entries' JSON as the snapshot manager wrote it.
#[derive(Debug, Deserialize)]
pub struct JournalBatch {
    pub seq: i64,
    /// Kept as the client wrote them: each is checked, and stored as it came.
    pub entries: Vec<Box<RawValue>>,
}

/// `POST updates/U/events`: a batch of an update's events (a list), numbered from 1.
#[derive(Debug, Serialize, Deserialize)]
pub struct EventBatch<E> {
    pub seq: i64,
    pub events: E,
}

/// A batch of journal entries or events as the service stored it.
#[derive(Debug, Serialize, Deserialize)]
pub struct Stored {
    /// The batch had been stored already: this was a retry.
    pub retry: bool,
    pub seq: i64,
}

/// `GET stacks/P/S/history`: a page of the stack's versions, newest first.
#[derive(Debug, Serialize, Deserialize)]
pub struct HistoryPage<E> {
    pub total: i64,
    pub versions: Vec<Version<E>>,
}

/// One version, as history lists it.
#[derive(Debug, Serialize, Deserialize)]
pub struct Version<E> {
    pub entry: E,
    #[serde(default)]
    pub update_id: Option<Uuid>,
    /// Who ran it, as the service knows it: not what the entry says.
    #[serde(default)]
    pub user: Option<String>,
    #[serde(default)]
    pub version: i64,
}

/// `GET stacks/P/S/logs`: a page of the events of one version of a stack.
#[derive(Debug, Serialize, Deserialize)]
pub struct LogPage<H = HistoryEntry, E = LogEntry> {
    /// The version, as history counts them.
    pub number: i64,
    /// Its history entry.
    pub entry: H,
    pub events: Vec<E>,
    /// Where the next page starts (the `after` to ask with), if there is more.
    pub next: Option<i64>,
}

/// `DELETE stacks/P/S`: what the service keeps of the stack.
#[derive(Debug, Serialize, Deserialize)]
pub struct Removed {
    #[serde(default)]
    pub note: Option<String>,
}

/// Values to seal (`POST stacks/P/S/secrets/seal`), or opened (its answer to `open`).
#[derive(Debug, Serialize, Deserialize)]
pub struct Plaintexts {
    pub plaintexts: Vec<String>,
}

/// Values to open (`POST stacks/P/S/secrets/open`; an empty batch checks that the stack's secrets open
/// at all), or sealed (its answer to `seal`).
#[derive(Debug, Serialize, Deserialize)]
pub struct Ciphertexts {
    pub ciphertexts: Vec<String>,
}

/// `POST oidc/exchange`: an ID token a CI system issued a job.
#[derive(Debug, Serialize, Deserialize)]
pub struct ExchangeRequest {
    pub token: String,
}

/// What the service gave for an ID token.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Exchanged {
    /// How long it lasts, in seconds.
    pub expires_in: u64,
    /// What it may do, as `plinth serve token list` says it.
    pub grants: String,
    /// The token's id, as `plinth serve token revoke` takes it.
    #[serde(default)]
    pub id: String,
    /// The access token, to carry as any other.
    pub token: String,
    /// Who the service knows its holder as (the ID token's subject and issuer).
    pub user: String,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// `typed` goes on the wire byte for byte as the `json!` object it replaced did.
    fn same_bytes(typed: impl Serialize, replaced: Value) {
        assert_eq!(
            serde_json::to_string(&typed).unwrap(),
            serde_json::to_string(&replaced).unwrap()
        );
    }

    #[test]
    fn answers_once_written_with_json_are_written_as_they_were() {
        let id = Uuid::from_u128(7);
        same_bytes(
            Whoami {
                grants: "admin on p".into(),
                name: "alice".into(),
            },
            json!({ "name": "alice", "grants": "admin on p" }),
        );
        same_bytes(
            StackList {
                stacks: vec![ListedStack {
                    locked: true,
                    name: "dev".into(),
                    resources: 3,
                    tags: Default::default(),
                }],
            },
            json!({ "stacks": [{ "name": "dev", "locked": true, "resources": 3 }] }),
        );
        let holder = Holder {
            expired: false,
            kind: "update".into(),
            lease_expires: 20,
            started: 10,
            user: "bob".into(),
        };
        same_bytes(
            StackFound {
                holder: Some(holder.clone()),
                name: "dev".into(),
                project: "p".into(),
            },
            json!({ "project": "p", "name": "dev", "holder": serde_json::to_value(&holder).unwrap() }),
        );
        same_bytes(
            StackFound {
                holder: None,
                name: "dev".into(),
                project: "p".into(),
            },
            json!({ "project": "p", "name": "dev", "holder": null }),
        );
        same_bytes(
            StackCreated {
                name: "dev".into(),
                project: "p".into(),
            },
            json!({ "project": "p", "name": "dev" }),
        );
        same_bytes(
            Cancelled {
                cancelled: Some(id),
            },
            json!({ "cancelled": id }),
        );
        same_bytes(Renewed { lease_expires: 9 }, json!({ "lease_expires": 9 }));
        same_bytes(
            Stored {
                retry: true,
                seq: 4,
            },
            json!({ "seq": 4, "retry": true }),
        );
        same_bytes(Recorded { version: 2 }, json!({ "version": 2 }));
        let version = Version {
            entry: json!({ "kind": "update" }),
            update_id: Some(id),
            user: Some("bob".into()),
            version: 2,
        };
        same_bytes(
            HistoryPage {
                total: 1,
                versions: vec![version],
            },
            json!({ "versions": [{ "version": 2, "update_id": id, "user": "bob", "entry": { "kind": "update" } }], "total": 1 }),
        );
        same_bytes(
            Removed {
                note: Some("kept".into()),
            },
            json!({ "note": "kept" }),
        );
        same_bytes(
            Ciphertexts {
                ciphertexts: vec!["v1:x".into()],
            },
            json!({ "ciphertexts": ["v1:x"] }),
        );
        same_bytes(
            Plaintexts {
                plaintexts: vec!["1".into()],
            },
            json!({ "plaintexts": ["1"] }),
        );
        same_bytes(
            Exchanged {
                expires_in: 60,
                grants: "write on p".into(),
                id: "abc".into(),
                token: "t".into(),
                user: "ci@example.com".into(),
            },
            json!({ "token": "t", "id": "abc", "user": "ci@example.com", "grants": "write on p", "expires_in": 60 }),
        );
    }

    fn begun(base_version: i64) -> Begun {
        Begun {
            update_id: "u".into(),
            lease_token: "t".into(),
            lease_expires: 9,
            lease_seconds: 30.0,
            base_version,
            base_checkpoint: None,
            recovered: false,
            journal_extensions: Vec::new(),
            policy_packs: Vec::new(),
            journal_batch: JOURNAL_BATCH_MAX,
            events_batch: EVENTS_BATCH_MAX,
            journal_in_flight: JOURNAL_IN_FLIGHT,
        }
    }

    #[test]
    fn the_base_checkpoint_goes_embedded_only_when_asked_and_reads_the_same_either_way() {
        let base = r#"{"version":4,"snapshot":{"resources":[{"urn":"a\"b","id":"é"}]}}"#;
        let embedded = begun(3).answer(Some(base.to_owned()), true);
        let quoted = begun(3).answer(Some(base.to_owned()), false);
        let tree = |body: &[u8]| serde_json::from_slice::<Value>(body).unwrap();
        assert_eq!(
            tree(&embedded)["base_checkpoint"],
            tree(base.as_bytes()),
            "copied in as JSON"
        );
        assert_eq!(
            tree(&quoted)["base_checkpoint"],
            json!(base),
            "a string, as before"
        );
        // What a client before `checkpoint_embedded` reads: a string, or none.
        #[derive(Deserialize)]
        struct OldBegun {
            base_checkpoint: Option<String>,
            base_version: i64,
        }
        let old: OldBegun = serde_json::from_slice(&quoted).unwrap();
        assert_eq!(
            (old.base_checkpoint.as_deref(), old.base_version),
            (Some(base), 3)
        );
        let none: OldBegun = serde_json::from_slice(&begun(0).answer(None, false)).unwrap();
        assert_eq!((none.base_checkpoint, none.base_version), (None, 0));
        // Either form reads back as the checkpoint's text.
        for body in [&embedded, &quoted] {
            let read: Begun = serde_json::from_slice(body).unwrap();
            assert_eq!(read.base_checkpoint.unwrap().into_text(), base);
            assert_eq!(read.base_version, 3);
            assert_eq!(read.journal_batch, JOURNAL_BATCH_MAX);
        }
        let read: Begun = serde_json::from_slice(&begun(0).answer(None, true)).unwrap();
        assert!(read.base_checkpoint.is_none());
    }

    #[test]
    fn a_service_that_does_not_tell_its_batch_sizes_gets_the_old_ones() {
        let mut old = serde_json::to_value(begun(0)).unwrap();
        let fields = old.as_object_mut().unwrap();
        fields.remove("journal_batch");
        fields.remove("events_batch");
        fields.remove("journal_in_flight");
        let read: Begun = serde_json::from_value(old).unwrap();
        assert_eq!(
            (
                read.journal_batch,
                read.events_batch,
                read.journal_in_flight
            ),
            (JOURNAL_BATCH, EVENTS_BATCH, 1),
            "one journal batch at a time, in order"
        );
    }

    #[test]
    fn requests_once_written_with_json_are_written_as_they_were() {
        // The client's transport sends a body as a JSON value, whose keys serialize sorted.
        fn sent(typed: impl Serialize) -> Value {
            serde_json::to_value(typed).unwrap()
        }
        let id = Uuid::from_u128(7);
        assert_eq!(
            sent(BeginRequest {
                kind: "update".into(),
                request_id: Some(id),
                config: Vec::new(),
                checkpoint_embedded: false,
            }),
            json!({ "kind": "update", "request_id": id.to_string() })
        );
        let entry = json!({ "kind": "update" });
        assert_eq!(
            sent(PhaseRequest {
                checkpoint: None,
                entry: entry.clone(),
                phase: 1,
                plugins: None,
            }),
            json!({ "phase": 1, "entry": entry })
        );
        assert_eq!(
            sent(CompleteRequest {
                entry: None,
                result: "succeeded".into(),
            }),
            json!({ "result": "succeeded", "entry": null })
        );
        assert_eq!(
            sent(ExchangeRequest { token: "id".into() }),
            json!({ "token": "id" })
        );
    }
}

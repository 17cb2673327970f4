//! The bodies the service once wrote as `json!` objects — refusals, health, tokens, the audit
//! log, an update's journal — and the journal batch the client writes by hand. Fields are in
//! alphabetical order: a `json!` object's keys serialize sorted, so the bytes on the wire stay
//! as they were.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Any answer that is not a success: what was wrong and what to do about it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Refusal {
    /// Set on a 403 that refuses the token, which a client tells from a lost lease (also 403).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub forbidden: bool,
    /// On a 409 to a begin: the update that holds the stack.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holder: Option<Running>,
    pub message: String,
}

impl Refusal {
    /// A refusal that says `message` and nothing more.
    pub fn saying(message: impl Into<String>) -> Refusal {
        Refusal {
            forbidden: false,
            holder: None,
            message: message.into(),
        }
    }
}

/// The update running on a stack, in a 409 to a begin: a [`Holder`](super::Holder) without
/// `expired` (it has not: it holds the stack).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Running {
    /// The kind of update, as history names it.
    pub kind: String,
    /// When its lease runs out unless renewed, and when it started: Unix times.
    pub lease_expires: u64,
    pub started: u64,
    pub user: String,
}

/// `GET /livez` and `GET /readyz`: `live`, or `ready` with the schema the database holds.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Health {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<i64>,
    pub status: String,
}

/// `POST tokens`: the token made, shown this once.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TokenCreated {
    /// Seconds it lasts; none for a token that lasts until revoked.
    pub expires_in: Option<u64>,
    pub grants: String,
    pub id: String,
    pub token: String,
    pub user: String,
}

/// `GET tokens`: a user's tokens, never a token itself.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TokenList {
    pub tokens: Vec<ListedToken>,
}

/// One token, as `GET tokens` lists it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ListedToken {
    pub created: String,
    /// It is the token the request was made with.
    pub current: bool,
    pub grants: String,
    pub id: String,
    pub last_used: String,
    /// What its maker called it.
    pub name: String,
    pub status: String,
    pub user: String,
}

/// `DELETE tokens/ID`: the ids of the tokens revoked.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Revoked {
    pub revoked: Vec<String>,
}

/// `GET audit`: a page of the audit log, newest first, and the `before` of the next page.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AuditPage<E = Value> {
    pub entries: Vec<E>,
    pub next: Option<i64>,
}

/// `GET updates/U/journal`: what an update journaled, in order.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JournalEntries<E = Value> {
    pub entries: Vec<E>,
}

/// `POST updates/U/complete`: an empty object.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Completed {}

/// The body of `POST updates/U/journal` (a [`JournalBatch`](super::JournalBatch)): batch `seq`
/// of `entries`, a JSON array of the entries as the snapshot manager wrote them (secrets
/// sealed), taken as it is rather than parsed and written again.
pub fn journal_batch_body(seq: u64, entries: &[u8]) -> Vec<u8> {
    let mut body = Vec::with_capacity(entries.len() + 32);
    body.extend_from_slice(b"{\"seq\":");
    body.extend_from_slice(seq.to_string().as_bytes());
    body.extend_from_slice(b",\"entries\":");
    body.extend_from_slice(entries);
    body.push(b'}');
    body
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::protocol::JournalBatch;

    /// `typed` goes on the wire byte for byte as the `json!` object it replaced did.
    fn same_bytes(typed: impl Serialize, replaced: Value) {
        assert_eq!(
            serde_json::to_string(&typed).unwrap(),
            serde_json::to_string(&replaced).unwrap()
        );
    }

    #[test]
    fn refusals_are_written_as_they_were() {
        same_bytes(Refusal::saying("no"), json!({ "message": "no" }));
        let forbidden = Refusal {
            forbidden: true,
            ..Refusal::saying("no")
        };
        let mut body = json!({ "message": "no" });
        body["forbidden"] = json!(true);
        same_bytes(forbidden, body);
        let busy = Refusal {
            holder: Some(Running {
                kind: "update".into(),
                lease_expires: 20,
                started: 10,
                user: "bob".into(),
            }),
            ..Refusal::saying("busy")
        };
        let mut body = json!({ "message": "busy" });
        body["holder"] = json!({
            "user": "bob", "kind": "update", "started": 10, "lease_expires": 20,
        });
        same_bytes(busy, body);
    }

    #[test]
    fn answers_once_written_with_json_are_written_as_they_were() {
        same_bytes(
            Health {
                schema: None,
                status: "live".into(),
            },
            json!({ "status": "live" }),
        );
        same_bytes(
            Health {
                schema: Some(7),
                status: "ready".into(),
            },
            json!({ "status": "ready", "schema": 7 }),
        );
        for expires_in in [None, Some(60)] {
            same_bytes(
                TokenCreated {
                    expires_in,
                    grants: "write on p".into(),
                    id: "abc".into(),
                    token: "t".into(),
                    user: "alice".into(),
                },
                json!({
                    "token": "t", "id": "abc", "user": "alice", "grants": "write on p",
                    "expires_in": expires_in,
                }),
            );
        }
        same_bytes(
            TokenList {
                tokens: vec![ListedToken {
                    created: "2026-01-01".into(),
                    current: true,
                    grants: "read on p".into(),
                    id: "abc".into(),
                    last_used: "never".into(),
                    name: "ci".into(),
                    status: "active".into(),
                    user: "alice".into(),
                }],
            },
            json!({ "tokens": [json!({
                "id": "abc", "user": "alice", "name": "ci", "grants": "read on p",
                "created": "2026-01-01", "status": "active", "last_used": "never",
                "current": true,
            })] }),
        );
        same_bytes(
            Revoked {
                revoked: vec!["abc".into()],
            },
            json!({ "revoked": ["abc"] }),
        );
        let entry = json!({ "id": 3, "action": "token.create" });
        for next in [None, Some(3)] {
            same_bytes(
                AuditPage {
                    entries: vec![entry.clone()],
                    next,
                },
                json!({ "entries": [entry], "next": next }),
            );
        }
        same_bytes(
            JournalEntries {
                entries: vec![entry.clone()],
            },
            json!({ "entries": [entry] }),
        );
        same_bytes(Completed {}, json!({}));
    }

    /// The batch the client writes by hand is the one it wrote before, and reads as the
    /// service's [`JournalBatch`], its entries as they were sent.
    #[test]
    fn a_journal_batch_body_is_the_batch_the_service_reads() {
        let entries = br#"[{"kind":"begin","n":1},{"kind":"end"}]"#;
        let body = journal_batch_body(12, entries);
        let old = format!("{{\"seq\":{},\"entries\":", 12).into_bytes();
        assert_eq!(body, [&old[..], &entries[..], b"}"].concat());
        let batch: JournalBatch = serde_json::from_slice(&body).unwrap();
        assert_eq!(batch.seq, 12);
        let read: Vec<&str> = batch.entries.iter().map(|e| e.get()).collect();
        assert_eq!(read, [r#"{"kind":"begin","n":1}"#, r#"{"kind":"end"}"#]);
    }
}

//! Edits of a stack's state by hand (`plinth state …`): load under the lock, change the
//! snapshot, check it, write it back. Secrets are never opened: their ciphertext is carried
//! through as it is, so an edit needs no passphrase and no plaintext exists at any point.

use std::path::Path;

use plinth_engine::names::{ProjectName, StackName};
use plinth_engine::snapshot::Snapshot;
use serde::{Deserialize, Serialize};

use plinth_state::{Checkpoint, InvalidState, LoadedStack};

use crate::error::BackendError;
use crate::secrets::{Crypter, SecretsError};

/// A stack's state loaded for an edit, its secrets still sealed. Only the update it was loaded
/// by can write it back.
#[derive(Debug)]
pub struct StateEdit {
    loaded: LoadedStack,
}

impl StateEdit {
    /// The state as loaded for an edit, its secrets opened by [`Verbatim`].
    pub(crate) fn new(loaded: LoadedStack) -> StateEdit {
        StateEdit { loaded }
    }

    pub fn snapshot(&self) -> &Snapshot {
        &self.loaded.snapshot
    }

    pub fn snapshot_mut(&mut self) -> &mut Snapshot {
        &mut self.loaded.snapshot
    }

    /// A journal from an interrupted update was replayed on top of the checkpoint.
    pub fn recovered(&self) -> bool {
        self.loaded.recovered
    }

    /// The state as loaded, with what its load found (a torn journal end).
    pub fn loaded(&self) -> &LoadedStack {
        &self.loaded
    }
}

/// Stands in for a secret's plaintext while the secret stays sealed.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Ciphertext {
    #[serde(rename = "plinth:ciphertext")]
    ciphertext: String,
}

/// "Opens" a secret into a [`Ciphertext`] holding its sealed form and "seals" that back into
/// the same sealed form. Anything else handed to `seal` (a secret stored unsealed by an older
/// plinth) really is plaintext, and is sealed by the stack's own crypter.
pub(crate) struct Verbatim<'a>(pub(crate) &'a dyn Crypter);

impl Crypter for Verbatim<'_> {
    fn seal(&self, plaintext: &str) -> Result<String, SecretsError> {
        match serde_json::from_str::<Ciphertext>(plaintext) {
            Ok(carried) => Ok(carried.ciphertext),
            Err(_) => self.0.seal(plaintext),
        }
    }

    fn open(&self, sealed: &str) -> Result<String, SecretsError> {
        let carried = Ciphertext {
            ciphertext: sealed.to_owned(),
        };
        Ok(serde_json::to_string(&carried).expect("a string serializes"))
    }
}

impl StateEdit {
    /// The state of checkpoint `bytes` (named `origin` in errors), for an edit: its secrets stay
    /// sealed.
    pub(crate) fn parse(
        bytes: &[u8],
        stack: &StackName,
        origin: &Path,
        crypter: &dyn Crypter,
        recovered: bool,
    ) -> Result<StateEdit, BackendError> {
        let checkpoint =
            Checkpoint::decode_for_edit(bytes, stack, origin, &Verbatim(crypter))?.upgraded();
        Ok(StateEdit {
            loaded: LoadedStack {
                snapshot: checkpoint.snapshot,
                recovered,
                plugins: checkpoint.plugins,
                torn: None,
                running: None,
            },
        })
    }

    /// The edited state as checkpoint JSON, if it passes the integrity checks.
    pub(crate) fn into_checkpoint(
        self,
        project: &ProjectName,
        stack: &StackName,
        crypter: &dyn Crypter,
    ) -> Result<Vec<u8>, BackendError> {
        let LoadedStack {
            snapshot, plugins, ..
        } = self.loaded;
        let invalid = |error: InvalidState| BackendError::InvalidEdit {
            stack: stack.to_string(),
            error,
        };
        (snapshot.verify_integrity()).map_err(|e| invalid(e.into()))?;
        (snapshot.check_fields()).map_err(|e| invalid(e.into()))?;
        let checkpoint = Checkpoint::new(project, stack, snapshot).with_plugins(plugins);
        Ok(checkpoint.to_json(&Verbatim(crypter))?)
    }
}

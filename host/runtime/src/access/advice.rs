//! How to tell a user to grant a plugin what it lacks. The runtime knows what a plugin asks for
//! and what the sandbox refused it; where grants are written (for plinth's CLI, `Plinth.yaml`)
//! is the embedder's business, so the embedder words the advice.

use crate::access::grants::Grants;
use crate::access::missing::Missing;

/// Words the advice that follows a refusal. Set it with
/// [`Runtime::with_grant_advice`](crate::Runtime::with_grant_advice).
pub trait GrantAdvice: Send + Sync {
    /// Follows the list of what `plugin` asks for and is not granted (`missing`, never empty):
    /// how to grant all of it, given what it is `granted` already.
    fn to_load(&self, plugin: &str, missing: &[Missing], granted: &Grants) -> String;

    /// Completes "to allow it, …" after an attempt of `plugin` the sandbox refused: how to grant
    /// what `needed` names.
    fn to_allow(&self, plugin: &str, needed: &Missing) -> String;
}

/// Advice that names the grants without saying where they are written: for embedders that set
/// none of their own.
#[derive(Debug, Clone, Copy, Default)]
pub struct PlainAdvice;

impl GrantAdvice for PlainAdvice {
    fn to_load(&self, plugin: &str, missing: &[Missing], _granted: &Grants) -> String {
        let them = if missing.len() == 1 { "it" } else { "them" };
        format!("Grant {them} to plugin `{plugin}` to load it.")
    }

    fn to_allow(&self, plugin: &str, needed: &Missing) -> String {
        format!("grant plugin `{plugin}` {needed}")
    }
}

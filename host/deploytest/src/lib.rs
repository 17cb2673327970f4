//! In-process fakes for testing plinth's engine and what stores its state, as Pulumi's
//! `deploytest`: a provider whose world is a map in memory ([`FakeProvider`]), a program
//! scripted as a list of declarations ([`ScriptProgram`], built with [`decl`]), a persister that
//! checks every intermediate snapshot ([`CheckingPersister`]), a [`Harness`] that runs them and
//! keeps the snapshot across runs, and hand-built states and journal entries ([`fixtures`]).
//!
//! ```no_run
//! # async fn demo() {
//! use plinth_deploytest::{Harness, decl};
//!
//! let mut harness = Harness::new();
//! let outcome = harness.up(vec![decl("a").input("size", 1.0)]).await;
//! assert!(outcome.errors.is_empty());
//! assert_eq!(harness.provider.calls(), ["create a"]);
//! # }
//! ```

pub mod fixtures;
mod harness;
mod persister;
mod program;
mod provider;

pub use harness::{EventWatcher, Harness, bounded};
pub use persister::CheckingPersister;
pub use program::{Decl, Input, ScriptProgram, component, decl, provider_decl};
pub use provider::{FakeProvider, FakeProviders};

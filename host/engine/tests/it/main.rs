//! The engine's integration tests, in one binary: one link where a binary per file linked six
//! times.

mod deployment;
mod lifecycle;
mod plan_guard;
mod policy;
mod properties;
mod refresh;
mod write_only;

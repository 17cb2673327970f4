//! Access: the grants and their advice: what a project grants a plugin (directories, environment,
//! network patterns), what a plugin asks for and the check of one against the other before it
//! loads, and the words that tell a user which grant a refusal lacks.

pub(crate) mod advice;
pub(crate) mod capabilities;
pub(crate) mod configured;
pub(crate) mod dir_advice;
pub(crate) mod endpoint;
pub(crate) mod grant_check;
pub(crate) mod grant_overlap;
pub(crate) mod grants;
pub(crate) mod missing;

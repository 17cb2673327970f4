//! What a language's emitter is ([`Emitter`]), what it is given beyond the package
//! ([`Options`]) and what it writes ([`GeneratedFile`]).

use std::path::PathBuf;

use super::model::{Package, Reserved};

/// What an emitter needs beyond the package.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The language's plinth SDK, as a path relative to the generated package; `None` for a
    /// versioned dependency.
    pub sdk_path: Option<PathBuf>,
}

/// One file of a generated SDK.
#[derive(Debug, Clone, PartialEq)]
pub struct GeneratedFile {
    /// Relative to the SDK's directory, with `/` separators.
    pub path: String,
    pub contents: String,
}

/// A language's half of the generator. Emitters are pure: the same package and options give
/// the same files, byte for byte.
pub trait Emitter: Sync {
    /// The id of the guest language whose SDKs it writes ([`crate::guest::GuestLanguage::id`]): the
    /// `--lang` that picks it, and the folder (`sdks/<provider>/<id>`) it writes to by default.
    fn language(&self) -> &'static str;
    /// The names the emitter's generated code uses itself; the model keeps the package's names
    /// apart from them.
    fn reserved(&self) -> Reserved;
    /// The SDK's files.
    fn emit(&self, package: &Package, options: &Options) -> Vec<GeneratedFile>;
}

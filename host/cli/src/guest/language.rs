//! What every guest language implements ([`GuestLanguage`]) and what a build is for ([`Role`]),
//! apart from the list of languages, which the languages' own modules need not see.

use std::path::{Path, PathBuf};

use anyhow::Result;
use plinth_runtime::ProgramCode;

/// What the component is for: the WIT world it is built against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Program,
    Provider,
    PolicyPack,
}

impl Role {
    pub(super) fn world(self) -> &'static str {
        match self {
            Role::Program => "program",
            Role::Provider => "provider-plugin",
            Role::PolicyPack => "policy-pack",
        }
    }
}

/// One guest language: how plinth recognises a guest written in it, the SDK files it embeds
/// for it, and how it builds one.
pub trait GuestLanguage: Sync {
    /// The language's id: `plinth gen-sdk --lang`, the folder of generated SDKs
    /// (`sdks/<provider>/<id>`) and the key of its SDK emitter.
    fn id(&self) -> &'static str;
    /// Other spellings `--lang` accepts.
    fn aliases(&self) -> &'static [&'static str] {
        &[]
    }
    /// Its name in messages.
    fn name(&self) -> &'static str;
    /// The file whose presence makes a directory a guest in this language.
    fn manifest(&self) -> &'static str;
    /// Whether `dir` is a guest in this language.
    fn detect(&self, dir: &Path) -> bool {
        dir.join(self.manifest()).is_file()
    }
    /// The SDK files plinth embeds and writes out for this language's builds, as
    /// `(path in the repository, contents)`; none when its build fetches the SDK itself.
    fn sdk_files(&self) -> &'static [SdkFile] {
        &[]
    }
    /// Builds the guest in `dir` as a `role` (or finds it in the cache) and returns its
    /// component, whole: one self-contained file, as `plinth plugin build` ships it. `what`
    /// names it in messages.
    fn build(&self, dir: &Path, role: Role, what: &str) -> Result<PathBuf>;
    /// Builds the guest in `dir` to run it here: where the language has a prebuilt runtime
    /// for `role`, that runtime and the code it loads at run time (an edit rebuilds only the
    /// code), else the whole component.
    fn build_to_run(&self, dir: &Path, role: Role, what: &str) -> Result<Built> {
        Ok(Built {
            component: self.build(dir, role, what)?,
            code: None,
        })
    }
}

/// A guest built to run: its component, and the code that component loads at run time when
/// it is a prebuilt language runtime.
#[derive(Debug, Clone)]
pub struct Built {
    pub component: PathBuf,
    pub code: Option<ProgramCode>,
}

/// An embedded file: its path in the repository and its contents.
pub type SdkFile = (&'static str, &'static str);

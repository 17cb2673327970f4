//! `plinth gen-sdk`: typed SDKs generated from a provider's schema, the way Pulumi generates
//! its SDKs from a package schema.
//!
//! The generator has a language-neutral middle and one small emitter per language:
//! [`model::Package::new`] turns the provider's `info` into resources, functions and named
//! types whose names are split into words, unique among their siblings and kept apart from the
//! names the emitter's own code uses ([`Emitter::reserved`]); an [`Emitter`] cases those words
//! its language's way, spells its keywords, and writes the files with the shared helpers of
//! [`code`]. Emitters are keyed by the id of their guest language (`crate::guest`), which is
//! what `--lang` takes. To add a language, write an emitter (see `rust.rs`, `ts.rs`, `py.rs`),
//! add it to [`EMITTERS`], and give [`model::Name`] the casing it needs (it has snake, camel
//! and Pascal case); docs/languages.md has the whole list. Unit tests of an emitter run it on
//! `tests.rs`'s `kitchen_sink` schema; the e2e tests check committed SDKs with `--check`.

pub(crate) mod code;
mod emitter;
pub(crate) mod model;
pub(crate) mod py;
pub(crate) mod rust;
pub(crate) mod ts;

use std::path::{Component, Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::Args;
use clap::builder::{PossibleValue, PossibleValuesParser};

use crate::guest;
use crate::home::plinth_home;
use crate::plugin::store::Store;
use crate::plugin::{locate, provider_info};
pub use emitter::{Emitter, GeneratedFile, Options};
pub use model::Package;
use plinth_engine::shown::escape_controls;

#[derive(Args)]
pub struct GenSdkArgs {
    /// The provider: an installed `name[@version]`, a .wasm file, or its source directory (a
    /// Rust crate, a TypeScript/JavaScript package or a Python project).
    #[arg(value_name = "NAME[@VERSION] | FILE | SOURCE-DIR")]
    plugin: String,
    /// The language of the SDK.
    #[arg(long, value_parser = languages())]
    lang: String,
    /// Where to write the SDK (default: `sdks/<provider>/<lang>`).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// The plinth SDK of the language to depend on by path (for Rust, the `plinth-sdk` crate's
    /// directory; for TypeScript, `sdk-guest/js`); by default the SDK is a versioned
    /// dependency. A Python SDK needs none: plinth provides `plinth` when it builds a program.
    #[arg(long, value_name = "DIR")]
    sdk_path: Option<PathBuf>,
    /// Write nothing; fail if the files in the output directory differ from what would be
    /// generated (for CI: the committed SDK is up to date).
    #[arg(long)]
    check: bool,
}

/// The emitters, one per guest language that has one.
static EMITTERS: &[&dyn Emitter] = &[&rust::RustEmitter, &ts::TsEmitter, &py::PyEmitter];

/// The emitter of the language `lang` names (its id or an alias).
pub fn emitter(lang: &str) -> Option<&'static dyn Emitter> {
    let id = guest::by_id(lang)?.id();
    EMITTERS.iter().copied().find(|e| e.language() == id)
}

/// `--lang`'s values: the languages with an emitter, by id, with their aliases.
fn languages() -> PossibleValuesParser {
    PossibleValuesParser::new(EMITTERS.iter().map(|e| {
        let language = guest::by_id(e.language()).expect("an emitter's language is registered");
        PossibleValue::new(language.id())
            .aliases(language.aliases().iter().copied())
            .help(language.name())
    }))
}

/// The files of the SDK `emitter` writes for the provider `info`, and the notes on what was
/// renamed or skipped.
pub fn generate(
    info: &plinth_engine::provider::ProviderInfo,
    emitter: &dyn Emitter,
    options: &Options,
) -> (Vec<GeneratedFile>, Vec<String>) {
    let package = Package::new(info, emitter.reserved());
    let files = emitter.emit(&package, options);
    (files, package.notes)
}

pub async fn run(start: &Path, args: GenSdkArgs) -> Result<ExitCode> {
    let store = Store::in_home(&plinth_home()?);
    let (path, _) = locate(&store, &args.plugin).await?;
    let info = provider_info(&path).await?;
    let emitter = emitter(&args.lang).expect("clap checked --lang");
    let lang = emitter.language();
    let out = match &args.out {
        Some(out) => start.join(out),
        None => start.join("sdks").join(&info.name).join(lang),
    };
    let sdk_path = match &args.sdk_path {
        Some(sdk) => {
            let sdk = start.join(sdk);
            if !sdk.is_dir() {
                bail!("--sdk-path {}: no such directory", sdk.display());
            }
            Some(relative_to(&sdk, &out)?)
        }
        None => None,
    };
    let (files, notes) = generate(&info, emitter, &Options { sdk_path });
    for note in &notes {
        // A note quotes names from the plugin's schema.
        eprintln!("note: {}", escape_controls(note));
    }
    if args.check {
        let stale: Vec<&str> = (files.iter())
            .filter(|f| {
                std::fs::read_to_string(out.join(&f.path)).ok().as_ref() != Some(&f.contents)
            })
            .map(|f| f.path.as_str())
            .collect();
        if !stale.is_empty() {
            eprintln!(
                "The {} SDK of `{}` in {} is out of date ({}); regenerate it with `plinth gen-sdk`.",
                lang,
                info.name,
                out.display(),
                stale.join(", ")
            );
            return Ok(ExitCode::FAILURE);
        }
        println!(
            "The {} SDK of `{}` in {} is up to date.",
            lang,
            info.name,
            out.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    write_files(&out, &files)?;
    let count = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    println!(
        "Wrote the {} SDK of `{}` {} ({}, {}) to {}.",
        lang,
        info.name,
        info.version,
        count(info.resources.len(), "resource type"),
        count(info.functions.len(), "function"),
        out.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Writes each file whole (a temporary file renamed into place): never a half-written one.
fn write_files(dir: &Path, files: &[GeneratedFile]) -> Result<()> {
    for file in files {
        let path = dir.join(&file.path);
        let parent = path.parent().unwrap_or(dir);
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
        let mut temp = tempfile::NamedTempFile::new_in(parent)
            .with_context(|| format!("cannot write in {}", parent.display()))?;
        std::io::Write::write_all(&mut temp, file.contents.as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))?;
        temp.persist(&path)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

/// `target` as a path relative to `base` (which need not exist yet).
fn relative_to(target: &Path, base: &Path) -> Result<PathBuf> {
    let absolute = |p: &Path| -> Result<PathBuf> {
        let p =
            std::path::absolute(p).with_context(|| format!("cannot resolve {}", p.display()))?;
        // `..` resolved by hand: the base may not exist, so it cannot be canonicalized.
        let mut out = PathBuf::new();
        for component in p.components() {
            match component {
                Component::ParentDir => {
                    out.pop();
                }
                Component::CurDir => {}
                other => out.push(other),
            }
        }
        Ok(out)
    };
    let target = absolute(target)?;
    let base = absolute(base)?;
    let common = (target.components())
        .zip(base.components())
        .take_while(|(a, b)| a == b)
        .count();
    let mut relative = PathBuf::new();
    for _ in base.components().skip(common) {
        relative.push("..");
    }
    for component in target.components().skip(common) {
        relative.push(component);
    }
    Ok(relative)
}

#[cfg(test)]
mod tests;

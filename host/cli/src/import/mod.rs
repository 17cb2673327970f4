//! `plinth import`: adopts resources that already exist into the stack, as Pulumi's `import`
//! does. Each is read through its provider; a preview shows the import, which runs once
//! confirmed; then plinth prints (or writes with `--out`) the code that declares them on the
//! providers' generated SDKs, in the program's language, with the inputs read back, so that
//! once it is in the program the next `preview` shows no change.

pub mod codegen;
mod file;
pub mod program;
pub mod wanted;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, anyhow, bail};
use clap::Args;
use plinth_engine::shown::escape_controls;

use crate::deploy::adopt::{AdoptOptions, Imported, adopt};
use crate::gen_sdk::model::Package;
use crate::run_options::RunOptions;
use crate::{Workspace, guest};
use codegen::{Code, Declaration, Language, Reference};
pub use wanted::Wanted;

#[derive(Args)]
pub struct ImportArgs {
    /// The resource's type token, such as `postgresql:Role`.
    #[arg(value_name = "TYPE", required_unless_present = "file")]
    ty: Option<String>,
    /// The name to give it in the stack (its URN's last part, the name in the program).
    #[arg(value_name = "NAME", required_unless_present = "file")]
    name: Option<String>,
    /// What its provider finds it by: its provider id (a role's name or OID, a pet's name, ...).
    #[arg(value_name = "ID", required_unless_present = "file")]
    id: Option<String>,
    /// Make it a child of this resource of the stack (a URN, or the name of a resource in the
    /// state); the code refers to it by a variable named after it.
    #[arg(long, value_name = "URN", conflicts_with = "file")]
    parent: Option<String>,
    /// Manage it with this provider resource of the stack instead of the default provider (a
    /// URN, or the name of a provider resource in the state).
    #[arg(long, value_name = "URN", conflicts_with = "file")]
    provider: Option<String>,
    /// Import every resource a JSON file lists (Pulumi's format):
    /// `{"resources": [{"type": T, "name": N, "id": I, "parent": URN, "provider": URN}]}`,
    /// `parent` and `provider` optional.
    #[arg(short, long, value_name = "FILE", conflicts_with_all = ["ty", "name", "id"])]
    file: Option<PathBuf>,
    /// Write the code to FILE instead of printing it.
    #[arg(short, long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// The language of the code (default: the program's): rust, typescript or python.
    #[arg(long, value_name = "LANG")]
    language: Option<String>,
    /// Do not ask for confirmation.
    #[arg(short, long)]
    yes: bool,
    /// How components are compiled (see `plinth up --help`).
    #[arg(long, value_enum, env = "PLINTH_COMPILER", default_value_t)]
    compiler: crate::compiler::Compiler,
}

/// `plinth import`, with relative paths taken from `start`.
pub async fn run(
    start: &Path,
    open: impl FnOnce() -> Result<Workspace>,
    args: ImportArgs,
) -> Result<ExitCode> {
    let out = args.out.as_ref().map(|o| start.join(o));
    let wanted = match &args.file {
        Some(path) => file::read(&start.join(path))?,
        None => {
            let missing = || anyhow!("TYPE, NAME and ID are required without --file");
            vec![Wanted {
                ty: args.ty.clone().ok_or_else(missing)?,
                name: args.name.clone().ok_or_else(missing)?,
                id: args.id.clone().ok_or_else(missing)?,
                parent: args.parent.clone(),
                provider: args.provider.clone(),
            }]
        }
    };
    for want in &wanted {
        want.check()
            .map_err(|e| anyhow!("cannot import {}: {e}", want.describe()))?;
    }
    let ws = open()?;
    // Decided before the stack changes: an import whose code cannot be written is refused.
    let language = language(&ws, args.language.as_deref())?;
    if let Some(out) = &out {
        check_writable(out)?;
    }
    let run = RunOptions {
        json: false,
        diff: false,
        exclude: Vec::new(),
        exclude_dependents: false,
        accept_capabilities: false,
        skip_typecheck: false,
        compiler: args.compiler,
    };
    let options = AdoptOptions { yes: args.yes, run };
    let Some(imported) = adopt(&ws, &wanted, options).await? else {
        return Ok(crate::exit::cancelled());
    };
    let code = code(language, &wanted, &imported)
        .context("the resources were imported, but their code cannot be generated")?;
    match &out {
        Some(out) => {
            write_atomically(out, &code.text())?;
            println!(
                "Wrote the code that declares them to {}: add it to the program, then \
                 `plinth preview` shows no change for them.",
                out.display()
            );
        }
        None => {
            println!(
                "\nThe code that declares them; add it to the program, then `plinth preview` \
                 shows no change for them:\n"
            );
            print!("{}", code.text());
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The language `--language` names, or the program's.
fn language(ws: &Workspace, flag: Option<&str>) -> Result<Language> {
    let id = match flag {
        Some(name) => guest::by_id(name).map(|l| l.id()).ok_or_else(|| {
            anyhow!(
                "--language {}: not rust, typescript or python",
                escape_controls(name)
            )
        })?,
        None => {
            let source = ws.project.resolve(&ws.project.file.program.path);
            if !source.is_dir() {
                bail!(
                    "the program {} is a component file, whose language plinth cannot tell: pass \
                     --language rust, typescript or python",
                    source.display()
                );
            }
            guest::detect(&source).map(|l| l.id()).ok_or_else(|| {
                anyhow!(
                    "cannot tell the language of the program in {}: pass --language",
                    source.display()
                )
            })?
        }
    };
    Language::of_id(id).ok_or_else(|| anyhow!("plinth writes no code in the language `{id}`"))
}

/// The code declaring what `imported` adopted, on each package's SDK.
fn code(language: Language, wanted: &[Wanted], imported: &Imported) -> Result<Code> {
    let emitter = crate::gen_sdk::emitter(language.id())
        .ok_or_else(|| anyhow!("no SDK generator for {}", language.id()))?;
    let packages: Vec<(&String, Package)> = (imported.schemas.iter())
        .map(|(name, info)| (name, Package::new(info, emitter.reserved())))
        .collect();
    let mut declarations = Vec::new();
    for (want, adopted) in wanted.iter().zip(&imported.adopted) {
        let package_name = plinth_engine::urn::package_of(&want.ty);
        let package = (packages.iter())
            .find(|(name, _)| name.as_str() == package_name)
            .map(|(_, p)| p)
            .ok_or_else(|| anyhow!("no schema for the package `{package_name}`"))?;
        let resource = (package.resources.iter())
            .find(|r| r.token == want.ty)
            .ok_or_else(|| {
                anyhow!(
                    "the provider's schema has no type `{}`, so its SDK cannot declare it",
                    escape_controls(&want.ty)
                )
            })?;
        let reference = |urn: &plinth_engine::urn::Urn| Reference {
            urn: urn.to_string(),
            name: urn.name().to_owned(),
        };
        declarations.push(Declaration {
            package,
            resource,
            name: want.name.clone(),
            id: adopted.id.clone(),
            inputs: adopted.inputs.clone(),
            parent: adopted.parent.as_ref().map(reference),
            provider: adopted.provider.as_ref().map(reference),
        });
    }
    Ok(codegen::generate(language, &declarations))
}

/// Refuses an `--out` that cannot be written, before anything is imported.
fn check_writable(out: &Path) -> Result<()> {
    let dir = match out.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        bail!("--out {}: no directory {}", out.display(), dir.display());
    }
    if out.is_dir() {
        bail!("--out {}: a directory, not a file", out.display());
    }
    Ok(())
}

/// Writes `text` whole (a temporary file renamed into place): never a half-written file.
fn write_atomically(path: &Path, text: &str) -> Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let mut temp = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("cannot write in {}", dir.display()))?;
    std::io::Write::write_all(&mut temp, text.as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))?;
    temp.persist(path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

//! The PyPI packages a Python guest declares (`[project] dependencies` in its pyproject.toml),
//! installed by pip into `<PLINTH_HOME>/python-packages/<lock>/`, where the lock is what pip
//! resolved: each distribution's exact version and a digest of every file it installed.
//!
//! componentize-py keeps only the modules loaded while it pre-initializes the component (the
//! component has no files of its own at run time), so a module a package imports lazily would
//! be missing. The install directory therefore carries an import manifest, [`MANIFEST_MODULE`],
//! that imports every module of every distribution; the app module imports it.
//!
//! Only pure-Python wheels can run in the sandbox: pip is asked for `none-any` wheels only, and
//! a distribution that still carries native code is refused by name.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use sha2::{Digest, Sha256};

use super::run::run;
use super::tools::{setup_hint, tools_dir};
use crate::home::plinth_home;

/// The CPython componentize-py 0.25 embeds: wheels are chosen for it.
const PYTHON_VERSION: &str = "3.14";

/// The module in the install directory that imports every installed module.
pub const MANIFEST_MODULE: &str = "_plinth_packages";

/// The file in the install directory that holds its lock.
const LOCK_FILE: &str = "plinth-packages.lock";

/// Files that are native code, which the sandboxed interpreter cannot load.
const NATIVE: &[&str] = &["so", "pyd", "dylib", "dll"];

/// Installed packages: the directory to put on the module path and the lock naming them.
pub struct Installed {
    pub dir: PathBuf,
    /// `name==version sha256:<digest of its RECORD>`, one distribution a line, sorted.
    pub lock: String,
}

/// Installs `declared` (requirement strings, as in `[project] dependencies`) unless an install
/// of the same requirements, under the same pip settings, is already there.
pub fn install(declared: &[String], what: &str) -> Result<Installed> {
    for requirement in declared {
        check_requirement(requirement, what)?;
    }
    let root = plinth_home()?.join("python-packages");
    let resolved_dir = root.join("resolved");
    std::fs::create_dir_all(&resolved_dir)
        .with_context(|| format!("creating {}", resolved_dir.display()))?;
    // Resolved once per change of the requirements or of pip's settings (its index, its
    // find-links); a later build reuses that resolution without asking an index.
    let resolved = resolved_dir.join(request_key(declared));
    if let Ok(lock_key) = std::fs::read_to_string(&resolved) {
        let dir = root.join(lock_key.trim());
        if let Ok(lock) = std::fs::read_to_string(dir.join(LOCK_FILE)) {
            return Ok(Installed { dir, lock });
        }
    }

    let staging = tempfile::Builder::new()
        .prefix(".installing-")
        .tempdir_in(&root)
        .with_context(|| format!("creating an install directory in {}", root.display()))?;
    let target = staging.path().join("packages");
    pip_install(declared, staging.path(), &target, what)?;
    let lock = lock(&target, what)?;
    std::fs::write(
        target.join(MANIFEST_MODULE).with_extension("py"),
        manifest(&target)?,
    )?;
    std::fs::write(target.join(LOCK_FILE), &lock)?;

    let lock_key = hex::encode(Sha256::digest(lock.as_bytes()));
    let dir = root.join(&lock_key);
    // Another build may have installed the same lock meanwhile: theirs is as good.
    if !dir.join(LOCK_FILE).is_file() {
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::rename(&target, &dir)
            .with_context(|| format!("storing the installed packages in {}", dir.display()))?;
    }
    let record = staging.path().join("resolved");
    std::fs::write(&record, &lock_key)?;
    std::fs::rename(&record, &resolved)?;
    Ok(Installed { dir, lock })
}

/// A requirement must start with a distribution name: anything else (`--index-url ...`) would
/// be an option to pip.
fn check_requirement(requirement: &str, what: &str) -> Result<()> {
    let starts_with_name = requirement
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphanumeric());
    if !starts_with_name || requirement.contains(['\n', '\r']) {
        bail!(
            "{what}: [project] dependencies in pyproject.toml lists {requirement:?}, which is not \
             a requirement: each must start with a distribution name, e.g. \"python-slugify>=8\""
        );
    }
    Ok(())
}

/// A hash of the requirements and of every `PIP_*` setting (index, find-links, ...).
fn request_key(declared: &[String]) -> String {
    let mut hasher = Sha256::new();
    let mut part = |bytes: &[u8]| {
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(bytes);
    };
    part(PYTHON_VERSION.as_bytes());
    for requirement in declared {
        part(requirement.as_bytes());
    }
    let mut settings: Vec<_> = std::env::vars_os()
        .filter(|(name, _)| name.to_string_lossy().starts_with("PIP_"))
        .collect();
    settings.sort();
    for (name, value) in settings {
        part(name.as_encoded_bytes());
        part(value.as_encoded_bytes());
    }
    hex::encode(hasher.finalize())
}

/// pip from componentize-py's virtual environment, asked for pure-Python wheels for the
/// embedded CPython. pip's own settings (`PIP_INDEX_URL`, `PIP_FIND_LINKS`, `PIP_NO_INDEX`,
/// pip.conf) apply.
fn pip_install(declared: &[String], work: &Path, target: &Path, what: &str) -> Result<()> {
    let tools = tools_dir()?;
    let python = tools.join("py/bin/python");
    if !python.is_file() {
        bail!(
            "{what} declares PyPI packages, and installing them needs the Python tools: {}",
            setup_hint(&tools)
        );
    }
    // A requirements file, not arguments: a requirement is never read as an option.
    let requirements = work.join("requirements.txt");
    std::fs::write(&requirements, declared.join("\n") + "\n")?;
    let result = run(
        Command::new(&python)
            .args([
                "-m",
                "pip",
                "install",
                "--no-input",
                "--disable-pip-version-check",
            ])
            .args(["--no-compile", "--no-warn-script-location", "--target"])
            .arg(target)
            .args([
                "--only-binary",
                ":all:",
                "--platform",
                "any",
                "--abi",
                "none",
            ])
            .args(["--implementation", "cp", "--python-version", PYTHON_VERSION])
            .arg("-r")
            .arg(&requirements),
        what,
        "pip (installing [project] dependencies)",
    );
    result.map_err(|error| {
        error.context(format!(
            "{what}: plinth installs only pure-Python wheels (tagged `none-any`), which run \
             in the sandbox: a distribution pip finds no such wheel for has native code or \
             ships only sources; remove it from [project] dependencies, or use a pure-Python \
             alternative"
        ))
    })
}

/// The lock of what pip installed in `target`, after refusing any distribution with native
/// code.
fn lock(target: &Path, what: &str) -> Result<String> {
    let mut lines = Vec::new();
    let mut recorded = Vec::new();
    for entry in std::fs::read_dir(target)? {
        let path = entry?.path();
        if path.extension().is_none_or(|e| e != "dist-info") {
            continue;
        }
        let metadata = std::fs::read_to_string(path.join("METADATA"))
            .with_context(|| format!("{what}: reading {}", path.join("METADATA").display()))?;
        let name = header(&metadata, "Name").unwrap_or("?").to_owned();
        let version = header(&metadata, "Version").unwrap_or("?");
        let wheel = std::fs::read_to_string(path.join("WHEEL")).unwrap_or_default();
        let tags: Vec<&str> = wheel
            .lines()
            .filter_map(|l| l.strip_prefix("Tag:"))
            .map(str::trim)
            .collect();
        if let Some(tag) = tags.iter().find(|t| !t.ends_with("-none-any")) {
            bail!(native(what, &name, &format!("its wheel is tagged `{tag}`")));
        }
        let record = std::fs::read(path.join("RECORD"))
            .with_context(|| format!("{what}: reading {}", path.join("RECORD").display()))?;
        for line in String::from_utf8_lossy(&record).lines() {
            let file = line.split(',').next().unwrap_or_default();
            if is_native(Path::new(file)) {
                bail!(native(what, &name, &format!("it installs `{file}`")));
            }
            recorded.push(file.to_owned());
        }
        let digest = hex::encode(Sha256::digest(&record));
        lines.push(format!("{name}=={version} sha256:{digest}"));
    }
    // A native file no RECORD lists is refused too.
    if let Some(file) = walk(target)?.into_iter().find(|f| is_native(f)) {
        bail!(native(
            what,
            &file.display().to_string(),
            "it is native code"
        ));
    }
    lines.sort();
    Ok(lines.join("\n") + "\n")
}

fn native(what: &str, name: &str, why: &str) -> String {
    format!(
        "{what}: the PyPI package `{name}` has native code ({why}), which cannot run in the \
         sandbox: only pure-Python packages can; remove it from [project] dependencies, or use \
         a pure-Python alternative"
    )
}

fn is_native(file: &Path) -> bool {
    file.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| NATIVE.contains(&e))
}

/// A `Name: value` header of a METADATA file.
fn header<'a>(metadata: &'a str, name: &str) -> Option<&'a str> {
    metadata
        .lines()
        .take_while(|l| !l.is_empty())
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .map(str::trim)
}

/// Every file under `dir`, relative to it.
fn walk(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    let mut pending = vec![PathBuf::new()];
    while let Some(relative) = pending.pop() {
        for entry in std::fs::read_dir(dir.join(&relative))? {
            let entry = entry?;
            let path = relative.join(entry.file_name());
            if entry.file_type()?.is_dir() {
                pending.push(path);
            } else {
                files.push(path);
            }
        }
    }
    Ok(files)
}

/// The import manifest: every module under `target` (but `__main__`, which runs a command
/// line), parents first, each imported on its own so that one needing an optional dependency
/// that is not installed does not stop the others (it could not be imported at run time
/// either).
fn manifest(target: &Path) -> Result<String> {
    let mut modules = Vec::new();
    for file in walk(target)? {
        if file.extension().is_none_or(|e| e != "py") {
            continue;
        }
        let mut parts: Vec<String> = file
            .with_extension("")
            .iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect();
        if parts.last().is_some_and(|p| p == "__init__") {
            parts.pop();
        }
        if parts.is_empty() || parts.iter().any(|p| p == "__main__" || !is_identifier(p)) {
            continue;
        }
        modules.push((parts.len(), parts.join(".")));
    }
    modules.sort();
    let mut text = String::from(
        "# Written by plinth: imports every module of the installed PyPI packages while the\n\
         # component is built, since only modules loaded then are in it.\n\
         import importlib\n\
         for _name in [\n",
    );
    for (_, name) in modules {
        text.push_str(&format!("    \"{name}\",\n"));
    }
    text.push_str(
        "]:\n    try:\n        importlib.import_module(_name)\n    \
         except (Exception, SystemExit):\n        pass\n",
    );
    Ok(text)
}

/// A Python identifier in ASCII (a module file named otherwise cannot be imported by name).
fn is_identifier(part: &str) -> bool {
    part.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && part.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

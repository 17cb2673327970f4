//! Python guests: a directory with a `pyproject.toml`. A small app module exports the user's
//! `main` or `provider` through the SDK, and componentize-py builds it, the project's modules
//! and the SDK into a component. componentize-py packs the modules loaded while it builds, so
//! the app module imports every module of the project the entry module can import, lazily
//! imported ones too ([`pyimports`]); those modules' files are what the build is keyed on.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde::Deserialize;

use super::componentized::{self, CODE, Componentized, Dependency, Form, Job, Prebuilt};
use super::language::{Built, GuestLanguage, Role, SdkFile};
use super::pycode;
use super::pyimports;
use super::pypackages::{self, MANIFEST_MODULE};
use super::run::run;
use super::sdk::embed;
use super::tools::{Toolchain, on_path, setup_hint, tools_dir};

/// The version `scripts/setup` installs (keep the two in step).
pub const COMPONENTIZE_PY: &str = "0.25.1";

/// The directory that holds the `plinth` package, by its path in the repository.
const SDK_DIR: &str = "sdk-guest/python";
const SDK_FILES: &[SdkFile] = embed![
    "sdk-guest/python/plinth/__init__.py",
    "sdk-guest/python/plinth/value.py",
    "sdk-guest/python/plinth/schema.py",
    "sdk-guest/python/plinth/errors.py",
    "sdk-guest/python/plinth/provider.py",
    "sdk-guest/python/plinth/program.py",
    "sdk-guest/python/plinth/policy.py",
    "sdk-guest/python/plinth/runtime.py",
    "sdk-guest/python/runtime/plinth_program_runtime.py",
];

/// The app module of the prebuilt program runtime, in the SDK's `runtime` folder.
const RUNTIME_DIR: &str = "sdk-guest/python/runtime";
const RUNTIME_MODULE: &str = "plinth_program_runtime";

/// The module that exports the user's code, written beside the component.
const APP_MODULE: &str = "plinth_app";
const APP_FILE: &str = "plinth_app.py";

pub struct Python;

impl GuestLanguage for Python {
    fn id(&self) -> &'static str {
        "python"
    }

    fn aliases(&self) -> &'static [&'static str] {
        &["py"]
    }

    fn name(&self) -> &'static str {
        "Python"
    }

    fn manifest(&self) -> &'static str {
        "pyproject.toml"
    }

    fn sdk_files(&self) -> &'static [SdkFile] {
        SDK_FILES
    }

    fn build(&self, dir: &Path, role: Role, what: &str) -> Result<PathBuf> {
        componentized::build(self, dir, role, what)
    }

    /// A program runs on the prebuilt program runtime; providers and policy packs are built
    /// whole.
    fn build_to_run(&self, dir: &Path, role: Role, what: &str) -> Result<Built> {
        componentized::build_to_run(self, dir, role, what)
    }
}

impl Componentized for Python {
    /// componentize-py, from its virtual environment.
    fn tools(&self, what: &str) -> Result<Toolchain> {
        let tools = tools_dir()?;
        let binary = tools.join("py/bin/componentize-py");
        if !binary.is_file() {
            let python = if on_path("python3").is_some() {
                ""
            } else {
                "python3 (e.g. `apt-get install python3 python3-venv`) and "
            };
            bail!(
                "{what} is Python (it has a pyproject.toml), and building it needs {python}\
                 componentize-py {COMPONENTIZE_PY}, which is not installed: {}",
                setup_hint(&tools)
            );
        }
        let output = Command::new(&binary)
            .arg("--version")
            .output()
            .with_context(|| {
                format!(
                    "{what}: cannot run {} (is python3 still installed?): {}",
                    binary.display(),
                    setup_hint(&tools)
                )
            })?;
        let version = String::from_utf8_lossy(&output.stdout).trim().to_owned();
        if !output.status.success() || !version.starts_with("componentize-py 0.25.") {
            bail!(
                "{what}: {} does not run as componentize-py {COMPONENTIZE_PY} (it says `{version}`): {}",
                binary.display(),
                setup_hint(&tools)
            );
        }
        Ok(Toolchain {
            version,
            componentizer: (binary, Vec::new()),
            bundler: None,
        })
    }

    fn dependencies(&self, dir: &Path, what: &str) -> Result<Vec<Dependency>> {
        dependencies(dir, what)
    }

    fn pack(&self, job: &Job) -> Result<Vec<(String, PathBuf)>> {
        let module = module(job.dir, job.what)?;
        let packages: Vec<&Path> = (job.dependencies.iter())
            .filter(|d| d.dir.join(MANIFEST_MODULE).with_extension("py").is_file())
            .map(|d| d.dir.as_path())
            .collect();
        let path: Vec<&Path> = std::iter::once(job.dir)
            .chain(job.dependencies.iter().map(|d| d.dir.as_path()))
            .collect();
        let python = job.tools.componentizer.0.with_file_name("python");
        let found = pyimports::scan(&python, &module, &path, &packages, job.what)?;
        let mut packed = match job.form {
            Form::Whole => {
                let app = job.work.join(APP_FILE);
                let lazy = Lazy {
                    own: &found.modules,
                    external: &found.external,
                };
                std::fs::write(
                    &app,
                    app_module(job.role, &module, &lazy, !packages.is_empty()),
                )?;
                vec![(APP_FILE.to_owned(), app)]
            }
            Form::Loaded => {
                let manifest = pycode::lay_out(
                    &job.work.join(CODE),
                    &module,
                    &path,
                    &packages,
                    &found.files,
                )?;
                vec![(pycode::MANIFEST.to_owned(), manifest)]
            }
        };
        packed.push(("pyproject.toml".to_owned(), job.dir.join("pyproject.toml")));
        for (name, file) in found.modules.into_iter().zip(found.files) {
            packed.push((format!("module {name}"), file));
        }
        Ok(packed)
    }

    /// componentize-py finds the app module (written in the work directory) by name.
    fn componentize(&self, job: &Job) -> Result<()> {
        let mut path = vec![job.work, job.dir];
        path.extend(job.dependencies.iter().map(|d| d.dir.as_path()));
        componentize_py(job, &path, APP_MODULE)
    }
}

impl Prebuilt for Python {
    /// The SDK's runtime app module, built with the work directory first on the module path:
    /// while it is built, it copies the interpreter's library there ([`LIBRARY`]).
    fn componentize_runtime(&self, job: &Job) -> Result<()> {
        std::fs::write(job.work.join(BUILD_MARK), "")?;
        let runtime = job.sdk.dir(RUNTIME_DIR);
        componentize_py(job, &[job.work, &runtime], RUNTIME_MODULE)
    }

    fn runtime_library(&self) -> Option<&'static str> {
        Some(LIBRARY)
    }
}

/// The folder of the runtime's build directory the runtime copies the interpreter's library
/// into while it is built (`plinth/runtime.py` names it too).
const LIBRARY: &str = "library";

/// The file that tells the runtime, while it is built, that the first folder of its module
/// path is plinth's build directory (`plinth/runtime.py` names it too).
const BUILD_MARK: &str = "plinth-runtime-build";

/// Runs componentize-py on `app`, found in the folders of `path` or the SDK, for `job`'s
/// world.
fn componentize_py(job: &Job, path: &[&Path], app: &str) -> Result<()> {
    let (componentizer, prefix) = &job.tools.componentizer;
    let mut command = Command::new(componentizer);
    command
        .args(prefix)
        .arg("-d")
        .arg(job.sdk.wit(job.role))
        .args(["-w", job.role.world(), "componentize"]);
    for folder in path {
        command.arg("-p").arg(folder);
    }
    run(
        command
            .arg("-p")
            .arg(job.sdk.dir(SDK_DIR))
            .args([app, "-o"])
            .arg(job.out)
            .current_dir(job.work),
        job.what,
        "componentize-py",
    )
}

/// The modules the user's code imports, which the app module imports while the component is
/// built so that it packs them, a module imported inside a function included.
struct Lazy<'a> {
    /// The user's own modules (the entry module among them).
    own: &'a [String],
    /// Others: the standard library's, or packages that are not installed.
    external: &'a [String],
}

/// The module that exports the user's `module` as the `role` needs: it imports the installed
/// PyPI packages' manifest first (every module of theirs is loaded), then the user's module,
/// then every module the user's code may import later, so that all of them are packed.
fn app_module(role: Role, module: &str, lazy: &Lazy, packages: bool) -> String {
    // What the user's module defines, the SDK module that exports it, the class
    // componentize-py looks for, and what the guest is called.
    let (name, sdk, export, class, kind) = match role {
        Role::Program => ("main", "program", "export_program", "Callbacks", "program"),
        Role::Provider => (
            "provider",
            "provider",
            "export_provider",
            "Provider",
            "provider",
        ),
        Role::PolicyPack => (
            "pack",
            "policy",
            "export_policy_pack",
            "Analyzer",
            "policy pack",
        ),
    };
    let mut text = String::from("import importlib\n");
    if packages {
        text.push_str(&format!("import {MANIFEST_MODULE}\n"));
    }
    // Codecs are looked up by name when first used (`"x".encode("idna")`, a host name given to
    // the socket module): the ones the standard library itself asks for must be loaded now.
    text.push_str("import encodings.idna\nimport encodings.punycode\n");
    text.push_str(&format!("import {module} as _user\n"));
    // A module needing a package that is not installed fails only where it is imported, as it
    // would without plinth; any other error in the user's own code fails the build.
    let own = lazy.own.iter().filter(|m| *m != module);
    text.push_str(&import_each(own, "ImportError"));
    // The standard library's modules the code imports later: one this interpreter lacks
    // (`tkinter`) or that exits on import is the code's to meet at run time.
    text.push_str(&import_each(lazy.external.iter(), "Exception, SystemExit"));
    text.push_str(&format!(
        "from plinth.{sdk} import {export}\n\
         if not hasattr(_user, {name:?}):\n    \
             raise SystemExit(\"module `{module}` defines no `{name}`: a {kind} needs one\")\n\
         {class} = {export}(_user.{name})\n",
    ));
    if role == Role::Provider {
        // Its write-only inputs: the provider world's `plinth:inputs/write-only` export.
        text.push_str(
            "from plinth.provider import export_write_only\n\
             WriteOnly = export_write_only(_user.provider)\n",
        );
    }
    text
}

/// Python that imports each module of `names`, passing over the exceptions `tolerated` names.
fn import_each<'a>(names: impl Iterator<Item = &'a String>, tolerated: &str) -> String {
    let mut list = String::new();
    for name in names {
        let literal = serde_json::to_string(name).expect("a string");
        list.push_str(&format!("    {literal},\n"));
    }
    if list.is_empty() {
        return list;
    }
    format!(
        "for _name in [\n{list}]:\n    try:\n        importlib.import_module(_name)\n    \
         except ({tolerated}):\n        pass\n"
    )
}

#[derive(Deserialize, Default)]
struct PyProject {
    #[serde(default)]
    project: Project,
    #[serde(default)]
    tool: Tools,
}

#[derive(Deserialize, Default)]
struct Project {
    /// The PyPI packages the guest needs, as requirement strings; plinth installs them.
    #[serde(default)]
    dependencies: Vec<String>,
}

#[derive(Deserialize, Default)]
struct Tools {
    #[serde(default)]
    plinth: PlinthSettings,
}

#[derive(Deserialize, Default)]
struct PlinthSettings {
    /// The module that defines `main` (a program), `provider` (a provider) or `pack` (a
    /// policy pack).
    module: Option<String>,
    /// More directories on the module search path, relative to the project: generated SDKs
    /// (`../sdks/random/python`) or shared code.
    #[serde(default)]
    paths: Vec<String>,
}

fn pyproject(dir: &Path, what: &str) -> Result<PyProject> {
    let manifest = dir.join("pyproject.toml");
    toml::from_str(&std::fs::read_to_string(&manifest)?)
        .with_context(|| format!("{what}: {} is malformed", manifest.display()))
}

fn settings(dir: &Path, what: &str) -> Result<PlinthSettings> {
    Ok(pyproject(dir, what)?.tool.plinth)
}

/// The directories `[tool.plinth] paths` adds to the module search path, and the PyPI
/// packages `[project] dependencies` declares, installed: their sources (and the packages'
/// lock) are part of the build's cache key.
fn dependencies(dir: &Path, what: &str) -> Result<Vec<Dependency>> {
    let project = pyproject(dir, what)?;
    let mut found = Vec::new();
    if !project.project.dependencies.is_empty() {
        let installed = pypackages::install(&project.project.dependencies, what)?;
        found.push(Dependency {
            name: format!("PyPI packages\n{}", installed.lock),
            dir: installed.dir,
        });
    }
    for path in project.tool.plinth.paths {
        let full = dir.join(&path);
        if !full.is_dir() {
            bail!(
                "{what}: [tool.plinth] paths in {} names {path:?}, which is not a directory; \
                 generate an SDK there with `plinth gen-sdk <plugin> --lang python --out <dir>`, \
                 or fix the path",
                dir.join("pyproject.toml").display()
            );
        }
        found.push(Dependency {
            name: path,
            dir: full.canonicalize()?,
        });
    }
    Ok(found)
}

fn module(dir: &Path, what: &str) -> Result<String> {
    let module = settings(dir, what)?.module.unwrap_or_else(|| "main".into());
    let valid = !module.is_empty()
        && module.split('.').all(|part| {
            part.chars()
                .next()
                .is_some_and(|c| c.is_alphabetic() || c == '_')
                && part.chars().all(|c| c.is_alphanumeric() || c == '_')
        });
    if !valid {
        bail!(
            "{what}: [tool.plinth] module = {module:?} in pyproject.toml is not a Python module name"
        );
    }
    let file = dir.join(module.replace('.', "/"));
    if !file.with_extension("py").is_file() && !file.join("__init__.py").is_file() {
        bail!(
            "{what}: module `{module}` is not in {} (add {module}.py, or name the module with \
             `[tool.plinth] module = \"...\"` in pyproject.toml)",
            dir.display()
        );
    }
    Ok(module)
}

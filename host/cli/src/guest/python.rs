//! Python guests: a small app module exports the user's `main` or `provider` through the SDK,
//! and componentize-py builds it, the project's modules and the SDK into a component.

use std::path::Path;

use anyhow::{Context, Result, bail};
use serde::Deserialize;

use super::run::run;
use super::sdk::Sdk;
use super::tools::Toolchain;
use super::{Dependency, Role};

#[derive(Deserialize, Default)]
struct PyProject {
    #[serde(default)]
    tool: Tools,
}

#[derive(Deserialize, Default)]
struct Tools {
    #[serde(default)]
    plinth: PlinthSettings,
}

#[derive(Deserialize, Default)]
struct PlinthSettings {
    /// The module that defines `main` (a program) or `provider` (a provider).
    module: Option<String>,
    /// More directories on the module search path, relative to the project: generated SDKs
    /// (`../sdks/random/python`) or shared code.
    #[serde(default)]
    paths: Vec<String>,
}

fn settings(dir: &Path, what: &str) -> Result<PlinthSettings> {
    let manifest = dir.join("pyproject.toml");
    let project: PyProject = toml::from_str(&std::fs::read_to_string(&manifest)?)
        .with_context(|| format!("{what}: {} is malformed", manifest.display()))?;
    Ok(project.tool.plinth)
}

/// The directories `[tool.plinth] paths` adds to the module search path: their sources are
/// part of the build's cache key.
pub fn dependencies(dir: &Path, what: &str) -> Result<Vec<Dependency>> {
    let mut found = Vec::new();
    for path in settings(dir, what)?.paths {
        let full = dir.join(&path);
        if !full.is_dir() {
            bail!(
                "{what}: [tool.plinth] paths in {} names {path:?}, which is not a directory;                  generate an SDK there with `plinth gen-sdk <plugin> --lang python --out <dir>`,                  or fix the path",
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

pub fn build(
    dir: &Path,
    dependencies: &[Dependency],
    role: Role,
    sdk: &Sdk,
    tools: &Toolchain,
    out: &Path,
    what: &str,
) -> Result<()> {
    let work = out
        .parent()
        .expect("the output is in the staging directory");
    let module = module(dir, what)?;
    let (name, export, class) = match role {
        Role::Program => ("main", "export_program", "Callbacks"),
        Role::Provider => ("provider", "export_provider", "Provider"),
    };
    let sdk_module = match role {
        Role::Program => "program",
        Role::Provider => "provider",
    };
    std::fs::write(
        work.join("plinth_app.py"),
        format!(
            "import {module} as _user\n\
             from plinth.{sdk_module} import {export}\n\
             if not hasattr(_user, {name:?}):\n    \
                 raise SystemExit(\"module `{module}` defines no `{name}`: a {kind} needs one\")\n\
             {class} = {export}(_user.{name})\n",
            kind = if role == Role::Program {
                "program"
            } else {
                "provider"
            },
        ),
    )?;
    let (componentizer, prefix) = &tools.componentizer;
    let mut command = std::process::Command::new(componentizer);
    command
        .args(prefix)
        .arg("-d")
        .arg(sdk.wit())
        .args(["-w", role.world(), "componentize", "-p"])
        .arg(work)
        .arg("-p")
        .arg(dir);
    for dependency in dependencies {
        command.arg("-p").arg(&dependency.dir);
    }
    run(
        command
            .arg("-p")
            .arg(sdk.python())
            .args(["plinth_app", "-o"])
            .arg(out)
            .current_dir(work),
        what,
        "componentize-py",
    )
}

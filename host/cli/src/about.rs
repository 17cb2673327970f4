//! `plinth about`: what a bug report needs — plinth's version and platform, the backend, the
//! project and its plugins, the plugins installed with their digests, and the toolchains that
//! build guests. Nothing here fails the command: what cannot be found is said instead.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use plinth_engine::shown::escape_controls;
use serde::Serialize;

use crate::home::plinth_home;
use crate::plugin::store::Store;
use crate::project::{PluginSource, Project};

#[derive(Args)]
pub struct AboutArgs {
    /// Print it as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct About {
    version: &'static str,
    /// The commit plinth was built from, or `unknown`.
    commit: &'static str,
    platform: String,
    backend: Found,
    project: Option<ProjectAbout>,
    installed_plugins: Vec<Installed>,
    /// By language.
    toolchains: BTreeMap<&'static str, Found>,
}

/// A value found, or why it was not.
#[derive(Serialize)]
#[serde(rename_all = "lowercase")]
enum Found {
    Found(String),
    Missing(String),
}

impl Found {
    fn of(result: Result<String>) -> Found {
        match result {
            Ok(value) => Found::Found(value),
            Err(e) => Found::Missing(format!("{e:#}")),
        }
    }

    fn shown(&self) -> String {
        match self {
            Found::Found(value) => escape_controls(value).into_owned(),
            Found::Missing(why) => format!("(none: {})", escape_controls(why)),
        }
    }
}

#[derive(Serialize)]
struct ProjectAbout {
    name: String,
    dir: String,
    /// Each plugin of Plinth.yaml: `path <p>` or `version <v>`.
    plugins: BTreeMap<String, String>,
}

#[derive(Serialize)]
struct Installed {
    name: String,
    version: String,
    sha256: String,
    source: String,
}

pub fn about(start: &Path, args: AboutArgs) -> Result<ExitCode> {
    let installed = Store::in_home(&plinth_home()?).list().unwrap_or_default();
    let about = About {
        version: crate::version::VERSION,
        commit: crate::version::COMMIT,
        platform: format!("{}-{}", std::env::consts::ARCH, std::env::consts::OS),
        backend: Found::of(crate::login::backend_url()),
        project: Project::find(start).ok().map(|p| ProjectAbout {
            name: p.name().to_string(),
            dir: p.dir.display().to_string(),
            plugins: (p.file.plugins.iter())
                .map(|(name, spec)| {
                    let source = match spec.source() {
                        PluginSource::Path(path) => format!("path {}", path.display()),
                        PluginSource::Store(version) => format!("version {version}"),
                        PluginSource::Registry {
                            repository,
                            version,
                        } => format!("version {version} from {repository}"),
                    };
                    (name.clone(), source)
                })
                .collect(),
        }),
        installed_plugins: (installed.into_iter())
            .map(|p| Installed {
                name: p.name,
                version: p.version,
                sha256: p.sha256,
                source: p.source,
            })
            .collect(),
        toolchains: (crate::guest::toolchains().into_iter())
            .map(|(language, found)| (language, Found::of(found)))
            .collect(),
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&about)?);
    } else {
        print(&about);
    }
    Ok(ExitCode::SUCCESS)
}

/// The report as text; what files and the store hold is shown escaped.
fn print(about: &About) {
    let e = |s: &str| escape_controls(s).into_owned();
    println!(
        "plinth {} ({}, commit {})",
        about.version, about.platform, about.commit
    );
    println!("Backend: {}", about.backend.shown());
    match &about.project {
        Some(p) => {
            println!("Project: {} ({})", e(&p.name), e(&p.dir));
            for (name, source) in &p.plugins {
                println!("  plugin {}: {}", e(name), e(source));
            }
        }
        None => println!("Project: (none here)"),
    }
    println!("Installed plugins:");
    if about.installed_plugins.is_empty() {
        println!("  (none)");
    }
    for p in &about.installed_plugins {
        println!(
            "  {} {}  sha256:{}  from {}",
            e(&p.name),
            e(&p.version),
            p.sha256,
            e(&p.source)
        );
    }
    println!("Toolchains:");
    for (language, found) in &about.toolchains {
        println!("  {language}: {}", found.shown());
    }
}

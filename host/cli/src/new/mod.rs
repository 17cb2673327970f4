//! `plinth new`: a project from a template compiled into the binary, with the SDK of its
//! provider generated into it and its first stack created: ready for `plinth up`.

mod prompt;
mod templates;
mod writer;

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::Args;
use plinth_engine::names::StackName;
use plinth_engine::shown::escape_controls;

use crate::gen_sdk::{self, Options};
use crate::home::plinth_home;
use crate::plugin::store::Store;
use crate::plugin::{locate, provider_info};
use crate::{GlobalArgs, Workspace};
use templates::{Kind, TEMPLATES, Template, Vars};
use writer::NewDir;

#[derive(Args)]
pub struct NewArgs {
    /// The template (`plinth new --list` shows them).
    template: Option<String>,
    /// Where to make the project: a new or empty directory (default: the current one).
    dir: Option<PathBuf>,
    /// The project's name (default: the directory's): lowercase letters, digits, `-` and `_`.
    #[arg(long)]
    name: Option<String>,
    /// Take the defaults of what is not given instead of asking.
    #[arg(short, long)]
    yes: bool,
    /// List the templates.
    #[arg(long)]
    list: bool,
    /// The random provider of the program templates: an installed `random[@VERSION]`, its
    /// .wasm file or its source directory.
    #[arg(
        long,
        value_name = "NAME[@VERSION] | FILE | DIR",
        default_value = "random"
    )]
    random: String,
    /// The `plinth-sdk` crate a Rust project depends on by path (`sdk-guest/rust` of a plinth
    /// checkout); by default a versioned dependency.
    #[arg(long, value_name = "DIR")]
    sdk_path: Option<PathBuf>,
}

/// The stack made when none is named.
const DEFAULT_STACK: &str = "dev";

pub async fn run(global: &GlobalArgs, args: NewArgs) -> Result<ExitCode> {
    if args.list {
        println!("{:22} DESCRIPTION", "TEMPLATE");
        for t in TEMPLATES {
            println!("{:22} {}", t.name, t.description);
        }
        return Ok(ExitCode::SUCCESS);
    }
    // Never wait on a prompt nobody can answer: without a terminal, flags and defaults decide.
    let ask = !args.yes && std::io::stdin().is_terminal();
    let template = choose_template(args.template.as_deref(), ask)?;
    let start =
        std::path::absolute(global.start_dir()?).context("cannot resolve the current directory")?;
    let dir = match &args.dir {
        Some(dir) => {
            std::path::absolute(start.join(dir)).context("cannot resolve the project directory")?
        }
        None => start.clone(),
    };
    writer::check_empty(&dir)?;
    let name = match args.name.clone() {
        Some(name) => name,
        None => {
            let default = default_name(&dir);
            if ask {
                prompt::ask("Project name", &default)?
            } else {
                default
            }
        }
    };
    check_name(&name)?;
    let stack = match &global.stack {
        Some(stack) => stack.clone(),
        None if ask && template.kind == Kind::Program => {
            StackName::new(prompt::ask("Stack", DEFAULT_STACK)?)?
        }
        None => StackName::new(DEFAULT_STACK).expect("a valid name"),
    };

    // All that can fail is done before the first file is written.
    let mut vars = Vars::from([("name".to_owned(), name.clone())]);
    let mut files: Vec<(String, String)> = Vec::new();
    match template.kind {
        Kind::Program => {
            let (random, sdk) = random_sdk(template, &args).await?;
            vars.insert("random".into(), random);
            vars.insert("rust_sdk".into(), rust_sdk(args.sdk_path.as_deref())?);
            files.extend(sdk);
        }
        Kind::Provider | Kind::PolicyPack => {
            vars.insert("rust_sdk".into(), rust_sdk(args.sdk_path.as_deref())?);
        }
    }
    files.extend(
        (template.render(&vars)?)
            .into_iter()
            .map(|(path, text)| (path.to_owned(), text)),
    );

    let project = NewDir::create(&dir)?;
    project.write(&files)?;
    if template.kind == Kind::Program {
        create_stack(&dir, &name, &stack)?;
    }
    project.keep();

    println!(
        "Made project `{name}` from the `{}` template in {}.\n\nNext:",
        template.name,
        escape_controls(&dir.display().to_string())
    );
    if dir != start {
        println!("  cd {}", escape_controls(&dir.display().to_string()));
    }
    match template.kind {
        Kind::Program => println!(
            "  plinth preview      # what `up` would create\n  \
             plinth up           # create the resources\n  \
             plinth destroy      # delete them"
        ),
        Kind::Provider => {
            let (test, lang) = match template.language {
                "ts" => (
                    "npm test                        # the provider's unit tests",
                    "ts",
                ),
                "python" => (
                    "python3 -m unittest             # the provider's unit tests",
                    "python",
                ),
                _ => (
                    "cargo test                      # the provider's unit tests",
                    "rust",
                ),
            };
            println!(
                "  {test}\n  \
                 plinth plugin inspect .         # build it and show its resource types\n  \
                 plinth gen-sdk . --lang {lang}    # a typed SDK for programs (rust, ts or python)"
            );
        }
        Kind::PolicyPack => {
            if template.language == "rust" {
                println!("  cargo test                      # the pack's unit tests");
            }
            println!(
                "  # from a project that uses the random provider (`plinth new rust`, say):\n  \
                 plinth preview --policy-pack {}",
                escape_controls(&dir.display().to_string())
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Creates and selects the stack of the project written in `dir`, refusing one that exists.
fn create_stack(dir: &Path, name: &str, stack: &StackName) -> Result<()> {
    let ws = Workspace::open_in(dir, Some(stack.clone()))?;
    let exists = (ws.backend.list_stacks(ws.project.name())?)
        .iter()
        .any(|s| &s.name == stack);
    if exists {
        bail!(
            "project `{name}` already has a stack `{stack}` in this backend: choose another \
             name (--name) or stack (--stack), or remove it (`plinth stack rm {stack}`)"
        );
    }
    crate::stack::init(&ws, stack, None)
}

fn choose_template(name: Option<&str>, ask: bool) -> Result<&'static Template> {
    let name = match name {
        Some(name) => name.to_owned(),
        None if ask => prompt::ask(
            &format!("Template ({})", templates::names()),
            TEMPLATES[0].name,
        )?,
        None => bail!(
            "name a template: `plinth new TEMPLATE [DIR]`, one of {}",
            templates::names()
        ),
    };
    templates::find(&name).with_context(|| {
        format!(
            "there is no template `{}`; the templates are {} (`plinth new --list`)",
            escape_controls(&name),
            templates::names()
        )
    })
}

/// The project name a directory suggests: its name, lowercased, other characters as `-`.
fn default_name(dir: &Path) -> String {
    let base = dir.file_name().map(|n| n.to_string_lossy().to_lowercase());
    let name: String = (base.unwrap_or_default().chars())
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let name = name.trim_start_matches(|c: char| !c.is_ascii_lowercase());
    if name.is_empty() {
        "my-project".into()
    } else {
        name.chars().take(64).collect()
    }
}

/// A project name that also names the Rust crate, the npm package and the Python project.
fn check_name(name: &str) -> Result<()> {
    let mut chars = name.chars();
    let ok = chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '_'))
        && name.len() <= 64;
    if !ok {
        bail!(
            "`{}` cannot be a project's name: use lowercase letters, digits, `-` and `_`, \
             starting with a letter, at most 64 (it also names the project's crate or package)",
            escape_controls(name)
        );
    }
    Ok(())
}

/// The random provider's entry in Plinth.yaml, and the files of its SDK in the template's
/// language under `sdks/random/<lang>`.
async fn random_sdk(
    template: &Template,
    args: &NewArgs,
) -> Result<(String, Vec<(String, String)>)> {
    let store = Store::in_home(&plinth_home()?);
    let context = || {
        format!(
            "the `{}` template's program uses the random provider: install it (`plinth plugin \
             install`) or name its .wasm file or source directory with --random",
            template.name
        )
    };
    let (component, stored) = locate(&store, &args.random).await.with_context(context)?;
    let info = provider_info(&component).await.with_context(context)?;
    if info.name != "random" {
        bail!(
            "--random {}: that provider is `{}`, not `random`",
            escape_controls(&args.random),
            escape_controls(&info.name)
        );
    }
    let entry = match stored {
        Some(plugin) => format!("version: {}", quoted(&plugin.version)),
        None => {
            let path = std::path::absolute(&args.random)?;
            format!("path: {}", quoted(&path.to_string_lossy()))
        }
    };
    let emitter = gen_sdk::emitter(template.language).expect("a template's language has an SDK");
    // Only a Rust SDK depends on the `plinth-sdk` crate; plinth provides the others' SDK.
    let options = Options {
        sdk_path: match template.language {
            "rust" => sdk_crate(args.sdk_path.as_deref())?,
            _ => None,
        },
    };
    let (files, _notes) = gen_sdk::generate(&info, emitter, &options);
    let files = files
        .into_iter()
        .map(|f| {
            (
                format!("sdks/random/{}/{}", emitter.language(), f.path),
                f.contents,
            )
        })
        .collect();
    Ok((entry, files))
}

/// `--sdk-path`, absolute, checked to be the `plinth-sdk` crate.
fn sdk_crate(path: Option<&Path>) -> Result<Option<PathBuf>> {
    let Some(path) = path else {
        return Ok(None);
    };
    let path = std::path::absolute(path)?;
    if !path.join("Cargo.toml").is_file() {
        bail!(
            "--sdk-path {}: no Cargo.toml there; give the `plinth-sdk` crate's directory \
             (`sdk-guest/rust` of a plinth checkout)",
            escape_controls(&path.display().to_string())
        );
    }
    Ok(Some(path))
}

/// How a Rust project's Cargo.toml names `plinth-sdk`.
fn rust_sdk(path: Option<&Path>) -> Result<String> {
    Ok(match sdk_crate(path)? {
        Some(path) => format!("path = {}", quoted(&path.to_string_lossy())),
        None => format!("version = {}", quoted(env!("CARGO_PKG_VERSION"))),
    })
}

/// `text` as a double-quoted string, valid in TOML and YAML alike (JSON's escapes are theirs).
fn quoted(text: &str) -> String {
    serde_json::to_string(text).expect("a string serializes")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_suggests_a_valid_name() {
        for (dir, name) in [
            ("/x/My Project", "my-project"),
            ("/x/42.io", "io"),
            ("/", "my-project"),
            ("/x/svc_a", "svc_a"),
        ] {
            assert_eq!(default_name(Path::new(dir)), name);
            check_name(name).unwrap();
        }
    }

    #[test]
    fn names_that_cannot_name_a_crate_are_refused() {
        for bad in [
            "",
            "Demo",
            "1up",
            "a.b",
            "a b",
            "a\u{1b}[2J",
            &"a".repeat(65),
        ] {
            let err = check_name(bad).unwrap_err().to_string();
            assert!(err.contains("lowercase letters"), "{err}");
            assert!(!err.contains('\u{1b}'), "{err}");
        }
    }

    #[test]
    fn quoted_values_parse_back_in_toml_and_yaml() {
        let path = "/tmp/a \"b\"\\c\u{7}";
        let toml: toml::Table = toml::from_str(&format!("p = {}", quoted(path))).unwrap();
        assert_eq!(toml["p"].as_str(), Some(path));
        let yaml: serde_yaml_ng::Value =
            serde_yaml_ng::from_str(&format!("p: {}", quoted(path))).unwrap();
        assert_eq!(yaml["p"].as_str(), Some(path));
    }
}

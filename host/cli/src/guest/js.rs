//! TypeScript/JavaScript guests: a wrapper module exports the user's default export through the
//! SDK, esbuild bundles it (TypeScript included) into one ES module, and componentize-js turns
//! that into a component. The bundle carries its source map so that the SDK can name the
//! source file and line of an exception.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::Deserialize;

use super::run::run;
use super::sdk::Sdk;
use super::tools::Toolchain;
use super::{Dependency, Role};

/// The program world's import, left for componentize-js to bind.
const MONITOR: &str = "plinth:plugin/monitor@0.3.0";

#[derive(Deserialize)]
struct PackageJson {
    main: Option<String>,
    #[serde(default)]
    dependencies: BTreeMap<String, String>,
    #[serde(default, rename = "devDependencies")]
    dev_dependencies: BTreeMap<String, String>,
}

/// The SDK itself: the bundler resolves it to the SDK plinth ships, wherever it is.
const SDK_PACKAGE: &str = "@plinth/sdk";

/// The packages the guest depends on by path (`"@plinth/random": "file:../sdks/random/ts"`,
/// what `npm install` links): the bundler resolves each name to its directory, and their
/// sources are part of the build's cache key. Other dependencies are left to node_modules.
pub fn dependencies(dir: &Path, what: &str) -> Result<Vec<Dependency>> {
    let manifest = dir.join("package.json");
    let text = std::fs::read_to_string(&manifest)?;
    let package: PackageJson = serde_json::from_str(&text)
        .with_context(|| format!("{what}: {} is not valid JSON", manifest.display()))?;
    let mut found = Vec::new();
    for (name, spec) in package.dependencies.iter().chain(&package.dev_dependencies) {
        let Some(path) = spec.strip_prefix("file:") else {
            continue;
        };
        if name == SDK_PACKAGE {
            continue;
        }
        let path = dir.join(path);
        if !path.join("package.json").is_file() {
            bail!(
                "{what}: the dependency {name:?} in {} is {spec:?}, but {} is not a package                  directory (it has no package.json); generate it with `plinth gen-sdk <plugin>                  --lang ts --out <dir>`, or fix the path",
                manifest.display(),
                path.display()
            );
        }
        found.push(Dependency {
            name: name.clone(),
            dir: path.canonicalize()?,
        });
    }
    Ok(found)
}

/// The module whose default export is the program's `main` or the provider.
fn entry(dir: &Path, what: &str) -> Result<PathBuf> {
    let manifest = dir.join("package.json");
    let text = std::fs::read_to_string(&manifest)?;
    let package: PackageJson = serde_json::from_str(&text)
        .with_context(|| format!("{what}: {} is not valid JSON", manifest.display()))?;
    if let Some(main) = package.main {
        let path = dir.join(&main);
        if !path.is_file() {
            bail!(
                "{what}: package.json's \"main\" is {main}, which does not exist in {}",
                dir.display()
            );
        }
        return Ok(path);
    }
    ["index.ts", "index.js", "src/index.ts", "src/index.js"]
        .iter()
        .map(|name| dir.join(name))
        .find(|path| path.is_file())
        .with_context(|| {
            format!(
                "{what}: {} has no entry module: set \"main\" in package.json or add index.ts",
                dir.display()
            )
        })
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
    // Each path dependency resolves to its entry module.
    let aliases = (dependencies.iter())
        .map(|d| {
            Ok(format!(
                "--alias:{}={}",
                d.name,
                entry(&d.dir, what)?.display()
            ))
        })
        .collect::<Result<Vec<String>>>()?;
    let entry = entry(dir, what)?;
    let js = |path: PathBuf| serde_json::to_string(&path.to_string_lossy()).expect("a string");
    let wrapper = match role {
        Role::Program => format!(
            "import main from {};\nimport {{ exportProgram }} from {};\n\
             if (typeof main !== \"function\") throw new Error({});\n\
             export const callbacks = exportProgram(main);\n",
            js(entry.clone()),
            js(sdk.js().join("program.ts")),
            js(PathBuf::from(format!(
                "{}: the default export must be the program's main function",
                entry.display()
            ))),
        ),
        Role::Provider => format!(
            "import definition from {};\nimport {{ exportProvider }} from {};\n\
             if (typeof definition !== \"object\" || definition === null) throw new Error({});\n\
             export const provider = exportProvider(definition);\n",
            js(entry.clone()),
            js(sdk.js().join("provider.ts")),
            js(PathBuf::from(format!(
                "{}: the default export must be the provider: `export default provider({{...}})`",
                entry.display()
            ))),
        ),
    };
    let wrapper_path = work.join("plinth-entry.js");
    std::fs::write(&wrapper_path, wrapper)?;

    let bundle = work.join("bundle.js");
    let (bundler, prefix) = tools.bundler.as_ref().expect("JavaScript has a bundler");
    let mut command = std::process::Command::new(bundler);
    if role == Role::Provider {
        // The SDK's program side is bundled too; a provider has no monitor to import.
        command.arg(format!(
            "--alias:{MONITOR}={}",
            sdk.js().join("no-monitor.ts").display()
        ));
    }
    command.args(prefix);
    command.args(&aliases);
    run(
        command
            .arg(&wrapper_path)
            .args([
                "--bundle",
                "--format=esm",
                "--platform=neutral",
                "--target=es2022",
                "--main-fields=module,main",
                "--external:plinth:plugin/*",
                "--sourcemap",
                "--sources-content=false",
                "--log-level=warning",
            ])
            .arg(format!(
                "--alias:@plinth/sdk={}",
                sdk.js().join("index.ts").display()
            ))
            .arg(format!("--outfile={}", bundle.display()))
            .current_dir(dir),
        what,
        "bundling with esbuild",
    )?;
    embed_source_map(&bundle, work, dir)?;

    let (componentizer, prefix) = &tools.componentizer;
    run(
        std::process::Command::new(componentizer)
            .args(prefix)
            .arg(&bundle)
            .arg("--wit")
            .arg(sdk.wit())
            .args(["--world-name", role.world(), "-o"])
            .arg(out)
            .current_dir(work),
        what,
        "componentize-js",
    )
}

/// Appends the bundle's source map as a global the SDK reads when it reports an exception,
/// with its sources named relative to the project (`index.ts`, `@plinth/sdk/program.ts`).
/// Appending keeps every line of the bundle where the map says it is.
fn embed_source_map(bundle: &Path, work: &Path, project: &Path) -> Result<()> {
    let map_path = bundle.with_extension("js.map");
    let mut map: serde_json::Value = serde_json::from_slice(&std::fs::read(&map_path)?)
        .context("esbuild wrote an unreadable source map")?;
    if let Some(sources) = map.get_mut("sources").and_then(|s| s.as_array_mut()) {
        for source in sources {
            let Some(relative) = source.as_str() else {
                continue;
            };
            let absolute = normalize(&work.join(relative));
            let named = match absolute.strip_prefix(project) {
                Ok(inside) => inside.display().to_string(),
                Err(_) => absolute
                    .file_name()
                    .map(|f| format!("@plinth/sdk/{}", f.to_string_lossy()))
                    .unwrap_or_default(),
            };
            *source = serde_json::Value::String(named);
        }
    }
    let mut text = std::fs::read_to_string(bundle)?;
    text.push_str("\nglobalThis.__plinthSourceMap = ");
    text.push_str(&serde_json::to_string(&map)?);
    text.push_str(";\n");
    std::fs::write(bundle, text)?;
    Ok(())
}

/// `a/b/../c` as `a/c`, without touching the file system.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

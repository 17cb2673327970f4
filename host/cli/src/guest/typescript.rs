//! TypeScript/JavaScript guests: a directory with a `package.json`. A wrapper module exports
//! the user's default export through the SDK, esbuild bundles it (TypeScript included) into one
//! ES module, and componentize-js turns that into a component. The bundle carries its source
//! map so that the SDK can name the source file and line of an exception. The bundle is what
//! the build is keyed on: esbuild runs on every build (it takes milliseconds), so only a change
//! to what the guest imports rebuilds it, never another file written under its directory.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde::Deserialize;

use super::componentized::{self, CODE, Componentized, Dependency, Form, Job, Prebuilt};
use super::language::{Built, GuestLanguage, Role, SdkFile};
use super::run::{run, run_with_input};
use super::sdk::embed;
use super::tools::{Toolchain, on_path, setup_hint, tools_dir};
use super::tsc::{self, TYPESCRIPT};

/// The versions `scripts/setup` installs (keep the two in step).
pub const COMPONENTIZE_JS: &str = "0.23.0";
pub const ESBUILD: &str = "0.25.12";

/// The SDK's sources, by their path in the repository (`index.ts` is `@plinth/sdk`).
const SDK_DIR: &str = "sdk-guest/js/src";
const SDK_FILES: &[SdkFile] = embed![
    "sdk-guest/js/src/index.ts",
    "sdk-guest/js/src/value.ts",
    "sdk-guest/js/src/schema.ts",
    "sdk-guest/js/src/errors.ts",
    "sdk-guest/js/src/provider.ts",
    "sdk-guest/js/src/program.ts",
    "sdk-guest/js/src/policy.ts",
    "sdk-guest/js/src/sourcemap.ts",
    "sdk-guest/js/src/no-monitor.ts",
    "sdk-guest/js/src/monitor.d.ts",
    "sdk-guest/js/src/node/fs.ts",
    "sdk-guest/js/src/node/fs-promises.ts",
    "sdk-guest/js/src/node/path.ts",
    "sdk-guest/js/src/node/no-files.ts",
    "sdk-guest/js/src/node/wasi-filesystem.d.ts",
    "sdk-guest/js/src/runtime/program.ts",
    "sdk-guest/js/wit/provider.wit",
    "sdk-guest/js/wit/program.wit",
    "sdk-guest/js/wit/wasi-io.wit",
    "sdk-guest/js/wit/wasi-clocks.wit",
    "sdk-guest/js/wit/wasi-filesystem.wit",
];

/// Node's modules a guest may import, and the SDK's module each resolves to.
const NODE_MODULES: &[(&str, &str)] = &[
    ("fs", "node/fs.ts"),
    ("fs/promises", "node/fs-promises.ts"),
    ("path", "node/path.ts"),
];

/// The import the SDK's `node:fs` finds the granted directories through.
const PREOPENS: &str = "wasi:filesystem/preopens@0.2.10";

pub struct TypeScript;

impl GuestLanguage for TypeScript {
    fn id(&self) -> &'static str {
        "ts"
    }

    fn aliases(&self) -> &'static [&'static str] {
        &["typescript"]
    }

    fn name(&self) -> &'static str {
        "TypeScript/JavaScript"
    }

    fn manifest(&self) -> &'static str {
        "package.json"
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

impl Componentized for TypeScript {
    /// componentize-js and esbuild, run by node.
    fn tools(&self, what: &str) -> Result<Toolchain> {
        let tools = tools_dir()?;
        let Some(node) = on_path("node") else {
            bail!(
                "{what} is TypeScript/JavaScript (it has a package.json), and building it needs \
                 Node.js: install node (18 or later, e.g. `apt-get install nodejs npm`), then {}",
                setup_hint(&tools)
            );
        };
        let modules = tools.join("js/node_modules");
        let cjs = modules.join("@bytecodealliance/componentize-js");
        let esbuild = modules.join("esbuild");
        let (Some(cjs_version), Some(esbuild_version)) = (
            installed_version(&cjs.join("package.json")),
            installed_version(&esbuild.join("package.json")),
        ) else {
            bail!(
                "{what} is TypeScript/JavaScript, and building it needs componentize-js \
                 {COMPONENTIZE_JS} and esbuild {ESBUILD}, which are not installed: {}",
                setup_hint(&tools)
            );
        };
        let Some(tsc_version) = installed_version(&modules.join("typescript/package.json")) else {
            bail!(
                "{what} is TypeScript/JavaScript, and checking its types needs TypeScript \
                 {TYPESCRIPT}, which is not installed: {} (or pass --skip-typecheck)",
                setup_hint(&tools)
            );
        };
        if !cjs_version.starts_with("0.23.") {
            bail!(
                "{what}: componentize-js {cjs_version} is installed, but plinth builds with \
                 {COMPONENTIZE_JS}: {}",
                setup_hint(&tools)
            );
        }
        Ok(Toolchain {
            version: format!(
                "componentize-js {cjs_version} + esbuild {esbuild_version} + typescript {tsc_version}"
            ),
            componentizer: (node, vec![cjs.join("src/cli.js")]),
            // The native binary once esbuild's install script ran, else a node script with a
            // shebang: executable either way.
            bundler: Some((esbuild.join("bin/esbuild"), Vec::new())),
        })
    }

    fn dependencies(&self, dir: &Path, what: &str) -> Result<Vec<Dependency>> {
        dependencies(dir, what)
    }

    fn pack(&self, job: &Job) -> Result<Vec<(String, PathBuf)>> {
        let (bundle, map) = bundle(job, &wrapper(job)?)?;
        Ok(match job.form {
            Form::Whole => vec![(BUNDLE.to_owned(), bundle)],
            Form::Loaded => vec![(BUNDLE.to_owned(), bundle), (MAP.to_owned(), map)],
        })
    }

    fn componentize(&self, job: &Job) -> Result<()> {
        componentize(job, &job.work.join(BUNDLE), &wit_of(job)?)
    }

    fn typecheck(&self, job: &Job) -> Result<Vec<PathBuf>> {
        let sdk = job.sdk.dir(SDK_DIR);
        let mut paths = vec![(SDK_PACKAGE.to_owned(), sdk.join("index.ts"))];
        for (name, module) in NODE_MODULES {
            paths.push(((*name).to_owned(), sdk.join(module)));
            paths.push((format!("node:{name}"), sdk.join(module)));
        }
        for dependency in job.dependencies {
            paths.push((dependency.name.clone(), entry(&dependency.dir, job.what)?));
        }
        let modules = tools_dir()?.join("js/node_modules");
        let tsc = tsc::compiler(&modules);
        let read = tsc::check(&tsc::Check {
            node: &job.tools.componentizer.0,
            tsc: &tsc,
            project: job.dir,
            entry: &entry(job.dir, job.what)?,
            paths,
            declarations: vec![
                sdk.join("monitor.d.ts"),
                sdk.join("node/wasi-filesystem.d.ts"),
            ],
            work: job.work,
            what: job.what,
        })?;
        // The compiler's own libraries and the SDK are keyed by their versions; the project's
        // configuration is read but not listed by the compiler.
        let sdk_root = job.sdk.dir("");
        let modules = modules.canonicalize().unwrap_or(modules);
        let mut files: Vec<PathBuf> = (read.into_iter())
            .filter(|f| !f.starts_with(&modules) && !f.starts_with(&sdk_root))
            .collect();
        // Listed even when missing: one added later (a stricter tsconfig) checks again.
        files.extend(["tsconfig.json", "package.json"].map(|f| job.dir.join(f)));
        Ok(files)
    }
}

impl Prebuilt for TypeScript {
    /// The loader (`src/runtime/<world>.ts`) bundled alone, componentized against the world
    /// and the `wasi:filesystem` import it reads the bundle through.
    fn componentize_runtime(&self, job: &Job) -> Result<()> {
        let loader = job.sdk.dir(SDK_DIR).join("runtime/program.ts");
        let bundle = job.work.join(BUNDLE);
        let (bundler, prefix) = job
            .tools
            .bundler
            .as_ref()
            .expect("JavaScript has a bundler");
        run(
            Command::new(bundler)
                .args(prefix)
                .arg(&loader)
                .args([
                    "--bundle",
                    "--format=esm",
                    "--platform=neutral",
                    "--target=es2022",
                    "--external:plinth:plugin/*",
                    "--external:wasi:*",
                    "--log-level=warning",
                ])
                .arg(format!("--outfile={}", bundle.display()))
                .current_dir(job.work),
            job.what,
            "bundling the program runtime with esbuild",
        )?;
        componentize(job, &bundle, &runtime_wit(job)?)
    }
}

/// The bundle esbuild writes in a build's scratch directory.
const BUNDLE: &str = "bundle.js";

/// The source map of a bundle the prebuilt runtime loads, beside it.
const MAP: &str = "bundle.js.map";

/// The module that exports the user's default export through the SDK, as the guest's role
/// needs: as a module's exports when it is built whole, or (for the prebuilt runtime, which
/// evaluates it as a script) registered as `globalThis.__plinthGuest`.
fn wrapper(job: &Job) -> Result<String> {
    let export = |name: &str| match job.form {
        Form::Whole => format!("export const {name} = "),
        Form::Loaded => {
            format!("globalThis.__plinthGuest ??= {{}};\nglobalThis.__plinthGuest.{name} = ")
        }
    };
    let entry = entry(job.dir, job.what)?;
    let js = |path: PathBuf| serde_json::to_string(&path.to_string_lossy()).expect("a string");
    let sdk = job.sdk.dir(SDK_DIR);
    let wrapper = match job.role {
        Role::Program => format!(
            "import main from {};\nimport {{ exportProgram }} from {};\n\
             if (typeof main !== \"function\") throw new Error({});\n\
             {}exportProgram(main);\n",
            js(entry.clone()),
            js(sdk.join("program.ts")),
            js(PathBuf::from(format!(
                "{}: the default export must be the program's main function",
                entry.display()
            ))),
            export("callbacks"),
        ),
        Role::PolicyPack => format!(
            "import pack from {};\nimport {{ PolicyPack, exportPolicyPack }} from {};\n\
             if (!(pack instanceof PolicyPack)) throw new Error({});\n\
             {}exportPolicyPack(pack);\n",
            js(entry.clone()),
            js(sdk.join("policy.ts")),
            js(PathBuf::from(format!(
                "{}: the default export must be the pack: `export default new PolicyPack(\"name\", {{ policies: [...] }})`",
                entry.display()
            ))),
            export("analyzer"),
        ),
        // The provider, and its write-only inputs (`plinth:inputs/write-only`).
        Role::Provider => format!(
            "import definition from {};\nimport {{ exportProvider, exportWriteOnly }} from {};\n\
             if (typeof definition !== \"object\" || definition === null) throw new Error({});\n\
             {}exportProvider(definition);\n{}exportWriteOnly(definition);\n",
            js(entry.clone()),
            js(sdk.join("provider.ts")),
            js(PathBuf::from(format!(
                "{}: the default export must be the provider: `export default provider({{...}})`",
                entry.display()
            ))),
            export("provider"),
            export("writeOnly"),
        ),
    };
    Ok(wrapper)
}

#[derive(Deserialize)]
struct Version {
    version: String,
}

/// The version an npm package installed at `package_json` says it is.
fn installed_version(package_json: &Path) -> Option<String> {
    let text = std::fs::read_to_string(package_json).ok()?;
    serde_json::from_str::<Version>(&text)
        .ok()
        .map(|p| p.version)
}

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
fn dependencies(dir: &Path, what: &str) -> Result<Vec<Dependency>> {
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
                "{what}: the dependency {name:?} in {} is {spec:?}, but {} is not a package \
                 directory (it has no package.json); generate it with `plinth gen-sdk <plugin> \
                 --lang ts --out <dir>`, or fix the path",
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

/// The module whose default export is the program's `main`, the provider or the policy pack.
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

/// Bundles the wrapper module with the guest's code and the SDK into [`BUNDLE`] in the
/// build's scratch directory, or in its [`CODE`] folder for the prebuilt runtime; the paths
/// of the bundle and its source map. A whole component's bundle is an ES module with its
/// source map embedded; the runtime's is a script (the runtime evaluates it, and hands it its
/// imports through `require`) with its source map beside it.
fn bundle(job: &Job, wrapper: &str) -> Result<(PathBuf, PathBuf)> {
    let Job {
        dir,
        dependencies,
        role,
        form,
        sdk,
        tools,
        work,
        what,
        ..
    } = *job;
    let sdk_dir = sdk.dir(SDK_DIR);
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

    let out = match form {
        Form::Whole => work.to_owned(),
        Form::Loaded => work.join(CODE),
    };
    std::fs::create_dir_all(&out)?;
    let bundle = out.join(BUNDLE);
    let (bundler, prefix) = tools.bundler.as_ref().expect("JavaScript has a bundler");
    let mut command = Command::new(bundler);
    if role != Role::Program {
        // The SDK's program side is bundled too; a provider or a policy pack has no monitor
        // to import.
        command.arg(format!(
            "--alias:{MONITOR}={}",
            sdk_dir.join("no-monitor.ts").display()
        ));
    }
    if role != Role::Provider {
        // Only providers are granted directories: elsewhere `node:fs` finds none.
        command.arg(format!(
            "--alias:{PREOPENS}={}",
            sdk_dir.join("node/no-files.ts").display()
        ));
    }
    for (name, module) in NODE_MODULES {
        let module = sdk_dir.join(module);
        command.arg(format!("--alias:{name}={}", module.display()));
        command.arg(format!("--alias:node:{name}={}", module.display()));
    }
    command.args(prefix);
    command.args(&aliases);
    // The wrapper comes on stdin, named alike in every build: the bundle names its modules by
    // their paths, and one in the scratch directory would make every bundle differ.
    run_with_input(
        command
            .args([
                "--bundle",
                match form {
                    Form::Whole => "--format=esm",
                    Form::Loaded => "--format=iife",
                },
                "--platform=neutral",
                "--target=es2022",
                "--main-fields=module,main",
                "--external:plinth:plugin/*",
                "--external:wasi:*",
                "--sourcemap",
                "--sources-content=false",
                "--log-level=warning",
                "--sourcefile=plinth-entry.js",
            ])
            .arg(format!(
                "--alias:@plinth/sdk={}",
                sdk_dir.join("index.ts").display()
            ))
            .arg(format!("--outfile={}", bundle.display()))
            .current_dir(dir),
        wrapper,
        what,
        "bundling with esbuild",
    )?;
    let map_path = bundle.with_extension("js.map");
    let map = source_map(&map_path, &out, dir)?;
    match form {
        Form::Whole => {
            // Appended, so that every line of the bundle stays where the map says it is.
            let mut text = std::fs::read_to_string(&bundle)?;
            text.push_str("\nglobalThis.__plinthSourceMap = ");
            text.push_str(&serde_json::to_string(&map)?);
            text.push_str(";\n");
            std::fs::write(&bundle, text)?;
        }
        Form::Loaded => std::fs::write(&map_path, serde_json::to_vec(&map)?)?,
    }
    Ok((bundle, map_path))
}

/// Turns `bundle` into the component at `job.out`, against the world in `wit`.
fn componentize(job: &Job, bundle: &Path, wit: &Path) -> Result<()> {
    let Job {
        role,
        tools,
        work,
        out,
        what,
        ..
    } = *job;
    let (componentizer, prefix) = &tools.componentizer;
    run(
        Command::new(componentizer)
            .args(prefix)
            .arg(bundle)
            .arg("--wit")
            .arg(wit)
            .args(["--world-name", role.world(), "-o"])
            .arg(out)
            .current_dir(work),
        what,
        "componentize-js",
    )
}

/// The WIT folder the component is built against. A provider's world adds the
/// `wasi:filesystem` import of the SDK's `node:fs` (SDK_DIR's `../wit`) to the plugin world,
/// which it finds as a dependency.
fn wit_of(job: &Job) -> Result<PathBuf> {
    match job.role {
        Role::Provider => with_files(job, "provider.wit"),
        Role::Program | Role::PolicyPack => Ok(job.sdk.wit(job.role)),
    }
}

/// The WIT folder the prebuilt runtime for `job.role` is built against: its world adds the
/// `wasi:filesystem` import it reads the guest's bundle through.
fn runtime_wit(job: &Job) -> Result<PathBuf> {
    with_files(job, &format!("{}.wit", job.role.world()))
}

/// A WIT folder in the build's scratch directory holding `world` (a file of SDK_DIR's
/// `../wit`, which includes the plugin world and imports `wasi:filesystem`) and, as
/// dependencies, the plugin package, the WASI packages and the optional plinth packages a
/// provider exports (`plinth:inputs`, which needs `plinth:hints`).
fn with_files(job: &Job, world: &str) -> Result<PathBuf> {
    let plugin = job.sdk.plugin_wit();
    let wit = job.work.join("wit");
    let js_wit = job.sdk.dir(SDK_DIR).join("../wit");
    let copy = |from: &Path, to: &Path| {
        std::fs::create_dir_all(to.parent().expect("a folder"))?;
        std::fs::copy(from, to)
            .with_context(|| format!("copying {} for componentize-js", from.display()))
    };
    copy(&js_wit.join(world), &wit.join(world))?;
    for package in ["io", "clocks", "filesystem"] {
        let name = format!("wasi-{package}.wit");
        copy(
            &js_wit.join(&name),
            &wit.join("deps").join(package).join(&name),
        )?;
    }
    for package in ["inputs", "hints"] {
        let name = format!("{package}.wit");
        copy(
            &job.sdk.dir(&format!("wit/{package}/{name}")),
            &wit.join("deps").join(package).join(&name),
        )?;
    }
    for file in std::fs::read_dir(&plugin)? {
        let file = file?.path();
        if file.extension().is_some_and(|e| e == "wit") {
            let name = file.file_name().expect("a file");
            copy(&file, &wit.join("deps/plugin").join(name))?;
        }
    }
    Ok(wit)
}

/// The bundle's source map at `map_path`, written by esbuild in `out`, with its sources named
/// relative to the project (`index.ts`, `@plinth/sdk/program.ts`): the SDK reads it when it
/// reports an exception.
fn source_map(map_path: &Path, out: &Path, project: &Path) -> Result<serde_json::Value> {
    let mut map: serde_json::Value = serde_json::from_slice(&std::fs::read(map_path)?)
        .context("esbuild wrote an unreadable source map")?;
    if let Some(sources) = map.get_mut("sources").and_then(|s| s.as_array_mut()) {
        for source in sources {
            let Some(relative) = source.as_str() else {
                continue;
            };
            let absolute = normalize(&out.join(relative));
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
    Ok(map)
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

//! Guests per language: a provider written in Rust (`random`), TypeScript (`rest`) and Python
//! (`envfile`), and `examples/hello` in the three languages.
//!
//! - size: the component;
//! - build: componentizing the sources (plinth's build, as the first `preview` does it);
//! - compile: the component to machine code (a precompiled-cache miss);
//! - start: `load_provider` from a warm precompiled cache (load, instantiate, `info`);
//! - call: the mean latency of a `check` with a small input on a warm instance;
//! - up: `plinth up` of the hello example (4 resources) with every cache warm, median of runs.
//!
//! Run with `cargo bench -p plinth-cli --bench languages` (after `scripts/setup`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use plinth_engine::urn::Urn;
use plinth_engine::value::{PropertyMap, Value};
use plinth_runtime::{Access, DirGrant, Grants, Limits, Runtime, Tier};

const COMPILES: u32 = 3;
const STARTS: u32 = 20;
const WARMUP_CALLS: u32 = 200;
const CALLS: u32 = 5_000;
const UPS: usize = 5;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

struct Provider {
    language: &'static str,
    package: &'static str,
    source: &'static str,
    resource: &'static str,
    inputs: fn() -> PropertyMap,
}

const PROVIDERS: &[Provider] = &[
    Provider {
        language: "Rust",
        package: "random",
        source: "plugins/random",
        resource: "random:RandomPet",
        inputs: || [("length".to_owned(), Value::from(2i64))].into(),
    },
    Provider {
        language: "TypeScript",
        package: "rest",
        source: "plugins/rest",
        resource: "rest:Object",
        inputs: || {
            [
                ("path".to_owned(), Value::from("apps/demo")),
                ("data".to_owned(), Value::from("small")),
            ]
            .into()
        },
    },
    Provider {
        language: "Python",
        package: "envfile",
        source: "plugins/envfile",
        resource: "envfile:File",
        inputs: || [("path".to_owned(), Value::from("dev/app.env"))].into(),
    },
];

fn main() {
    let work = tempfile::tempdir().unwrap();
    let env_dir = work.path().join("env");
    std::fs::create_dir(&env_dir).unwrap();
    println!(
        "{:<11} {:>9} {:>10} {:>10} {:>10} {:>10}",
        "provider", "size KiB", "build s", "compile ms", "start ms", "call µs"
    );
    for p in PROVIDERS {
        let (wasm, build) = built(p.source, &work.path().join(p.package));
        let size = std::fs::metadata(&wasm).unwrap().len() / 1024;
        let mut compile = Duration::ZERO;
        for _ in 0..COMPILES {
            let cache = tempfile::tempdir().unwrap();
            let runtime = Runtime::new(cache.path().to_owned()).unwrap();
            let (_, stats) = runtime.load_component(&wasm, Tier::Optimized).unwrap();
            assert!(!stats.cache_hit);
            compile += stats.load;
        }
        let cache = tempfile::tempdir().unwrap();
        let runtime = Runtime::new(cache.path().to_owned()).unwrap();
        runtime.load_component(&wasm, Tier::Optimized).unwrap();
        let grants = Grants {
            dirs: vec![DirGrant {
                host: env_dir.clone(),
                guest: "/env".into(),
                access: Access::ReadWrite,
            }],
            ..Grants::default()
        };
        let (start, call) = tokio::runtime::Runtime::new().unwrap().block_on(async {
            let started = Instant::now();
            let mut provider = None;
            for _ in 0..STARTS {
                let limits = Limits::default();
                let loaded = runtime.load_provider(
                    p.package,
                    &wasm,
                    limits,
                    grants.clone(),
                    Tier::Optimized,
                );
                provider = Some(loaded.await.unwrap());
            }
            let start = started.elapsed() / STARTS;
            let provider = provider.unwrap();
            let urn = Urn::new("bench", "languages", None, p.resource, "r");
            let news = (p.inputs)();
            for _ in 0..WARMUP_CALLS {
                provider.check(&urn, None, &news).await.unwrap();
            }
            let started = Instant::now();
            for _ in 0..CALLS {
                provider.check(&urn, None, &news).await.unwrap();
            }
            (start, started.elapsed() / CALLS)
        });
        println!(
            "{:<11} {:>9} {:>10} {:>10.1} {:>10.2} {:>10.1}",
            p.language,
            size,
            build.map_or("-".into(), |b| format!("{:.1}", b.as_secs_f64())),
            compile.as_secs_f64() * 1e3 / f64::from(COMPILES),
            start.as_secs_f64() * 1e3,
            call.as_secs_f64() * 1e6,
        );
    }

    println!("\n{:<11} {:>14}", "hello", "up (warm) ms");
    let random = built("plugins/random", &work.path().join("random-hello")).0;
    for (language, example) in [
        ("Rust", "examples/hello"),
        ("TypeScript", "examples/hello-ts"),
        ("Python", "examples/hello-py"),
    ] {
        let up = warm_up_time(example, &random, work.path());
        println!("{language:<11} {:>14.0}", up.as_secs_f64() * 1e3);
    }
}

fn plinth(home: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_plinth"));
    cmd.env("PLINTH_HOME", home)
        .env("PLINTH_CONFIG_PASSPHRASE", "bench")
        .env("CARGO_TARGET_DIR", repo().join("target/wasm"))
        .env("NO_COLOR", "1");
    if std::env::var_os("PLINTH_TOOLS").is_none() {
        let home = std::env::var_os("HOME").expect("HOME is set");
        cmd.env("PLINTH_TOOLS", Path::new(&home).join(".plinth/tools"));
    }
    cmd
}

fn run(cmd: &mut Command) {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The component of the guest in `source`, built by plinth with an empty cache under `home`,
/// and how long a TypeScript or Python build took (a Rust crate is built by cargo, incrementally:
/// not measured).
fn built(source: &str, home: &Path) -> (PathBuf, Option<Duration>) {
    let dir = repo().join(source);
    if dir.join("Cargo.toml").is_file() {
        let package = format!("plinth-{}", dir.file_name().unwrap().to_string_lossy());
        run(Command::new(env!("CARGO"))
            .args([
                "build",
                "--release",
                "--quiet",
                "--target",
                "wasm32-wasip2",
                "-p",
                &package,
            ])
            .env("CARGO_TARGET_DIR", repo().join("target/wasm"))
            .current_dir(repo()));
        let name = format!("{}.wasm", package.replace('-', "_"));
        return (
            repo().join("target/wasm/wasm32-wasip2/release").join(name),
            None,
        );
    }
    let started = Instant::now();
    run(plinth(home).args(["plugin", "inspect"]).arg(&dir));
    let took = started.elapsed();
    let cache = home.join("build-cache");
    let wasm = std::fs::read_dir(&cache)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "wasm"))
        .expect("plinth cached the built component");
    (wasm, Some(took))
}

/// The median time of `plinth up` creating the example's resources, with the program built, the
/// plugin precompiled and the state empty before each run.
fn warm_up_time(example: &str, random: &Path, work: &Path) -> Duration {
    let name = example.rsplit('/').next().unwrap();
    let project = work.join(format!("project-{name}"));
    std::fs::create_dir(&project).unwrap();
    let source = repo().join(example);
    let yaml = std::fs::read_to_string(source.join("Plinth.yaml")).unwrap();
    let yaml = yaml
        .replace("program: .", &format!("program: {}", source.display()))
        .replace("../../plugins/random", &random.display().to_string());
    std::fs::write(project.join("Plinth.yaml"), yaml).unwrap();
    let home = work.join(format!("home-{name}"));
    let state = work.join(format!("state-{name}"));
    let cmd = |args: &[&str]| {
        let mut cmd = plinth(&home);
        cmd.args(args)
            .current_dir(&project)
            .env("PLINTH_BACKEND_URL", format!("file://{}", state.display()))
            .env("PLINTH_STACK", "bench");
        cmd
    };
    run(&mut cmd(&["stack", "init", "bench"]));
    run(&mut cmd(&["preview"])); // builds and precompiles everything
    let mut times = Vec::new();
    for _ in 0..UPS {
        let started = Instant::now();
        run(&mut cmd(&["up", "--yes", "--skip-preview"]));
        times.push(started.elapsed());
        run(&mut cmd(&["destroy", "--yes", "--skip-preview"]));
    }
    times.sort();
    times[UPS / 2]
}

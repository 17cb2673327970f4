//! `plinth-bench`: plinth measured through its real CLI (release build) on generated projects
//! of N resources, and its plugins' start and call costs against a native gRPC baseline.
//!
//! ```text
//! cargo run --release -p plinth-bench -- --sizes 100,1000,10000,30000
//! cargo run --release -p plinth-bench -- --sizes 1000,10000 --service
//! cargo run --release -p plinth-bench -- --sizes 10000 --service --service-fsync off,on
//! ```

mod cores;
mod grpc;
mod measure;
mod plugins;
mod report;
mod scenario;
mod service;
mod traffic;

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};
use clap::Parser;

/// Benchmarks plinth: `up`, no-op `up` and `preview`, `preview` and `up` with 10% changed,
/// `refresh` and `destroy` of N resources through the real CLI; plugin compile, start and
/// per-call costs, Wasm against a native gRPC plugin.
#[derive(Parser)]
struct Args {
    /// Resource counts to run, comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = [100, 1_000, 10_000])]
    sizes: Vec<u64>,
    /// Dependency shapes: `chains` (groups of 10, each item depending on the one before),
    /// `fanout` (groups of 10 depending on their first item), `independent`.
    #[arg(long, value_delimiter = ',', default_values = ["chains", "fanout"])]
    shapes: Vec<String>,
    /// The `plinth` binary; by default `target/release/plinth`, built first.
    #[arg(long)]
    plinth: Option<PathBuf>,
    /// Where projects, state and logs go (emptied first); default `target/bench`.
    #[arg(long)]
    work: Option<PathBuf>,
    /// Print JSON instead of the tables.
    #[arg(long)]
    json: bool,
    /// Calls per per-call figure.
    #[arg(long, default_value_t = 20_000)]
    calls: u32,
    /// Compilations for the compile figure.
    #[arg(long, default_value_t = 3)]
    compiles: u32,
    /// Plugin starts per start figure.
    #[arg(long, default_value_t = 50)]
    starts: u32,
    /// Skip the plugin start and call figures.
    #[arg(long)]
    no_plugins: bool,
    /// Also run every scenario on the service (PostgreSQL and one `plinth serve`, over
    /// loopback; requests and bytes as the CLI counts them), compared with the file backend.
    #[arg(long)]
    service: bool,
    /// The `plinth-serve` binary for `--service`; by default `target/release/plinth-serve`,
    /// built first.
    #[arg(long)]
    plinth_serve: Option<PathBuf>,
    /// With `--service`, the PostgreSQL settings to run it with: `off` (`fsync` and
    /// `synchronous_commit` off, as the tests run it), `on` (both on, as a production server
    /// runs), or `off,on` for both, one service each.
    #[arg(long, value_delimiter = ',', default_values = ["off"])]
    service_fsync: Vec<String>,
    /// With `--service`, run the service and its PostgreSQL on this machine's last CPU and
    /// every plinth command (on either backend) on the others (Linux): the service's work no
    /// longer takes the commands' CPU, as a service deployed on a machine of its own does not.
    #[arg(long, requires = "service")]
    service_cpu: bool,
    /// Resource operations in flight, passed to `up`, `refresh` and `destroy` as `--parallel`
    /// (plinth's own default if absent).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    parallel: Option<u32>,
    /// Runs of every scenario, the backends taking turns; each figure is the median of the runs
    /// (one run varies by a fifth on a busy machine).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    runs: u32,
    /// Also run every shape with a distinct secret in every item (`<shape>+secrets`), as a
    /// stack of many generated passwords: learning and masking secrets must stay linear.
    #[arg(long)]
    secrets: bool,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    for shape in &args.shapes {
        if !["chains", "fanout", "independent"].contains(&shape.as_str()) {
            bail!("unknown shape `{shape}`: use chains, fanout or independent");
        }
    }
    if args.sizes.is_empty() || args.sizes.contains(&0) {
        bail!("--sizes needs at least one count, each at least 1");
    }
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .context("the bench crate lives in the repository")?
        .to_owned();
    // Absolute: every command runs in its project's directory, below it.
    let work = std::path::absolute(args.work.clone().unwrap_or(repo.join("target/bench")))
        .context("the --work directory")?;
    if work.exists() {
        std::fs::remove_dir_all(&work).with_context(|| format!("emptying {}", work.display()))?;
    }
    std::fs::create_dir_all(&work)?;

    let plinth = match &args.plinth {
        Some(plinth) => std::fs::canonicalize(plinth)
            .with_context(|| format!("the plinth binary {}", plinth.display()))?,
        None => {
            cargo(
                &repo,
                &["build", "--release", "--quiet", "-p", "plinth-cli"],
                None,
            )?;
            repo.join("target/release/plinth")
        }
    };
    let mut durabilities = Vec::new();
    for fsync in &args.service_fsync {
        let durable = match fsync.as_str() {
            "off" => false,
            "on" => true,
            other => bail!("unknown --service-fsync `{other}`: use off, on, or off,on"),
        };
        if !durabilities.contains(&durable) {
            durabilities.push(durable);
        }
    }
    let placement = match args.service_cpu {
        true => Some(cores::Placement::split()?),
        false => None,
    };
    let services = if args.service {
        let serve = match &args.plinth_serve {
            Some(serve) => std::fs::canonicalize(serve)
                .with_context(|| format!("the plinth-serve binary {}", serve.display()))?,
            None => {
                cargo(
                    &repo,
                    &["build", "--release", "--quiet", "-p", "plinth-service"],
                    None,
                )?;
                repo.join("target/release/plinth-serve")
            }
        };
        if let Some(placement) = &placement {
            cores::run_on(&[placement.service])?;
        }
        (durabilities.iter())
            .map(|&durable| {
                let log = match durable {
                    true => "serve-fsync.log",
                    false => "serve.log",
                };
                service::Service::start(&serve, &work.join(log), durable)
            })
            .collect::<anyhow::Result<Vec<_>>>()?
    } else {
        Vec::new()
    };
    if let Some(placement) = &placement {
        for service in &services {
            placement.check_service(service.serve.id())?;
        }
        cores::run_on(&placement.commands)?;
    }
    let (program, provider) = build_guests(&repo)?;
    let setup = scenario::Setup {
        plinth,
        program,
        provider,
        home: work.join("home"),
        work: work.clone(),
        parallel: args.parallel,
    };
    warm_cache(&setup)?;

    let plugins = if args.no_plugins {
        None
    } else {
        let grpc = sibling_binary("plinth-bench-grpc-provider")?;
        let repeats = plugins::Repeats {
            compiles: args.compiles.max(1),
            starts: args.starts.max(1),
            calls: args.calls.max(1),
        };
        let tokio = tokio::runtime::Runtime::new()?;
        let cache = setup.home.join("cache");
        Some(tokio.block_on(plugins::measure(&setup.provider, &grpc, &cache, repeats))?)
    };

    let mut backends = vec![scenario::Backend::File];
    backends.extend(services.iter().map(scenario::Backend::Service));
    let mut scenarios = Vec::new();
    let variants: &[bool] = if args.secrets {
        &[false, true]
    } else {
        &[false]
    };
    for &count in &args.sizes {
        for shape in &args.shapes {
            for &secrets in variants {
                let mut runs = vec![Vec::new(); backends.len()];
                for run in 1..=args.runs {
                    for (&backend, runs) in backends.iter().zip(&mut runs) {
                        eprintln!(
                            "plinth-bench: {count} resources, {shape}{}, {} backend, run {run} \
                             of {}",
                            if secrets { " with secrets" } else { "" },
                            backend.name(),
                            args.runs
                        );
                        runs.push(scenario::run(&setup, backend, shape, count, run, secrets)?);
                    }
                }
                scenarios.extend(runs.into_iter().map(scenario::Scenario::median));
            }
        }
    }
    let mut report = report::Report::new(scenarios, plugins, args.parallel, args.runs);
    if let Some(placement) = &placement {
        // Back on every CPU: the report names the machine's.
        cores::run_on(&placement.all())?;
        report = report.placed(placement.describe());
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report.to_json())?);
    } else {
        print!("{}", report.tables());
    }
    Ok(())
}

/// Runs cargo in `repo`, with `target_dir` as `CARGO_TARGET_DIR` if given.
fn cargo(repo: &Path, args: &[&str], target_dir: Option<&Path>) -> anyhow::Result<()> {
    let mut command = Command::new(std::env::var_os("CARGO").unwrap_or("cargo".into()));
    command.args(args).current_dir(repo);
    if let Some(dir) = target_dir {
        command.env("CARGO_TARGET_DIR", dir);
    }
    let status = command
        .status()
        .with_context(|| format!("running cargo {}", args.join(" ")))?;
    if !status.success() {
        bail!("cargo {} failed", args.join(" "));
    }
    Ok(())
}

/// Builds the benchmark's program and provider components (release, `wasm32-wasip2`) where
/// the end-to-end tests build theirs; returns their paths.
fn build_guests(repo: &Path) -> anyhow::Result<(PathBuf, PathBuf)> {
    let target = repo.join("target/wasm");
    cargo(
        repo,
        &[
            "build",
            "--release",
            "--quiet",
            "--target",
            "wasm32-wasip2",
            "-p",
            "plinth-bench-program",
            "-p",
            "plinth-bench-provider",
        ],
        Some(&target),
    )?;
    let out = target.join("wasm32-wasip2/release");
    Ok((
        out.join("plinth_bench_program.wasm"),
        out.join("plinth_bench_provider.wasm"),
    ))
}

/// Compiles both components into the precompiled cache, so that every measured command starts
/// them from it (compiling is measured on its own).
fn warm_cache(setup: &scenario::Setup) -> anyhow::Result<()> {
    for wasm in [&setup.program, &setup.provider] {
        let mut command = Command::new(&setup.plinth);
        command
            .args(["plugin", "inspect"])
            .arg(wasm)
            .env("PLINTH_HOME", &setup.home);
        measure::run(command, &setup.work.join("warm-cache.log"))?;
    }
    Ok(())
}

/// A binary built beside this one (the same cargo profile).
fn sibling_binary(name: &str) -> anyhow::Result<PathBuf> {
    let me = std::env::current_exe()?;
    let path = me.with_file_name(name);
    if !path.is_file() {
        bail!(
            "{} is missing: build the whole bench crate (cargo build --release -p plinth-bench)",
            path.display()
        );
    }
    Ok(path)
}

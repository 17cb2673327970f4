//! One project of N `bench:Item`s, driven through the real CLI from an empty stack to a
//! destroyed one, every step measured.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, bail};

use crate::measure::{self, Cost};
use crate::service::Service;
use crate::traffic::{self, Traffic};

/// The steps, in the order they run, with the arguments given to `plinth`.
pub const STEPS: &[(&str, &[&str])] = &[
    ("up", &["up", "--yes", "--skip-preview"]),
    ("no-op up", &["up", "--yes", "--skip-preview"]),
    ("no-op preview", &["preview", "--expect-no-changes"]),
    ("preview 10%", &["preview"]),
    ("up 10%", &["up", "--yes", "--skip-preview"]),
    ("refresh", &["refresh", "--yes", "--skip-preview"]),
    ("destroy", &["destroy", "--yes", "--skip-preview"]),
];

/// The commands given `--parallel` when the benchmark sets it.
const PARALLEL_STEPS: &[&str] = &["up", "refresh", "destroy"];

/// The step before which the program's configuration changes 10% of the items.
const FIRST_CHANGED_STEP: &str = "preview 10%";

/// The guests and the binary a scenario runs.
pub struct Setup {
    pub plinth: PathBuf,
    pub program: PathBuf,
    pub provider: PathBuf,
    /// `PLINTH_HOME`: the plugin store and the precompiled cache, warm before any step.
    pub home: PathBuf,
    pub work: PathBuf,
    /// `--parallel` for the steps that change resources; plinth's default if `None`.
    pub parallel: Option<u32>,
}

/// Where a scenario's stack lives.
#[derive(Clone, Copy)]
pub enum Backend<'a> {
    /// The file backend, in a directory of the scenario's own.
    File,
    /// The service.
    Service(&'a Service),
}

impl Backend<'_> {
    pub fn name(&self) -> &'static str {
        match self {
            Backend::File => "file",
            Backend::Service(_) => "service",
        }
    }
}

/// What one step cost, and the checkpoint it left.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Step {
    pub step: &'static str,
    #[serde(flatten)]
    pub cost: Cost,
    pub checkpoint_bytes: u64,
    /// What crossed the wire to and from the service (none on the file backend).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub traffic: Option<Traffic>,
}

/// The measured run of one shape and size.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Scenario {
    pub backend: &'static str,
    pub shape: String,
    pub resources: u64,
    pub steps: Vec<Step>,
}

impl Scenario {
    /// One scenario whose every figure is the median of `runs`' (of the same scenario).
    pub fn median(runs: Vec<Scenario>) -> Scenario {
        let first = runs.first().expect("a scenario runs at least once");
        let steps = (0..first.steps.len())
            .map(|i| {
                let figure = |of: fn(&Step) -> u64| median(runs.iter().map(|r| of(&r.steps[i])));
                let traffic = first.steps[i].traffic.map(|_| Traffic {
                    requests: figure(|s| s.traffic.unwrap_or_default().requests),
                    bytes_sent: figure(|s| s.traffic.unwrap_or_default().bytes_sent),
                    bytes_received: figure(|s| s.traffic.unwrap_or_default().bytes_received),
                });
                Step {
                    step: first.steps[i].step,
                    cost: Cost {
                        wall: Duration::from_nanos(figure(|s| s.cost.wall.as_nanos() as u64)),
                        cpu: Duration::from_nanos(figure(|s| s.cost.cpu.as_nanos() as u64)),
                        peak_rss: figure(|s| s.cost.peak_rss),
                        write_bytes: figure(|s| s.cost.write_bytes),
                    },
                    checkpoint_bytes: figure(|s| s.checkpoint_bytes),
                    traffic,
                }
            })
            .collect();
        Scenario {
            backend: first.backend,
            shape: first.shape.clone(),
            resources: first.resources,
            steps,
        }
    }

    pub fn step(&self, name: &str) -> &Step {
        (self.steps.iter())
            .find(|s| s.step == name)
            .expect("every step runs")
    }
}

/// The middle of `values` (the lower of the two middle ones for an even count).
fn median(values: impl Iterator<Item = u64>) -> u64 {
    let mut values: Vec<u64> = values.collect();
    values.sort_unstable();
    values[(values.len() - 1) / 2]
}

/// A project directory with its own stack, driven by the CLI.
struct Project<'a> {
    setup: &'a Setup,
    backend: Backend<'a>,
    dir: PathBuf,
    /// The file backend's directory.
    state: PathBuf,
    /// The stack's name: the service holds every scenario's stack in one project.
    stack: String,
    log: PathBuf,
}

impl Project<'_> {
    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(&self.setup.plinth);
        match self.backend {
            Backend::File => command.env(
                "PLINTH_BACKEND_URL",
                format!("file://{}", self.state.display()),
            ),
            Backend::Service(service) => command
                .env("PLINTH_BACKEND_URL", &service.url)
                .env("PLINTH_ACCESS_TOKEN", &service.token),
        };
        command
            .args(args)
            .current_dir(&self.dir)
            .env("PLINTH_HOME", &self.setup.home)
            .env("PLINTH_STACK", &self.stack)
            .env("PLINTH_CONFIG_PASSPHRASE", "benchmark passphrase")
            .env("NO_COLOR", "1")
            .env("RUST_LOG", traffic::LOG_FILTER);
        command
    }

    /// Runs an unmeasured setup command.
    fn run(&self, args: &[&str]) -> anyhow::Result<()> {
        measure::run(self.command(args), &self.log).map(drop)
    }

    /// The stack's checkpoint: the file the file backend keeps, or the service's export.
    fn checkpoint(&self) -> anyhow::Result<Vec<u8>> {
        match self.backend {
            Backend::File => {
                let path = self.state.join(format!("stacks/bench/{}.json", self.stack));
                std::fs::read(&path).with_context(|| format!("reading {}", path.display()))
            }
            Backend::Service(_) => {
                let out = self.command(&["stack", "export"]).output()?;
                if !out.status.success() {
                    bail!(
                        "plinth stack export failed: {}",
                        String::from_utf8_lossy(&out.stderr)
                    );
                }
                Ok(out.stdout)
            }
        }
    }

    /// What the command whose output follows byte `logged` of the log exchanged with the
    /// service.
    fn traffic_since(&self, logged: u64) -> anyhow::Result<Traffic> {
        let log =
            std::fs::read(&self.log).with_context(|| format!("reading {}", self.log.display()))?;
        let output = String::from_utf8_lossy(&log[logged as usize..]);
        Traffic::from_output(&output).with_context(|| {
            format!(
                "the command told no traffic with the service (no `traffic with` line); see {}",
                self.log.display()
            )
        })
    }

    /// The items `checkpoint` records, and how many of them have a changed payload.
    fn recorded(checkpoint: &[u8]) -> anyhow::Result<(usize, usize)> {
        let checkpoint: serde_json::Value = serde_json::from_slice(checkpoint)?;
        let resources = checkpoint["snapshot"]["resources"]
            .as_array()
            .context("the checkpoint has no resource list")?;
        let items: Vec<_> = (resources.iter())
            .filter(|r| r["type"].as_str() == Some("bench:Item"))
            .collect();
        let changed = (items.iter())
            .filter(|r| (r["outputs"]["payload"].as_str()).is_some_and(|p| p.ends_with("changed")))
            .count();
        Ok((items.len(), changed))
    }
}

/// Runs every step on a new project of `count` items of `shape`, its stack on `backend`; `run`
/// counts the runs of the same scenario from 1 (the service keeps each run's stack). With
/// `secrets`, every item holds a distinct secret, and the shape is reported as
/// `<shape>+secrets`.
pub fn run(
    setup: &Setup,
    backend: Backend<'_>,
    shape: &str,
    count: u64,
    run: u32,
    secrets: bool,
) -> anyhow::Result<Scenario> {
    let label = if secrets {
        format!("{shape}+secrets")
    } else {
        shape.to_owned()
    };
    let name = format!("{}-{label}-{count}", backend.name());
    let dir = setup.work.join("projects").join(&name);
    let state = setup.work.join("state").join(&name);
    for fresh in [&dir, &state] {
        if fresh.exists() {
            std::fs::remove_dir_all(fresh)
                .with_context(|| format!("removing {}", fresh.display()))?;
        }
        std::fs::create_dir_all(fresh)?;
    }
    write_project(&dir, setup)?;
    let project = Project {
        setup,
        backend,
        log: setup.work.join(format!("{name}.log")),
        dir,
        state,
        stack: match backend {
            Backend::File => "bench".to_owned(),
            Backend::Service(_) => format!("{}-{count}-{run}", label.replace('+', "-")),
        },
    };
    let _ = std::fs::remove_file(&project.log);
    project.run(&["stack", "init", &project.stack])?;
    project.run(&["config", "set", "count", &count.to_string()])?;
    project.run(&["config", "set", "shape", shape])?;
    if secrets {
        project.run(&["config", "set", "secrets", "true"])?;
    }

    if let Backend::Service(_) = backend {
        // A service runs for days: its first update of this size after it started would also
        // pay for opening database connections and growing its heap, which no later one does.
        project.run(&["up", "--yes", "--skip-preview"])?;
        project.run(&["destroy", "--yes", "--skip-preview"])?;
    }
    let mut steps = Vec::new();
    for (step, args) in STEPS {
        if *step == FIRST_CHANGED_STEP {
            project.run(&["config", "set", "changed", "10"])?;
        }
        let mut command = project.command(args);
        if let Some(parallel) = setup.parallel
            && PARALLEL_STEPS.contains(&args[0])
        {
            command.args(["--parallel", &parallel.to_string()]);
        }
        let logged = std::fs::metadata(&project.log).map_or(0, |m| m.len());
        let cost = measure::run(command, &project.log)?;
        let traffic = match backend {
            Backend::File => None,
            Backend::Service(_) => Some(project.traffic_since(logged)?),
        };
        let checkpoint = project.checkpoint()?;
        steps.push(Step {
            step,
            cost,
            checkpoint_bytes: checkpoint.len() as u64,
            traffic,
        });
        let expected = match *step {
            "destroy" => (0, 0),
            // The first item of every group of 10.
            "up 10%" | "refresh" => (count as usize, count.div_ceil(10) as usize),
            _ => (count as usize, 0),
        };
        let recorded = Project::recorded(&checkpoint)?;
        if recorded != expected {
            bail!(
                "after `{step}` of {name}, the checkpoint records {} items ({} changed) instead \
                 of {} ({} changed); see {}",
                recorded.0,
                recorded.1,
                expected.0,
                expected.1,
                project.log.display()
            );
        }
    }
    Ok(Scenario {
        backend: backend.name(),
        shape: label,
        resources: count,
        steps,
    })
}

fn write_project(dir: &Path, setup: &Setup) -> anyhow::Result<()> {
    let yaml = format!(
        "name: bench\n\
         description: Generated by plinth-bench.\n\
         program: {}\n\
         plugins:\n  bench:\n    path: {}\n",
        setup.program.display(),
        setup.provider.display()
    );
    std::fs::write(dir.join("Plinth.yaml"), yaml)?;
    Ok(())
}

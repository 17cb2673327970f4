//! The report: a table of the CLI runs and one of the plugin figures, or the same as JSON.

use std::fmt::Write;
use std::time::Duration;

use serde_json::json;

use crate::measure::Cost;
use crate::plugins::PluginFigures;
use crate::scenario::{STEPS, Scenario};

/// The suffix of a shape whose every item holds a distinct secret.
const SECRETS: &str = "+secrets";

pub struct Report {
    scenarios: Vec<Scenario>,
    plugins: Option<PluginFigures>,
    /// The `--parallel` given to the steps that change resources; plinth's default if `None`.
    parallel: Option<u32>,
    /// Runs of each scenario whose median every figure is.
    runs: u32,
    /// Where the service and the commands ran, if on CPUs of their own (`--service-cpu`).
    placement: Option<String>,
}

impl Report {
    pub fn new(
        scenarios: Vec<Scenario>,
        plugins: Option<PluginFigures>,
        parallel: Option<u32>,
        runs: u32,
    ) -> Report {
        Report {
            scenarios,
            plugins,
            parallel,
            runs,
            placement: None,
        }
    }

    /// The report of runs placed as `placement` says.
    pub fn placed(self, placement: String) -> Report {
        Report {
            placement: Some(placement),
            ..self
        }
    }

    fn parallel(&self) -> String {
        self.parallel
            .map_or_else(|| "plinth's default".to_owned(), |n| n.to_string())
    }

    pub fn to_json(&self) -> serde_json::Value {
        let plugins = self.plugins.as_ref().map(|p| {
            json!({
                "wasm_compile_us": micros(p.wasm_compile),
                "wasm_start_us": micros(p.wasm_start),
                "grpc_start_us": micros(p.grpc_start),
                "start_ratio": ratio(p.grpc_start, p.wasm_start),
                "wasm_call_us": micros(p.wasm_call),
                "grpc_call_us": micros(p.grpc_call),
                "call_ratio": ratio(p.grpc_call, p.wasm_call),
            })
        });
        let scenarios: Vec<_> = (self.scenarios.iter())
            .map(|s| {
                let steps: Vec<_> = (s.steps.iter())
                    .map(|step| {
                        let mut figures = json!({
                            "step": step.step,
                            "wall_s": step.cost.wall.as_secs_f64(),
                            "cpu_s": step.cost.cpu.as_secs_f64(),
                            "peak_rss_bytes": step.cost.peak_rss,
                            "write_bytes": step.cost.write_bytes,
                            "checkpoint_bytes": step.checkpoint_bytes,
                        });
                        if let Some(traffic) = &step.traffic {
                            figures["requests"] = traffic.requests.into();
                            figures["bytes_sent"] = traffic.bytes_sent.into();
                            figures["bytes_received"] = traffic.bytes_received.into();
                        }
                        figures
                    })
                    .collect();
                let mut scenario = json!({
                    "backend": s.backend,
                    "shape": s.shape,
                    "resources": s.resources,
                    "steps": steps,
                });
                if let Some(plain) = self.without_secrets(s) {
                    let ratios = |of: fn(&Cost) -> Duration| -> serde_json::Map<_, _> {
                        (s.steps.iter())
                            .map(|step| {
                                let plain = of(&plain.step(step.step).cost);
                                (step.step.to_owned(), ratio(of(&step.cost), plain).into())
                            })
                            .collect()
                    };
                    scenario["secrets_ratio"] = ratios(|c| c.wall).into();
                    scenario["secrets_cpu_ratio"] = ratios(|c| c.cpu).into();
                }
                scenario
            })
            .collect();
        json!({
            "machine": machine(),
            "parallel": self.parallel,
            "runs": self.runs,
            "placement": self.placement,
            "plugins": plugins,
            "scenarios": scenarios,
        })
    }

    pub fn tables(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "machine: {}", machine());
        let _ = writeln!(
            out,
            "--parallel of up, refresh and destroy: {}",
            self.parallel()
        );
        if let Some(placement) = &self.placement {
            let _ = writeln!(out, "CPUs: {placement}");
        }
        let _ = match self.runs {
            1 => writeln!(out, "each figure from one run\n"),
            runs => writeln!(
                out,
                "each figure the median of {runs} runs, the backends taking turns\n"
            ),
        };
        let mut header = vec!["shape".to_owned(), "N".to_owned()];
        header.extend(STEPS.iter().map(|(step, _)| step.to_string()));
        header
            .extend(["peak RSS", "checkpoint", "written by up", "÷ checkpoint"].map(str::to_owned));
        let mut rows = vec![header];
        for s in self.on("file") {
            let mut row = vec![s.shape.clone(), thousands(s.resources)];
            row.extend(s.steps.iter().map(|step| seconds(step.cost.wall)));
            let peak = (s.steps.iter()).map(|step| step.cost.peak_rss).max();
            let up = s.step("up");
            row.push(megabytes(peak.unwrap_or(0)));
            row.push(megabytes(up.checkpoint_bytes));
            row.push(megabytes(up.cost.write_bytes));
            row.push(format!(
                "{:.1}",
                up.cost.write_bytes as f64 / up.checkpoint_bytes.max(1) as f64
            ));
            rows.push(row);
        }
        markdown(&mut out, &rows);
        let _ = writeln!(
            out,
            "\nwall time per command; peak RSS: the largest of the commands; written by up: \
             write_bytes of the `up` process (/proc/<pid>/io); MB = 10^6 bytes"
        );
        self.cpu_table(&mut out);
        self.service_table(&mut out);
        self.secrets_table(&mut out);
        if let Some(p) = &self.plugins {
            let rows = vec![
                vec![
                    "plugin".to_owned(),
                    "Wasm".to_owned(),
                    "gRPC subprocess".to_owned(),
                    "gRPC ÷ Wasm".to_owned(),
                ],
                vec![
                    "compile (precompiled-cache miss)".to_owned(),
                    human(p.wasm_compile),
                    "—".to_owned(),
                    "—".to_owned(),
                ],
                vec![
                    "start (warm cache / spawn + connect)".to_owned(),
                    human(p.wasm_start),
                    human(p.grpc_start),
                    format!("{:.0}×", ratio(p.grpc_start, p.wasm_start)),
                ],
                vec![
                    "call (`check`, warm)".to_owned(),
                    human(p.wasm_call),
                    human(p.grpc_call),
                    format!("{:.0}×", ratio(p.grpc_call, p.wasm_call)),
                ],
            ];
            out.push('\n');
            markdown(&mut out, &rows);
        }
        out
    }
}

impl Report {
    /// The CPU time (user + system) of every command on the file backend: on a busy machine,
    /// steadier than the wall time.
    fn cpu_table(&self, out: &mut String) {
        let mut header = vec!["shape".to_owned(), "N".to_owned()];
        header.extend(STEPS.iter().map(|(step, _)| step.to_string()));
        let mut rows = vec![header];
        for s in self.on("file") {
            let mut row = vec![s.shape.clone(), thousands(s.resources)];
            row.extend(s.steps.iter().map(|step| seconds(step.cost.cpu)));
            rows.push(row);
        }
        out.push('\n');
        markdown(out, &rows);
        let _ = writeln!(out, "\nCPU time (user + system) per command, file backend");
    }

    /// The same scenario as `with` (a `<shape>+secrets` one) without secrets, if it ran.
    fn without_secrets(&self, with: &Scenario) -> Option<&Scenario> {
        let shape = with.shape.strip_suffix(SECRETS)?;
        (self.scenarios.iter()).find(|s| {
            s.backend == with.backend && s.shape == shape && s.resources == with.resources
        })
    }

    /// Each step of every `<shape>+secrets` scenario beside the same step without secrets: a
    /// distinct secret per resource must cost at most 1.5 times as much (issue 26).
    fn secrets_table(&self, out: &mut String) {
        let mut rows = vec![
            [
                "backend",
                "shape",
                "N",
                "step",
                "without",
                "with secrets",
                "÷ without",
                "CPU without",
                "CPU with secrets",
                "CPU ÷ without",
            ]
            .map(str::to_owned)
            .to_vec(),
        ];
        for with in &self.scenarios {
            let Some(plain) = self.without_secrets(with) else {
                continue;
            };
            for step in &with.steps {
                let without = plain.step(step.step).cost;
                rows.push(vec![
                    with.backend.to_owned(),
                    with.shape.clone(),
                    thousands(with.resources),
                    step.step.to_owned(),
                    seconds(without.wall),
                    seconds(step.cost.wall),
                    format!("{:.2}", ratio(step.cost.wall, without.wall)),
                    seconds(without.cpu),
                    seconds(step.cost.cpu),
                    format!("{:.2}", ratio(step.cost.cpu, without.cpu)),
                ]);
            }
        }
        if rows.len() == 1 {
            return;
        }
        out.push('\n');
        markdown(out, &rows);
        let _ = writeln!(
            out,
            "\nwith secrets: every resource holds a distinct secret input, echoed as a secret \
             output (sealed in state, learned and masked by the run); wall time, and CPU time \
             (user + system), steadier on a loaded machine"
        );
    }

    fn on<'a>(&'a self, backend: &'a str) -> impl Iterator<Item = &'a Scenario> {
        self.scenarios.iter().filter(move |s| s.backend == backend)
    }

    /// Each step on the service beside the same step on the file backend, with what crossed
    /// the wire.
    fn service_table(&self, out: &mut String) {
        let mut rows = vec![
            [
                "PostgreSQL",
                "shape",
                "N",
                "step",
                "file",
                "service",
                "÷ file",
                "requests",
                "sent",
                "received",
            ]
            .map(str::to_owned)
            .to_vec(),
        ];
        let on_service = (self.scenarios.iter()).filter(|s| s.backend.starts_with("service"));
        for s in on_service {
            let postgres = match s.backend.contains("fsync on") {
                true => "fsync on",
                false => "fsync off",
            };
            let file = self
                .on("file")
                .find(|f| f.shape == s.shape && f.resources == s.resources);
            for step in &s.steps {
                let traffic = step.traffic.unwrap_or_default();
                let on_file = file.map(|f| f.step(step.step).cost.wall);
                rows.push(vec![
                    postgres.to_owned(),
                    s.shape.clone(),
                    thousands(s.resources),
                    step.step.to_owned(),
                    on_file.map_or("—".to_owned(), seconds),
                    seconds(step.cost.wall),
                    on_file.map_or("—".to_owned(), |f| {
                        format!("{:.2}", ratio(step.cost.wall, f))
                    }),
                    thousands(traffic.requests),
                    megabytes(traffic.bytes_sent),
                    megabytes(traffic.bytes_received),
                ]);
            }
        }
        if rows.len() == 1 {
            return;
        }
        out.push('\n');
        markdown(out, &rows);
        let _ = writeln!(
            out,
            "\nthe service: PostgreSQL (fsync off: `fsync`, `synchronous_commit` and \
             `full_page_writes` off, as the tests run it; fsync on: all three on, as a production \
             server runs) and one plinth serve on this machine, over loopback, measured after one unmeasured `up` and `destroy` of the same size (a \
             running service has its connections open); requests and bytes (HTTP bodies as they \
             crossed the wire, compressed when they were) as the CLI counts them"
        );
    }
}

/// Appends `rows` (the first is the header) as a Markdown table with aligned columns.
fn markdown(out: &mut String, rows: &[Vec<String>]) {
    let columns = rows[0].len();
    let widths: Vec<usize> = (0..columns)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    for (i, row) in rows.iter().enumerate() {
        let cells: Vec<String> = (row.iter().zip(&widths))
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        let _ = writeln!(out, "| {} |", cells.join(" | "));
        if i == 0 {
            let rules: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
            let _ = writeln!(out, "|-{}-|", rules.join("-|-"));
        }
    }
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find_map(|l| l.strip_prefix("model name"))
                .map(|l| l.trim_start_matches([' ', '\t', ':']).to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".to_owned());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!("{cores} cores, {cpu}, {}", std::env::consts::OS)
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64().max(f64::MIN_POSITIVE)
}

fn seconds(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}

fn human(d: Duration) -> String {
    let us = micros(d);
    if us < 1_000.0 {
        format!("{us:.2} µs")
    } else {
        format!("{:.2} ms", us / 1_000.0)
    }
}

fn megabytes(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

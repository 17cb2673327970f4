//! Hostile plugins: the `adversary` provider (tests/plugins/adversary) attacks the sandbox it
//! runs in — the host's files, its CPU, its memory, its stack — and breaks in every provider
//! operation. Each attack must be contained: the run fails with an error that names the plugin,
//! what it tried and the limit it hit; the state stays valid and later runs work; independent
//! steps finish or the run stops cleanly; `plinth` itself never crashes or hangs.
//!
//! Every attack runs next to `ok`, an independent `testkit:Echo`, as the resource `x` of the
//! scenario program (`type_x`, `inputs_x`). The plugin is granted `./world` read-only at
//! `/world` and `./scratch` read-write at `/scratch`; `./private` and a directory outside the
//! project hold secrets it must not reach.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::{Env, guest};

const SECRET: &str = "the host's secret";
const PROJECT_SECRET: &str = "the project's secret";
const INSIDE: &str = "inside the grant";

/// What the adversary plugin is granted; `limits` (YAML lines under the plugin) come after.
fn adversary_yaml(limits: &str) -> String {
    format!(
        "  adversary:\n    path: {}\n    grants:\n      dirs:\n        \
         - {{ host: ./world, guest: /world, access: read-only }}\n        \
         - {{ host: ./scratch, guest: /scratch, access: read-write }}\n{limits}",
        guest("plinth-adversary").display()
    )
}

/// A scenario project with the adversary plugin, and the host files it goes after.
struct Arena {
    env: Env,
    /// A directory outside the project, holding `secret.txt`.
    outside: tempfile::TempDir,
}

impl Arena {
    fn new() -> Arena {
        Arena::with_limits("")
    }

    /// An arena whose adversary plugin runs under `limits` (YAML lines under the plugin).
    fn with_limits(limits: &str) -> Arena {
        let env = Env::scenario_with(&adversary_yaml(limits));
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.txt"), SECRET).unwrap();
        let arena = Arena { env, outside };
        for dir in ["world", "scratch", "private"] {
            std::fs::create_dir(arena.host(dir)).unwrap();
        }
        std::fs::write(arena.host("world/inside.txt"), INSIDE).unwrap();
        std::fs::write(arena.host("private/secret.txt"), PROJECT_SECRET).unwrap();
        arena
    }

    /// A path on the host, relative to the project.
    fn host(&self, relative: &str) -> PathBuf {
        self.env.project.join(relative)
    }

    fn secret(&self) -> PathBuf {
        self.outside.path().join("secret.txt")
    }

    /// Registers `ok` and the resource `x` of type `ty` with `inputs` (`key=value;...`).
    fn declare(&self, ty: &str, inputs: &str) {
        self.env.config("resources", "ok,x");
        self.env.config("type_x", ty);
        self.env.config("inputs_x", inputs);
    }

    /// Runs `up` with `x` attacking as `ty` with `inputs`; it must fail. Checks that the
    /// attack was contained, and returns what plinth printed on stderr.
    fn attack(&self, ty: &str, inputs: &str) -> String {
        self.declare(ty, inputs);
        let stderr = self.env.fails(&["up", "--yes", "--skip-preview"]);
        assert!(
            stderr.contains("plugin `adversary`"),
            "the error does not name the plugin:\n{stderr}"
        );
        self.assert_contained(&stderr);
        stderr
    }

    /// Runs `up` with `x` as `ty` with `inputs`; it must succeed. Returns `x`'s outputs.
    fn allowed(&self, ty: &str, inputs: &str) -> Value {
        self.declare(ty, inputs);
        self.env.ok(&["up", "--yes", "--skip-preview"]);
        let outputs = outputs_of(&self.env.export(), "x");
        // Start the next case afresh.
        self.env.config("resources", "ok");
        self.env.ok(&["up", "--yes", "--skip-preview"]);
        outputs
    }

    /// After a contained attack: no secret leaked, the state loads and is consistent (no
    /// operation left pending, every resource whole), and a run without the attacker works.
    fn assert_contained(&self, stderr: &str) {
        let state = self.env.export();
        let text = state.to_string();
        for secret in [SECRET, PROJECT_SECRET] {
            assert!(!stderr.contains(secret), "a secret leaked:\n{stderr}");
            assert!(
                !text.contains(secret),
                "a secret reached the state:\n{text}"
            );
        }
        // The provider answered every call, if only with a crash: nothing is left in doubt.
        assert!(
            state["snapshot"]["pending_operations"]
                .as_array()
                .is_none_or(Vec::is_empty),
            "pending operations after the attack: {state:#}"
        );
        let custom = state["snapshot"]["resources"].as_array().unwrap().iter();
        for resource in custom.filter(|r| r["custom"] == true) {
            assert!(
                resource["id"].as_str().is_some_and(|id| !id.is_empty()),
                "a resource without an id: {resource}"
            );
        }
        self.env.config("resources", "ok");
        self.env.ok(&["up", "--yes", "--skip-preview"]);
        assert_eq!(
            managed(&self.env),
            ["ok"],
            "after the attack, then a clean run"
        );
    }
}

/// The names of the stack's resources, but its provider resources (`plinth:providers:*`) and
/// its root.
fn managed(env: &Env) -> Vec<String> {
    let state = env.export();
    let mut names: Vec<String> = state["snapshot"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| {
            let urn = r["urn"].as_str().unwrap();
            let (ty, name) = urn.rsplit_once("::").unwrap();
            let configuration =
                ty.contains("::plinth:providers:") || ty.ends_with("::plinth:plinth:Stack");
            (!configuration).then(|| name.to_owned())
        })
        .collect();
    names.sort();
    names
}

/// The outputs of the resource named `name` in an exported state.
fn outputs_of(state: &Value, name: &str) -> Value {
    state["snapshot"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["urn"].as_str().unwrap().ends_with(&format!("::{name}")))
        .unwrap_or_else(|| panic!("no resource `{name}` in {state:#}"))["outputs"]
        .clone()
}

/// The resources of an exported state by URN: independent steps are recorded in any order.
fn by_urn(state: &Value) -> std::collections::BTreeMap<String, Value> {
    // A checkpoint leaves `parent` out when it is the first stack root above the resource (none
    // above: no parent), so the same state in another valid order reads otherwise: each parent
    // is made explicit.
    let mut root: Option<Value> = None;
    let mut resources = std::collections::BTreeMap::new();
    for resource in state["snapshot"]["resources"].as_array().unwrap() {
        let mut resource = resource.clone();
        if resource.get("parent").is_none() {
            resource["parent"] = root.clone().unwrap_or(Value::Null);
        }
        if root.is_none()
            && resource["type"] == "plinth:plinth:Stack"
            && resource["parent"].is_null()
        {
            root = Some(resource["urn"].clone());
        }
        resources.insert(resource["urn"].as_str().unwrap().to_owned(), resource);
    }
    resources
}

/// Asserts that `text` contains every one of `needles`.
fn assert_says(text: &str, needles: &[&str]) {
    for needle in needles {
        assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
    }
}

/// Lists a host directory: (name, content) of each file, or the symlink's target.
fn listing(dir: &Path) -> Vec<(String, String)> {
    let mut entries: Vec<(String, String)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let what = if meta.is_symlink() {
                format!("-> {}", std::fs::read_link(&path).unwrap().display())
            } else {
                std::fs::read_to_string(&path).unwrap()
            };
            (name, what)
        })
        .collect();
    entries.sort();
    entries
}

#[test]
fn reads_outside_the_grant_are_refused() {
    let arena = Arena::new();
    let secret = arena.secret();
    std::os::unix::fs::symlink(&secret, arena.host("world/absolute-link")).unwrap();
    std::os::unix::fs::symlink("../private/secret.txt", arena.host("world/relative-link")).unwrap();
    std::os::unix::fs::symlink("inside.txt", arena.host("world/inner-link")).unwrap();

    // (path the plugin tries, what the sandbox answers)
    let secret = secret.display().to_string();
    let attacks = [
        // No grant covers an absolute host path: there is nothing to resolve it against.
        (secret.as_str(), "No such file or directory"),
        ("/world/../private/secret.txt", "Operation not permitted"),
        (
            "/world/../../../../../../etc/hostname",
            "Operation not permitted",
        ),
        ("/world/absolute-link", "Operation not permitted"),
        ("/world/relative-link", "Operation not permitted"),
        ("/etc/hostname", "No such file or directory"),
    ];
    for (path, refusal) in attacks {
        let stderr = arena.attack("adversary:ReadFile", &format!("path={path}"));
        assert_says(
            &stderr,
            &[
                "adversary:ReadFile::x",
                "create failed in plugin `adversary`",
                &format!("reading `{path}`"),
                refusal,
            ],
        );
    }

    // The same plugin reads inside its grant, through a symlink that stays inside too.
    for path in ["/world/inside.txt", "/world/inner-link"] {
        let outputs = arena.allowed("adversary:ReadFile", &format!("path={path}"));
        assert_eq!(outputs["content"], INSIDE, "{path}");
    }
}

/// A hard link is the file it links to: the host cannot tell it from any other file of the
/// granted directory. Granting a directory grants whatever its hard links reach — so never put
/// a hard link to a secret in a granted directory. This test pins that honest expectation.
#[test]
fn a_hard_link_in_a_granted_directory_reaches_its_file() {
    let arena = Arena::new();
    std::fs::hard_link(
        arena.host("private/secret.txt"),
        arena.host("world/hard-link"),
    )
    .unwrap();
    let outputs = arena.allowed("adversary:ReadFile", "path=/world/hard-link");
    assert_eq!(outputs["content"], PROJECT_SECRET);

    // Read-only still holds through it: the linked file cannot be changed.
    let stderr = arena.attack(
        "adversary:WriteFile",
        "action=overwrite;path=/world/hard-link",
    );
    assert_says(
        &stderr,
        &["overwriting `/world/hard-link`", "Operation not permitted"],
    );
    assert_eq!(
        std::fs::read_to_string(arena.host("private/secret.txt")).unwrap(),
        PROJECT_SECRET
    );
}

#[test]
fn writes_to_a_read_only_grant_are_refused() {
    let arena = Arena::new();
    std::fs::write(arena.host("scratch/mine.txt"), "mine").unwrap();
    let world = listing(&arena.host("world"));
    let attacks = [
        (
            "action=create;path=/world/new.txt",
            "creating `/world/new.txt`",
        ),
        (
            "action=overwrite;path=/world/inside.txt",
            "overwriting `/world/inside.txt`",
        ),
        (
            "action=delete;path=/world/inside.txt",
            "deleting `/world/inside.txt`",
        ),
        (
            "action=rename;path=/scratch/mine.txt;to=/world/mine.txt",
            "renaming `/scratch/mine.txt` to `/world/mine.txt`",
        ),
        (
            "action=rename;path=/world/inside.txt;to=/scratch/taken.txt",
            "renaming `/world/inside.txt` to `/scratch/taken.txt`",
        ),
        (
            "action=symlink;path=/world/link;to=inside.txt",
            "planting a symlink `/world/link`",
        ),
    ];
    for (inputs, tried) in attacks {
        let stderr = arena.attack("adversary:WriteFile", inputs);
        assert_says(
            &stderr,
            &[
                "create failed in plugin `adversary`",
                tried,
                "Operation not permitted",
            ],
        );
        assert_eq!(listing(&arena.host("world")), world, "after {inputs}");
    }
    assert_eq!(
        listing(&arena.host("scratch")),
        [("mine.txt".to_owned(), "mine".to_owned())]
    );

    // The same writes succeed in the read-write grant.
    arena.allowed(
        "adversary:WriteFile",
        "action=create;path=/scratch/new.txt;content=new",
    );
    arena.allowed(
        "adversary:WriteFile",
        "action=overwrite;path=/scratch/mine.txt;content=changed",
    );
    arena.allowed(
        "adversary:WriteFile",
        "action=rename;path=/scratch/new.txt;to=/scratch/renamed.txt",
    );
    arena.allowed(
        "adversary:WriteFile",
        "action=delete;path=/scratch/mine.txt",
    );
    assert_eq!(
        listing(&arena.host("scratch")),
        [("renamed.txt".to_owned(), "new".to_owned())]
    );
}

/// A plugin that may write a directory may plant symlinks in it. One with an absolute target is
/// refused outright. One with a relative target climbing out of the grant is planted — it is
/// only a string — but the plugin cannot follow it, to read or to write. (Something else on the
/// host that follows links in that directory would: see docs/sandbox.md.)
#[test]
fn symlinks_a_plugin_plants_do_not_lead_out() {
    let arena = Arena::new();
    let secret = arena.secret().display().to_string();
    let stderr = arena.attack(
        "adversary:WriteFile",
        &format!("action=symlink;path=/scratch/absolute;to={secret}"),
    );
    assert_says(
        &stderr,
        &[
            "planting a symlink `/scratch/absolute`",
            "Operation not permitted",
        ],
    );
    assert!(std::fs::symlink_metadata(arena.host("scratch/absolute")).is_err());

    arena.allowed(
        "adversary:WriteFile",
        "action=symlink;path=/scratch/relative;to=../private/secret.txt",
    );
    assert_eq!(
        std::fs::read_link(arena.host("scratch/relative")).unwrap(),
        Path::new("../private/secret.txt")
    );
    let stderr = arena.attack("adversary:ReadFile", "path=/scratch/relative");
    assert_says(
        &stderr,
        &["reading `/scratch/relative`", "Operation not permitted"],
    );
    let stderr = arena.attack(
        "adversary:WriteFile",
        "action=overwrite;path=/scratch/relative",
    );
    assert_says(
        &stderr,
        &["overwriting `/scratch/relative`", "Operation not permitted"],
    );
    assert_eq!(std::fs::read_to_string(arena.secret()).unwrap(), SECRET);
    assert_eq!(
        std::fs::read_to_string(arena.host("private/secret.txt")).unwrap(),
        PROJECT_SECRET
    );
}

#[test]
fn an_endless_loop_hits_the_call_time_limit() {
    let arena = Arena::with_limits("    limits:\n      call-timeout: 2s\n");
    let env = &arena.env;
    // `ok` is an adversary resource too, this time: the plugin serves it from another instance
    // while `x` spins.
    env.config("type_ok", "adversary:ReadFile");
    env.config("inputs_ok", "path=/world/inside.txt");
    arena.declare("adversary:Runaway", "attack=loop");
    let started = Instant::now();
    let stderr = env.fails(&["up", "--yes", "--skip-preview"]);
    let elapsed = started.elapsed();
    assert_says(
        &stderr,
        &[
            "create failed in plugin `adversary`",
            "plugin crashed",
            "`create` timed out after 2s",
        ],
    );
    // The deadline, not a hang, ended the run (the bound is generous: a loaded machine compiles
    // and runs slowly).
    assert!(elapsed < Duration::from_secs(60), "{elapsed:?}");
    assert_eq!(outputs_of(&env.export(), "ok")["content"], INSIDE);
    arena.assert_contained(&stderr);

    // In a later run, the plugin serves the resource the loop left uncreated.
    let outputs = arena.allowed("adversary:ReadFile", "path=/world/inside.txt");
    assert_eq!(outputs["content"], INSIDE);
}

/// A Rust guest keeps its stack (what its frames hold) in its linear memory, below its data:
/// overflowing it runs off the start of memory, which traps. Frames that hold nothing there
/// exhaust the engine's own call-stack limit instead.
#[test]
fn unbounded_recursion_overflows_the_stack_and_traps() {
    let arena = Arena::new();
    for (attack, trap) in [
        ("recurse", "out of bounds memory access"),
        ("recurse-calls", "call stack exhausted"),
    ] {
        let stderr = arena.attack("adversary:Runaway", &format!("attack={attack}"));
        assert_says(
            &stderr,
            &[
                "create failed in plugin `adversary`",
                "plugin crashed",
                &format!("`create` trapped: wasm trap: {trap}"),
            ],
        );
    }
}

#[test]
fn unbounded_allocation_hits_the_memory_limit() {
    let arena = Arena::with_limits("    limits:\n      memory: 64MiB\n");
    let stderr = arena.attack("adversary:Runaway", "attack=allocate");
    assert_says(
        &stderr,
        &[
            "create failed in plugin `adversary`",
            "`create` ran out of memory",
            "the limit is 64 MiB",
        ],
    );
}

const MIB: u64 = 1 << 20;

#[test]
fn a_huge_output_is_refused_before_the_host_copies_it() {
    let arena = Arena::new();
    let up = ["up", "--yes", "--skip-preview"];
    // The same run with a 1 MiB output, which succeeds: the baseline.
    arena.declare("adversary:Runaway", "attack=huge-output;size_mb=1");
    let (baseline, _) = arena.env.peak_rss(&up);
    arena.env.config("resources", "ok");
    arena.env.ok(&up);

    arena.declare("adversary:Runaway", "attack=huge-output;size_mb=200");
    let (peak, stderr) = arena.env.peak_rss(&up);
    println!(
        "peak RSS of `plinth up`: {} MiB with a 1 MiB output, {} MiB refusing a 200 MiB one",
        baseline / MIB,
        peak / MIB
    );
    assert_says(
        &stderr,
        &[
            "create failed in plugin `adversary`",
            "plugin crashed",
            "`create` tried to pass the host more than 64 MiB in one call, the limit",
        ],
    );
    arena.assert_contained(&stderr);
    // The guest's 200 MiB live in its linear memory, which is mapped into the host process;
    // the host may lift at most 64 MiB out of it before refusing. A copy of the whole value
    // would add another 200 MiB.
    assert!(
        peak < baseline + 200 * MIB + 64 * MIB,
        "peak RSS {} MiB, baseline {} MiB",
        peak / MIB,
        baseline / MIB
    );
}

/// The provider operations a resource of `adversary:Crash` can break in, and how to reach each.
#[test]
fn panics_and_traps_in_every_operation_are_contained() {
    let arena = Arena::new();
    let env = &arena.env;
    for how in ["panic", "trap"] {
        let crashed = |op: &str, stderr: &str| {
            assert_says(stderr, &["plugin `adversary`", "plugin crashed"]);
            if how == "panic" {
                assert_says(
                    stderr,
                    &[
                        &format!("`{op}` panicked"),
                        &format!("adversary: panic requested in `{op}`"),
                    ],
                );
            } else {
                assert_says(stderr, &[&format!("`{op}` trapped")]);
            }
        };
        let crash_in = |op: &str| format!("crash_in={op};crash_how={how}");

        // check and create break on the first `up`.
        for op in ["check", "create"] {
            let stderr = arena.attack("adversary:Crash", &crash_in(op));
            assert_says(&stderr, &[&format!("{op} failed in plugin `adversary`")]);
            crashed(op, &stderr);
        }

        // diff and update break on an `up` that changes an existing resource.
        for op in ["diff", "update"] {
            arena.declare("adversary:Crash", "");
            env.ok(&["up", "--yes", "--skip-preview"]);
            let stderr = arena.attack("adversary:Crash", &crash_in(op));
            assert_says(&stderr, &[&format!("{op} failed in plugin `adversary`")]);
            crashed(op, &stderr);
        }

        // delete breaks on the `destroy` of a resource created asking for it.
        arena.declare("adversary:Crash", &crash_in("delete"));
        env.ok(&["up", "--yes", "--skip-preview"]);
        let stderr = env.fails(&["destroy", "--yes", "--skip-preview"]);
        assert_says(&stderr, &["delete failed in plugin `adversary`"]);
        crashed("delete", &stderr);
        // The resource is still there, recorded as it was; changing its inputs frees it.
        assert!(managed(env).contains(&"x".to_owned()));
        arena.declare("adversary:Crash", "");
        env.ok(&["up", "--yes", "--skip-preview"]);
        env.ok(&["destroy", "--yes", "--skip-preview"]);
        assert!(managed(env).is_empty());

        // read breaks when the program reads a resource it does not manage.
        env.config("resources", "ok,r");
        env.config("type_r", "adversary:Crash");
        env.config("read_r", "some-id");
        env.config("inputs_r", &crash_in("read"));
        let stderr = env.fails(&["up", "--yes", "--skip-preview"]);
        crashed("read", &stderr);
        env.config("inputs_r", "");
        env.ok(&["up", "--yes", "--skip-preview"]);
        env.ok(&["config", "rm", "read_r"]);
        env.ok(&["destroy", "--yes", "--skip-preview"]);
    }
}

#[test]
fn a_provider_that_breaks_in_configure_fails_to_load_cleanly() {
    let arena = Arena::new();
    let env = &arena.env;
    arena.declare("adversary:Crash", "");
    env.ok(&["up", "--yes", "--skip-preview"]);
    let before = by_urn(&env.export());
    env.config("adversary:crash_in", "configure");
    for how in ["panic", "trap"] {
        env.config("adversary:crash_how", how);
        let stderr = env.fails(&["up", "--yes", "--skip-preview"]);
        assert_says(
            &stderr,
            &["plugin `adversary`", "configure failed", "plugin crashed"],
        );
        if how == "panic" {
            assert_says(&stderr, &["`configure` panicked"]);
        } else {
            assert_says(&stderr, &["`configure` trapped"]);
        }
        assert_eq!(by_urn(&env.export()), before, "{stderr}");
    }
    env.ok(&["config", "rm", "adversary:crash_in"]);
    env.ok(&["config", "rm", "adversary:crash_how"]);
    env.ok(&["destroy", "--yes", "--skip-preview"]);
    assert!(env.resources().is_empty());
}

/// A plugin that prints lines reading like plinth's own (an indented `+ created`, an `error:`)
/// before it panics: each line of its stderr in the failure is marked as the plugin's, escaped.
#[test]
fn a_crashing_plugin_s_stderr_cannot_pass_for_plinth_s_own_lines() {
    let arena = Arena::new();
    let fake = r"  + adversary:Crash x created\nerror: nothing failed\e[1A\e[2K";
    let stderr = arena.attack(
        "adversary:Crash",
        &format!("crash_in=create;crash_say={fake}"),
    );
    assert_says(
        &stderr,
        &[
            "`create` panicked",
            "adversary stderr|   + adversary:Crash x created",
            r"adversary stderr| error: nothing failed\u{1b}[1A\u{1b}[2K",
            "adversary stderr| adversary: panic requested in `create`",
        ],
    );
    for line in stderr.lines() {
        let line = line.trim_start();
        assert!(
            !line.starts_with("+ adversary:Crash x created") && !line.starts_with("error: nothing"),
            "a line of the plugin's passes for plinth's:\n{stderr}"
        );
    }
    assert!(!stderr.contains('\u{1b}'), "{stderr}");
}

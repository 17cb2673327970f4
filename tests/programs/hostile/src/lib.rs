//! A hostile program, written against the WIT directly so that it can do what the SDK never
//! does (register an apply whose inputs are all known). Its config value `mode` chooses the
//! attack:
//!
//! - `endless-applies`: every `resume` registers another apply with a literal input, so the
//!   program never finishes; after 100 resumes it logs the warning `hostile: resumed 100 times`
//!   (once), which tests wait for;
//! - `huge-results`: the same, each `resume` returning a 1 MiB string;
//! - `registrations`: `run` registers components `hostile:Thing` without end;
//! - `huge-inputs`: the same, each with a 1 MiB string input `blob`;
//! - `logs`: `run` logs messages without end;
//! - `one`: a harmless run: one component `hostile:Thing` named `ok`;
//! - `nonce`: the component `ok` with an input `nonce` that differs on every run (from the
//!   host's random source), as a program that is not deterministic registers;
//! - `two-faced`: the component `ok` with the input `face`, `preview` in a preview and
//!   `update` in an update: the program shows a plan one thing and applies another.

wit_bindgen::generate!({
    world: "program",
    path: "../../../wit/plugin",
});

use std::cell::Cell;

use exports::plinth::plugin::callbacks::Guest;
use plinth::plugin::monitor::{self, LogLevel, RegisterRequest, ResourceOptions};
use plinth::plugin::types::{Node, Value};

struct Hostile;

thread_local! {
    static RESUMES: Cell<u64> = const { Cell::new(0) };
    static HUGE_RESULTS: Cell<bool> = const { Cell::new(false) };
}

impl Guest for Hostile {
    fn run() -> Result<(), String> {
        let mode = match monitor::config("mode").and_then(|v| v.nodes.into_iter().next()) {
            Some(Node::Text(mode)) => mode,
            other => return Err(format!("set the config value `mode`, not {other:?}")),
        };
        match mode.as_str() {
            "endless-applies" | "huge-results" => {
                HUGE_RESULTS.set(mode == "huge-results");
                monitor::register_apply(&[text("start")]);
                Ok(())
            }
            "registrations" => flood(None),
            "huge-inputs" => flood(Some("x".repeat(1 << 20))),
            "logs" => loop {
                monitor::log(LogLevel::Info, "hostile: a log that never ends");
            },
            "one" => {
                register(
                    "ok",
                    Value {
                        nodes: vec![Node::Object(Vec::new())],
                    },
                );
                Ok(())
            }
            "nonce" => {
                register("ok", object("nonce", &nonce().to_string()));
                Ok(())
            }
            "two-faced" => {
                let dry_run = monitor::get_stack_info().dry_run;
                register(
                    "ok",
                    object("face", if dry_run { "preview" } else { "update" }),
                );
                Ok(())
            }
            other => Err(format!("unknown mode `{other}`")),
        }
    }

    fn resume(_apply: u64, _inputs: Vec<Value>) -> Result<Value, String> {
        let n = RESUMES.get() + 1;
        RESUMES.set(n);
        if n == 100 {
            monitor::log(LogLevel::Warn, "hostile: resumed 100 times");
        }
        monitor::register_apply(&[text(&n.to_string())]);
        if HUGE_RESULTS.get() {
            return Ok(text(&"x".repeat(1 << 20)));
        }
        Ok(Value {
            nodes: vec![Node::Null],
        })
    }
}

/// Registers components without end, each with `blob` as its input if given.
fn flood(blob: Option<String>) -> Result<(), String> {
    for i in 0u64.. {
        let inputs = match &blob {
            Some(blob) => Value {
                nodes: vec![
                    Node::Object(vec![("blob".to_owned(), 1)]),
                    Node::Text(blob.clone()),
                ],
            },
            None => Value {
                nodes: vec![Node::Object(Vec::new())],
            },
        };
        register(&format!("r{i}"), inputs);
    }
    Ok(())
}

/// Registers the component `hostile:Thing` `name` with `inputs`.
fn register(name: &str, inputs: Value) {
    monitor::register_resource(&RegisterRequest {
        type_: "hostile:Thing".into(),
        name: name.into(),
        custom: false,
        inputs,
        options: no_options(),
    });
}

/// A number that differs from run to run: std seeds its hash keys from the host's randomness.
fn nonce() -> u64 {
    use std::hash::BuildHasher;
    std::collections::hash_map::RandomState::new().hash_one(0u8)
}

/// An object of one text property.
fn object(key: &str, value: &str) -> Value {
    Value {
        nodes: vec![
            Node::Object(vec![(key.to_owned(), 1)]),
            Node::Text(value.to_owned()),
        ],
    }
}

fn text(s: &str) -> Value {
    Value {
        nodes: vec![Node::Text(s.to_owned())],
    }
}

fn no_options() -> ResourceOptions {
    ResourceOptions {
        depends_on: Vec::new(),
        parent: None,
        provider: None,
        protect: false,
        retain_on_delete: false,
        delete_before_replace: false,
        ignore_changes: Vec::new(),
        replace_on_changes: Vec::new(),
        aliases: Vec::new(),
        custom_timeouts: None,
        import_id: None,
    }
}

export!(Hostile);

//! A program scripted as a list of declarations, and the builders of those declarations.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use plinth_engine::program::{Monitor, Program, ProgramError, RegisterRequest, ResourceOptions};
use plinth_engine::value::{OutputField, OutputRef, PropertyMap, Value};

/// One resource a scripted program declares.
#[derive(Clone)]
pub struct Decl {
    pub name: &'static str,
    pub inputs: Vec<(&'static str, Input)>,
    pub depends_on: Vec<&'static str>,
    pub parent: Option<&'static str>,
    pub protect: bool,
    /// Options without handles: ignore_changes, aliases, import, custom timeouts, ...
    pub options: ResourceOptions,
    /// The type, `fake:Thing` unless set (e.g. `plinth:providers:fake`).
    pub ty: Option<&'static str>,
    /// An earlier declaration of a provider resource that manages this one.
    pub provider: Option<&'static str>,
    /// A component resource (registered with `custom` false): it only groups its children.
    pub component: bool,
    /// Outputs it registers (`register_outputs`) once registered: a component's.
    pub outputs: Vec<(&'static str, Input)>,
    /// Outputs it registers a second time, after `outputs`.
    pub outputs_again: Vec<(&'static str, Input)>,
    /// Stack outputs this declaration adds.
    pub exports: Vec<(&'static str, Input)>,
}

#[derive(Clone)]
pub enum Input {
    Value(Value),
    /// The `out` output of an earlier declaration.
    Out(&'static str),
}

pub fn decl(name: &'static str) -> Decl {
    Decl {
        name,
        inputs: vec![],
        depends_on: vec![],
        parent: None,
        protect: false,
        options: ResourceOptions::default(),
        ty: None,
        provider: None,
        component: false,
        outputs: vec![],
        outputs_again: vec![],
        exports: vec![],
    }
}

/// A component resource of type `fake:Group`.
pub fn component(name: &'static str) -> Decl {
    let mut d = decl(name);
    d.ty = Some("fake:Group");
    d.component = true;
    d
}

/// A provider resource for the fake package, configured with `config`.
pub fn provider_decl(name: &'static str, config: &[(&'static str, &str)]) -> Decl {
    let mut d = decl(name);
    d.ty = Some("plinth:providers:fake");
    for (k, v) in config {
        d = d.input(k, *v);
    }
    d
}

impl Decl {
    pub fn input(mut self, key: &'static str, value: impl Into<Value>) -> Decl {
        self.inputs.push((key, Input::Value(value.into())));
        self
    }
    pub fn from(mut self, key: &'static str, other: &'static str) -> Decl {
        self.inputs.push((key, Input::Out(other)));
        self
    }
    pub fn parent(mut self, parent: &'static str) -> Decl {
        self.parent = Some(parent);
        self
    }
    /// Registers output `key` of this (component) resource.
    pub fn output(mut self, key: &'static str, value: impl Into<Value>) -> Decl {
        self.outputs.push((key, Input::Value(value.into())));
        self
    }
    /// Registers output `key` of this (component) resource a second time, after those of
    /// [`output`](Self::output).
    pub fn output_again(mut self, key: &'static str, value: impl Into<Value>) -> Decl {
        self.outputs_again.push((key, Input::Value(value.into())));
        self
    }
    /// Adds stack output `key`.
    pub fn export(mut self, key: &'static str, value: Input) -> Decl {
        self.exports.push((key, value));
        self
    }
}

/// A program that declares `decls` in order and exports `greeting` = "hello " + first's out,
/// computed through an apply closure.
pub struct ScriptProgram {
    pub decls: Vec<Decl>,
    pub apply_runs: Arc<Mutex<usize>>,
}

fn out_ref(handle: u64) -> Value {
    Value::Output(OutputRef {
        handle,
        field: OutputField::Property(vec!["out".into()]),
    })
}

#[async_trait]
impl Program for ScriptProgram {
    async fn run(&mut self, monitor: &Monitor) -> Result<(), ProgramError> {
        let mut handles: HashMap<&str, u64> = HashMap::new();
        let mut exports = PropertyMap::new();
        for d in &self.decls {
            let values = |list: &[(&str, Input)], handles: &HashMap<&str, u64>| -> PropertyMap {
                list.iter()
                    .map(|(k, v)| {
                        let v = match v {
                            Input::Value(v) => v.clone(),
                            Input::Out(other) => out_ref(handles[other]),
                        };
                        (k.to_string(), v)
                    })
                    .collect()
            };
            let inputs = values(&d.inputs, &handles);
            let options = ResourceOptions {
                depends_on: d.depends_on.iter().map(|o| handles[o]).collect(),
                parent: d.parent.map(|p| handles[p]),
                protect: d.protect,
                provider: d.provider.map(|p| handles[p]),
                ..d.options.clone()
            };
            let h = monitor
                .register_resource(RegisterRequest {
                    ty: d.ty.unwrap_or("fake:Thing").into(),
                    name: d.name.into(),
                    custom: !d.component,
                    inputs,
                    options,
                })
                .expect("within the budget");
            handles.insert(d.name, h);
            for outputs in [&d.outputs, &d.outputs_again] {
                if !outputs.is_empty() {
                    monitor
                        .register_outputs(Some(h), values(outputs, &handles))
                        .expect("within the budget");
                }
            }
            exports.extend(values(&d.exports, &handles));
        }
        let mut outputs = exports;
        if let Some(first) = self.decls.first() {
            let apply = monitor
                .register_apply(vec![out_ref(handles[first.name])])
                .expect("within the budget");
            outputs.insert(
                "greeting".into(),
                Value::Output(OutputRef {
                    handle: apply,
                    field: OutputField::Property(vec![]),
                }),
            );
        }
        monitor
            .register_outputs(None, outputs)
            .expect("within the budget");
        Ok(())
    }

    async fn resume(
        &mut self,
        _: &Monitor,
        _: u64,
        inputs: Vec<Value>,
    ) -> Result<Value, ProgramError> {
        *self.apply_runs.lock().unwrap() += 1;
        Ok(Value::String(format!("hello {}", inputs[0])))
    }
}

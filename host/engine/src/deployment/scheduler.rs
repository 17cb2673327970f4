//! The scheduler: takes the program's registrations as they come, keeps the graph of what
//! each waits for, and starts each node's work once everything it refers to is known.

use std::sync::Arc;

use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::node::*;
use super::options::Options;
use super::step::StepContext;
use super::step::result::{StepError, StepOutputs};
use crate::events::EventSink;
use crate::program::{Monitor, Program, ProgramError, Registration};
use crate::urn::Urn;
use crate::value::{PropertyMap, Value};

pub(super) struct Scheduler {
    pub(super) options: Options,
    pub(super) ctx: Arc<StepContext>,
    pub(super) events: EventSink,
    pub(super) cancel: CancellationToken,
    pub(super) slots: HashMap<u64, Slot>,
    pub(super) nodes: Vec<Node>,
    pub(super) waiters: HashMap<u64, Vec<usize>>,
    pub(super) registered: HashSet<Urn>,
    pub(super) replaced: Vec<usize>,
    /// Handles of the default provider resources registered so far, by package.
    pub(super) default_providers: HashMap<String, u64>,
    /// The root resource was registered: registrations without a parent are its children.
    pub(super) has_root: bool,
    pub(super) stack_outputs: Option<PropertyMap>,
    /// For each component whose outputs were registered, the end of the last recording of
    /// them: the next one waits for it.
    pub(super) outputs_recorded: HashMap<Urn, oneshot::Receiver<()>>,
    pub(super) errors: Vec<String>,
    /// The errors recorded so far, to record each once.
    pub(super) seen_errors: HashSet<String>,
    pub(super) in_flight: usize,
    /// Of `in_flight`, the calls into the program (its body and resumes).
    pub(super) program_calls: usize,
    pub(super) completions_tx: mpsc::UnboundedSender<Completion>,
    pub(super) completions: mpsc::UnboundedReceiver<Completion>,
    pub(super) resume_tx: Option<mpsc::UnboundedSender<ResumeRequest>>,
}

impl Scheduler {
    pub(super) fn new(
        options: Options,
        ctx: Arc<StepContext>,
        events: EventSink,
        cancel: CancellationToken,
    ) -> Scheduler {
        let (completions_tx, completions) = mpsc::unbounded_channel();
        Scheduler {
            options,
            ctx,
            events,
            cancel,
            slots: HashMap::new(),
            nodes: Vec::new(),
            waiters: HashMap::new(),
            registered: HashSet::new(),
            replaced: Vec::new(),
            default_providers: HashMap::new(),
            has_root: false,
            stack_outputs: None,
            outputs_recorded: HashMap::new(),
            errors: Vec::new(),
            seen_errors: HashSet::new(),
            in_flight: 0,
            program_calls: 0,
            completions_tx,
            completions,
            resume_tx: None,
        }
    }

    /// Runs the program to completion, with every step it causes.
    pub(super) async fn run_program(
        &mut self,
        mut program: Box<dyn Program>,
        monitor: Monitor,
        mut registrations: mpsc::UnboundedReceiver<Registration>,
    ) {
        // The program runs in its own task, one call at a time: its body, then apply closures
        // as their inputs resolve. It never waits for the engine, nor the engine for it.
        if program.registers_root() {
            self.register_root();
        }
        let (resume_tx, mut resumes) = mpsc::unbounded_channel::<ResumeRequest>();
        self.resume_tx = Some(resume_tx);
        let done = self.completions_tx.clone();
        let actor = tokio::spawn(async move {
            let result = program.run(&monitor).await;
            let _ = done.send(Completion::ProgramDone(result));
            while let Some(request) = resumes.recv().await {
                let result = program
                    .resume(&monitor, request.apply, request.inputs)
                    .await
                    .and_then(|value| match monitor.charge_result(&value) {
                        Ok(()) => Ok(value),
                        Err(e) => Err(ProgramError(e.to_string())),
                    });
                let _ = done.send(Completion::Resumed {
                    node: request.node,
                    result,
                    secret: request.secret,
                    dependencies: request.dependencies,
                });
            }
        });
        self.in_flight += 1; // the program's body
        self.program_calls += 1;
        let mut stopped = false;
        loop {
            if self.in_flight == 0 && (stopped || registrations.is_empty()) {
                break;
            }
            tokio::select! {
                // Cancelled: the program stops at once, inside a call or between two (a call
                // yields at every epoch tick), since what it registers next could start no
                // step. Steps in flight finish and are recorded.
                _ = self.cancel.cancelled(), if !stopped => {
                    stopped = true;
                    actor.abort();
                    self.resume_tx = None;
                    self.in_flight -= self.program_calls;
                    self.program_calls = 0;
                }
                Some(registration) = registrations.recv(), if !stopped => {
                    self.on_registration(registration);
                }
                Some(completion) = self.completions.recv() => {
                    if completion.is_program_call() {
                        if stopped {
                            // Sent just before the program was stopped: counted out already.
                            continue;
                        }
                        self.program_calls -= 1;
                    }
                    self.in_flight -= 1;
                    self.on_completion(completion);
                }
            }
        }
        self.resume_tx = None;
        let _ = actor.await;
        let skipped = self
            .nodes
            .iter()
            .filter(|n| n.work.is_some() && n.handle.is_some())
            .count();
        if skipped > 0 && self.errors.is_empty() && !self.cancel.is_cancelled() {
            self.error(format!(
                "{skipped} registrations never resolved: the program refers to outputs that are never produced"
            ));
        }
    }

    pub(super) fn on_registration(&mut self, registration: Registration) {
        match registration {
            Registration::Resource {
                handle,
                mut request,
            } => {
                if request.custom && request.options.provider.is_none() {
                    request.options.provider = self.default_provider(&request.ty);
                }
                if request.options.parent.is_none() {
                    request.options.parent = self.implicit_parent(&request.ty);
                }
                let mut refs = Vec::new();
                request
                    .inputs
                    .values()
                    .for_each(|v| collect_handles(v, &mut refs));
                refs.extend(&request.options.depends_on);
                refs.extend(request.options.parent);
                refs.extend(request.options.provider);
                self.add_node(Some(handle), Work::Resource(request), refs);
            }
            Registration::Read {
                handle,
                ty,
                name,
                id,
                inputs,
                mut options,
            } => {
                let provider = options.provider.or_else(|| self.default_provider(&ty));
                if options.parent.is_none() {
                    options.parent = self.implicit_parent(&ty);
                }
                let mut refs = Vec::new();
                inputs.values().for_each(|v| collect_handles(v, &mut refs));
                refs.extend(options.parent);
                refs.extend(provider);
                let parent = options.parent;
                self.add_node(
                    Some(handle),
                    Work::Read {
                        ty,
                        name,
                        id,
                        inputs,
                        parent,
                        provider,
                    },
                    refs,
                );
            }
            Registration::Apply { handle, inputs } => {
                let mut refs = Vec::new();
                inputs.iter().for_each(|v| collect_handles(v, &mut refs));
                self.add_node(Some(handle), Work::Apply(inputs), refs);
            }
            Registration::Outputs { handle, outputs } => {
                let handle = self.outputs_target(handle);
                let mut refs = Vec::new();
                outputs.values().for_each(|v| collect_handles(v, &mut refs));
                refs.extend(handle);
                self.add_node(
                    None,
                    Work::Outputs {
                        target: handle,
                        outputs,
                    },
                    refs,
                );
            }
            Registration::Log { severity, message } => {
                self.events.diagnostic(None, severity, message);
            }
        }
    }

    pub(super) fn add_node(&mut self, handle: Option<u64>, work: Work, refs: Vec<u64>) {
        let index = self.nodes.len();
        if let Some(h) = handle {
            self.slots.insert(h, Slot::Waiting);
        }
        self.nodes.push(Node {
            handle,
            work: Some(Box::new(work)),
            missing: 0,
        });
        let mut seen = HashSet::new();
        for r in refs {
            if !seen.insert(r) {
                continue;
            }
            match self.slots.get(&r) {
                Some(Slot::Resolved(_)) => {}
                Some(Slot::Waiting) if Some(r) != handle => {
                    self.waiters.entry(r).or_default().push(index);
                    self.nodes[index].missing += 1;
                }
                Some(Slot::Failed) => return self.skip(index),
                _ => {
                    self.error(format!(
                        "the program refers to an unknown registration #{r}"
                    ));
                    return self.skip(index);
                }
            }
        }
        if self.nodes[index].missing == 0 {
            self.start(index);
        }
    }

    /// Marks a node failed, and everything waiting on it that has not run skipped.
    pub(super) fn skip(&mut self, index: usize) {
        let mut stack = vec![index];
        while let Some(i) = stack.pop() {
            let node = &mut self.nodes[i];
            if node.work.take().is_none() && i != index {
                continue;
            }
            if let Some(h) = node.handle {
                self.slots.insert(h, Slot::Failed);
                stack.extend(self.waiters.remove(&h).unwrap_or_default());
            }
        }
    }

    pub(super) fn resolve(&mut self, index: usize, resolved: Resolved) {
        let Some(handle) = self.nodes[index].handle else {
            return;
        };
        self.slots
            .insert(handle, Slot::Resolved(Arc::new(resolved)));
        for waiter in self.waiters.remove(&handle).unwrap_or_default() {
            let node = &mut self.nodes[waiter];
            if node.work.is_none() {
                continue;
            }
            node.missing -= 1;
            if node.missing == 0 {
                self.start(waiter);
            }
        }
    }

    /// Records an error once, however many steps hit it.
    pub(super) fn error(&mut self, error: String) {
        if self.seen_errors.insert(error.clone()) {
            self.errors.push(error);
        }
    }

    /// A node failed: what depends on it is skipped, and unless `--continue-on-error` was given
    /// no new step starts.
    pub(super) fn fail(&mut self, index: usize, error: String) {
        self.error(error);
        if !self.options.continue_on_error {
            self.ctx.halt();
        }
        self.skip(index);
    }

    pub(super) fn on_completion(&mut self, completion: Completion) {
        match completion {
            Completion::ProgramDone(Ok(())) => {}
            Completion::ProgramDone(Err(e)) => {
                self.error(format!("the program failed: {e}"));
                self.ctx.halt();
            }
            Completion::Resumed {
                node,
                result: Ok(value),
                secret,
                dependencies,
            } => {
                let mut refs = Vec::new();
                collect_handles(&value, &mut refs);
                let handle = self.nodes[node].handle;
                // Re-enter the result as a node of its own that waits on what it refers to.
                self.slots.remove(&handle.expect("applies have handles"));
                self.nodes[node].work = None;
                self.add_node(
                    handle,
                    Work::Value {
                        value,
                        secret,
                        dependencies,
                    },
                    refs,
                );
            }
            Completion::Resumed {
                node,
                result: Err(e),
                ..
            } => self.fail(node, format!("an apply closure failed: {e}")),
            Completion::Step {
                node,
                urn,
                record,
                result: Ok(result),
            } => {
                if let Some(old) = result.replaced {
                    self.replaced.push(old);
                }
                // What depends on a resource that exists depends on its state; an absent one
                // (not created because not targeted) is no dependency, and its outputs unknown.
                let outputs = match result.outputs {
                    StepOutputs::Own(outputs) => ResolvedValue::Value(Value::Object(outputs)),
                    StepOutputs::Base(i) => ResolvedValue::BaseOutputs(i),
                };
                let (value, dependencies) = if result.absent {
                    (ResolvedValue::Value(Value::Unknown), Vec::new())
                } else if record {
                    (outputs, vec![urn.clone()])
                } else {
                    (outputs, Vec::new())
                };
                self.resolve(
                    node,
                    Resolved {
                        value,
                        id: result.id,
                        urn: Some(urn),
                        dependencies,
                        replaced: result.replaced.is_some(),
                        absent: result.absent,
                    },
                );
            }
            Completion::Step {
                node,
                result: Err(StepError::Halted),
                ..
            } => self.skip(node),
            Completion::Step {
                node,
                result: Err(e),
                ..
            } => self.fail(node, e.to_string()),
            Completion::ComponentOutputs(Ok(())) => {}
            Completion::ComponentOutputs(Err(e)) => {
                self.error(e);
                self.ctx.halt();
            }
        }
    }
}

//! Starting a node's work: substituting the values it refers to, and turning a resource
//! registration into a step on its own task.

use tokio::sync::oneshot;

use super::node::*;
use super::root_registration::ROOT_HANDLE;
use super::scheduler::Scheduler;
use super::step::request::{ProviderBinding, ResourceStep, reference};
use crate::events::{Event, Severity};
use crate::journal::JournalEntry;
use crate::shown::escape_controls;
use crate::urn::{Urn, package_of, provided_package, provider_type};
use crate::value::{OutputField, OutputRef, PropertyMap, Value, object_at_path};

impl Scheduler {
    /// Substitutes resolved values for output references, collecting what they derive from.
    pub(super) fn substitute(&self, value: Value, dependencies: &mut Vec<Urn>) -> Value {
        value.resolve_outputs(&mut |r: &OutputRef| {
            let Some(Slot::Resolved(res)) = self.slots.get(&r.handle) else {
                return Value::Unknown;
            };
            dependencies.extend(res.dependencies.iter().cloned());
            match &r.field {
                OutputField::Property(path) => match &res.value {
                    ResolvedValue::Value(value) => value.at_path(path),
                    ResolvedValue::BaseOutputs(i) => {
                        object_at_path(&self.ctx.base().resources()[*i].outputs, path)
                    }
                },
                OutputField::Id => res.id.clone(),
                OutputField::Urn => res
                    .urn
                    .as_ref()
                    .map_or(Value::Null, |u| Value::String(u.to_string())),
            }
        })
    }

    /// The handle of the default provider resource of `ty`'s package, registered on first use
    /// with the stack configuration of that package (`random:seed` configures `random`).
    /// Provider resources themselves have none.
    pub(super) fn default_provider(&mut self, ty: &str) -> Option<u64> {
        if provided_package(ty).is_some() {
            return None;
        }
        let package = package_of(ty);
        if let Some(&handle) = self.default_providers.get(package) {
            return Some(handle);
        }
        // Program handles count up from 1; these count down from the top.
        let handle = u64::MAX - self.default_providers.len() as u64;
        self.default_providers.insert(package.to_owned(), handle);
        let prefix = format!("{package}:");
        let inputs = (self.options.config.iter())
            .filter_map(|(k, v)| Some((k.strip_prefix(&prefix)?.to_owned(), v.clone())))
            .collect();
        let request = crate::program::RegisterRequest {
            ty: provider_type(package),
            name: "default".to_owned(),
            custom: true,
            inputs,
            options: Default::default(),
        };
        self.add_node(Some(handle), Work::Resource(request), Vec::new());
        Some(handle)
    }

    /// What the provider resource registered as `handle` binds its resources to.
    pub(super) fn binding(&self, handle: u64) -> Option<ProviderBinding> {
        let Some(Slot::Resolved(resolved)) = self.slots.get(&handle) else {
            return None;
        };
        let config = match &resolved.value {
            ResolvedValue::Value(Value::Object(config)) => config.clone(),
            ResolvedValue::BaseOutputs(i) => self.ctx.base().resources()[*i].outputs.clone(),
            ResolvedValue::Value(_) => PropertyMap::new(),
        };
        Some(ProviderBinding {
            reference: reference(resolved.urn.clone()?, &resolved.id),
            config,
            replaced: resolved.replaced,
        })
    }

    pub(super) fn handle_urn(&self, handle: u64) -> Option<Urn> {
        match self.slots.get(&handle) {
            Some(Slot::Resolved(r)) => r.urn.clone(),
            _ => None,
        }
    }

    /// Whether the resource registered as `handle` does not exist (an untargeted create).
    fn is_absent(&self, handle: u64) -> bool {
        matches!(self.slots.get(&handle), Some(Slot::Resolved(r)) if r.absent)
    }

    pub(super) fn handle_dependencies(&self, handle: u64) -> Vec<Urn> {
        match self.slots.get(&handle) {
            Some(Slot::Resolved(r)) => r.dependencies.clone(),
            _ => Vec::new(),
        }
    }
    pub(super) fn start(&mut self, index: usize) {
        let Some(work) = self.nodes[index].work.take() else {
            return;
        };
        let is_step = matches!(*work, Work::Resource(_) | Work::Read { .. });
        if self.ctx.is_halted() && is_step {
            return self.skip(index);
        }
        match *work {
            Work::Resource(request) => self.start_resource(index, request),
            Work::Read {
                ty,
                name,
                id,
                inputs,
                parent,
                provider,
            } => {
                let binding = provider.and_then(|h| self.binding(h));
                let mut deps = Vec::new();
                let inputs = self.substitute_map(inputs, &mut deps);
                let parent_type = parent
                    .and_then(|p| self.handle_urn(p))
                    .and_then(|u| u.type_for_children().map(str::to_owned));
                let urn = Urn::new(
                    &self.options.stack,
                    &self.options.project,
                    parent_type.as_deref(),
                    &ty,
                    &name,
                );
                // A URN that would not read back must never reach the state.
                if let Err(e) = urn.validate() {
                    return self.fail(index, e.to_string());
                }
                if !urn.is_printable() {
                    return self.fail(index, unprintable(&urn));
                }
                let ctx = self.ctx.clone();
                let done = self.completions_tx.clone();
                let turn = self.ctx.reserve();
                self.in_flight += 1;
                spawn_step(async move {
                    let result = ctx.run_read(&urn, &id, &inputs, binding, turn).await;
                    drop(ctx);
                    let _ = done.send(Completion::Step {
                        node: index,
                        urn,
                        record: false,
                        result,
                    });
                });
            }
            Work::Apply(inputs) => {
                let mut deps = Vec::new();
                let values: Vec<Value> = inputs
                    .into_iter()
                    .map(|v| self.substitute(v, &mut deps))
                    .collect();
                let secret = values.iter().any(Value::contains_secrets);
                if values.iter().any(Value::contains_unknowns) {
                    // The closure cannot run on unknown inputs: its result is unknown too.
                    return self.resolve(index, resolved_value(Value::Unknown, deps));
                }
                let apply = self.nodes[index].handle.expect("applies have handles");
                let values = values.into_iter().map(reveal).collect();
                if let Some(tx) = &self.resume_tx {
                    self.in_flight += 1;
                    self.program_calls += 1;
                    let _ = tx.send(ResumeRequest {
                        node: index,
                        apply,
                        inputs: values,
                        secret,
                        dependencies: deps,
                    });
                }
            }
            Work::Value {
                value,
                secret,
                mut dependencies,
            } => {
                let value = self.substitute(value, &mut dependencies);
                let value = if secret { make_secret(value) } else { value };
                self.resolve(index, resolved_value(value, dependencies));
            }
            Work::Outputs { target, outputs } => {
                let mut deps = Vec::new();
                let outputs = self.substitute_map(outputs, &mut deps);
                match target.and_then(|h| self.handle_urn(h)) {
                    // The root's outputs are the stack's: recorded once the program is done.
                    _ if target == Some(ROOT_HANDLE) => self.stack_outputs = Some(outputs),
                    // Not targeted, so not created: it has no state to hold them.
                    _ if target.is_some_and(|h| self.is_absent(h)) => {}
                    None => {}
                    Some(urn) => self.start_component_outputs(urn, outputs),
                }
            }
        }
    }

    /// Records the outputs a program registered for component `urn`, after those it registered
    /// before for it. A component `--target` leaves out keeps the outputs it recorded, as it
    /// keeps the rest of its state.
    fn start_component_outputs(&mut self, urn: Urn, outputs: PropertyMap) {
        let old = (self.ctx.base().live(&urn)).map(|i| &self.ctx.base().resources()[i].outputs);
        let kept = (self.ctx.targets()).is_some_and(|t| !t.contains(&urn));
        if kept {
            if old != Some(&outputs) {
                let note = "not targeted: the outputs it registers now are not recorded";
                self.events.diagnostic(Some(&urn), Severity::Info, note);
            }
            return;
        }
        self.events.emit(Event::ComponentOutputs {
            urn: urn.clone(),
            old: old.cloned().unwrap_or_default(),
            new: outputs.clone(),
        });
        if self.ctx.preview() {
            return;
        }
        // Each recording goes after the one before it for the same component: the tasks may
        // run in any order, and the last outputs registered are the ones that stand.
        let (recorded, last) = oneshot::channel::<()>();
        let before = self.outputs_recorded.insert(urn.clone(), last);
        let ctx = self.ctx.clone();
        let done = self.completions_tx.clone();
        self.in_flight += 1;
        spawn_step(async move {
            if let Some(before) = before {
                // Fails (as meant) once that recording has dropped its sender.
                let _ = before.await;
            }
            let entry = JournalEntry::ComponentOutputs { urn, outputs };
            let result = ctx.record(|| entry).await.map_err(|e| e.to_string());
            drop(recorded);
            drop(ctx);
            let _ = done.send(Completion::ComponentOutputs(result));
        });
    }

    pub(super) fn substitute_map(&self, map: PropertyMap, deps: &mut Vec<Urn>) -> PropertyMap {
        map.into_iter()
            .map(|(k, v)| (k, self.substitute(v, deps)))
            .collect()
    }

    pub(super) fn start_resource(
        &mut self,
        index: usize,
        mut request: crate::program::RegisterRequest,
    ) {
        let parent = request.options.parent.and_then(|p| self.handle_urn(p));
        if request.options.parent.is_some() && parent.is_none() {
            return self.fail(
                index,
                format!("{}: its parent is not a resource", request.name),
            );
        }

        let urn = Urn::new(
            &self.options.stack,
            &self.options.project,
            parent.as_ref().and_then(|p| p.type_for_children()),
            &request.ty,
            &request.name,
        );
        if let Err(e) = urn.validate() {
            return self.fail(index, e.to_string());
        }
        if !urn.is_printable() {
            return self.fail(index, unprintable(&urn));
        }
        let provider = request.options.provider.and_then(|h| self.binding(h));
        if request.options.provider.is_some() && provider.is_none() {
            return self.fail(
                index,
                format!("{urn}: its provider is not a provider resource"),
            );
        }
        if let Some(b) = &provider
            && package_of(b.reference.urn.ty()) != package_of(&request.ty)
        {
            return self.fail(
                index,
                format!(
                    "{urn}: its provider {} provides another package",
                    b.reference.urn
                ),
            );
        }
        if !self.registered.insert(urn.clone()) {
            return self.fail(
                index,
                format!("{urn}: registered twice; resource names must be unique per type"),
            );
        }
        let mut dependencies = Vec::new();
        // The step needs only the substituted inputs: the program's are not kept beside them.
        let inputs = self.substitute_map(std::mem::take(&mut request.inputs), &mut dependencies);
        for h in &request.options.depends_on {
            dependencies.extend(self.handle_dependencies(*h));
        }
        dependencies.retain(|d| Some(d) != parent.as_ref() && *d != urn);
        dedup_in_order(&mut dependencies);
        // A parent that was not created (not targeted) cannot have children: a targeted child
        // fails, naming it; an untargeted one is not created either.
        if let (Some(parent), Some(handle)) = (&parent, request.options.parent)
            && self.is_absent(handle)
        {
            let predecessors = std::iter::once(parent).chain(&dependencies);
            if (self.ctx.targets()).is_some_and(|t| t.includes(&urn, predecessors)) {
                return self.fail(
                    index,
                    format!(
                        "{urn}: its parent {parent} does not exist (not targeted, so not \
                         created); target it too"
                    ),
                );
            }
            self.events
                .diagnostic(Some(&urn), Severity::Info, "not targeted: not created");
            return self.resolve(index, absent(urn));
        }
        let step = ResourceStep {
            urn: urn.clone(),
            request,
            inputs,
            parent,
            dependencies,
            provider,
        };
        let ctx = self.ctx.clone();
        let done = self.completions_tx.clone();
        // The place in line is taken now, in the order steps become ready, not when the task
        // first runs.
        let turn = self.ctx.reserve();
        let under_way = self.ctx.under_way(&step);
        self.in_flight += 1;
        spawn_step(async move {
            let result = ctx.run_resource(step, turn).await;
            drop(under_way);
            drop(ctx);
            let _ = done.send(Completion::Step {
                node: index,
                urn,
                record: true,
                result,
            });
        });
    }
}

/// Spawns a step's task. A task lets go of the step context before it reports its completion:
/// once every step has reported, the deployment holds the context alone, and can free the base
/// state before the final snapshot is built (see [`super::run`]). Its future is about 8 KB: boxed, tokio moves a pointer instead of
/// copying the future a few times before it first runs (in a no-op preview of 10,000
/// resources, those copies were the largest source of memcpy).
fn spawn_step(future: impl Future<Output = ()> + Send + 'static) {
    tokio::spawn(Box::pin(future));
}

/// Why a program's registration of `urn` is refused.
fn unprintable(urn: &Urn) -> String {
    format!(
        "`{}`: a resource's name and type may not contain control characters",
        escape_controls(urn.as_str())
    )
}

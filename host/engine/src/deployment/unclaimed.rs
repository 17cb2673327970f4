//! The end of a deployment: deleting what the program no longer declares and the copies it
//! replaced, each after every resource that depends on it, independent deletes in parallel.

use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};
use tokio::task::JoinSet;

use super::scheduler::Scheduler;
use super::step::result::StepError;
use crate::events::{Severity, StepOp};
use crate::urn::{Urn, is_stack_type, provided_package};

impl Scheduler {
    /// Deletes base resources the program did not declare and those it replaced, each after
    /// every resource that depends on it. After a failure (`clean` false, with
    /// `--continue-on-error`) only replaced copies go: the program's registrations may be
    /// incomplete, so an undeclared resource may merely be one whose registration was skipped.
    pub(super) async fn delete_unclaimed(&mut self, clean: bool) {
        let replaced: HashSet<usize> = self.replaced.iter().copied().collect();
        let base = self.ctx.base().resources();
        let targeted = |urn: &Urn| self.ctx.targets().is_none_or(|t| t.contains(urn));
        let mut kept = 0;
        let mut doomed: Vec<(usize, StepOp)> = {
            let claims = self.ctx.claims();
            base.iter()
                .enumerate()
                .filter_map(|(i, r)| {
                    if claims.is_deleted(i) || claims.is_claimed(i) && !replaced.contains(&i) {
                        None
                    } else if r.delete || replaced.contains(&i) {
                        targeted(&r.urn).then_some((i, StepOp::DeleteReplaced))
                    } else if !self.registered.contains(&r.urn) && targeted(&r.urn) {
                        kept += usize::from(!clean);
                        clean.then_some((i, StepOp::Delete))
                    } else {
                        None
                    }
                })
                .collect()
        };
        if kept > 0 {
            self.events.diagnostic(
                None,
                Severity::Warning,
                format!(
                    "{kept} resources the program no longer declares were kept, because the \
                     update had errors; the next successful `up` deletes them"
                ),
            );
        }
        // A resource left out stays as it is, so what it depends on must stay too, and what
        // that depends on: refusals repeat until none is added.
        if let Some(targets) = self.ctx.targets() {
            let mut refused = HashSet::new();
            loop {
                let doomed_urns: HashSet<&Urn> = (doomed.iter())
                    .filter(|(i, _)| !refused.contains(i))
                    .map(|(i, _)| &base[*i].urn)
                    .collect();
                let mut more = false;
                for (i, op) in &doomed {
                    let urn = &base[*i].urn;
                    if *op != StepOp::Delete || refused.contains(i) {
                        continue;
                    }
                    // A targeted dependent the program still declares no longer needs it;
                    // one refused above stays as it is.
                    let blocker = (self.ctx.base().dependents(urn).iter())
                        .filter(|&&j| !targeted(&base[j].urn) || refused.contains(&j))
                        .map(|&j| &base[j])
                        .find(|d| !d.delete && !doomed_urns.contains(&d.urn));
                    let Some(dependent) = blocker else { continue };
                    refused.insert(*i);
                    more = true;
                    // The root and provider resources are named by no target: they stay
                    // while anything left needs them.
                    let ty = &base[*i].ty;
                    if is_stack_type(ty) || provided_package(ty).is_some() {
                        continue;
                    }
                    let why = if targeted(&dependent.urn) {
                        "is kept, as it cannot be deleted".to_owned()
                    } else {
                        format!(
                            "is {}; {}",
                            targets.left_out_word(),
                            targets.how_to_include(&dependent.urn)
                        )
                    };
                    self.errors.push(format!(
                        "{urn}: cannot delete it: {} depends on it and {why}",
                        dependent.urn
                    ));
                }
                if !more {
                    break;
                }
            }
            doomed.retain(|(i, _)| !refused.contains(i));
        }
        // A doomed resource waits for every later doomed resource that names it.
        let mut by_urn: HashMap<&Urn, Vec<usize>> = HashMap::new();
        for (slot, (i, _)) in doomed.iter().enumerate() {
            by_urn.entry(&base[*i].urn).or_default().push(slot);
        }
        let mut blockers = vec![0usize; doomed.len()];
        let mut unblocks: Vec<Vec<usize>> = vec![Vec::new(); doomed.len()];
        for (slot, (i, _)) in doomed.iter().enumerate() {
            for pred in base[*i].predecessors() {
                for &target in by_urn.get(pred).into_iter().flatten() {
                    if doomed[target].0 < *i {
                        blockers[target] += 1;
                        unblocks[slot].push(target);
                    }
                }
            }
        }
        // The stack's root goes last, after every other delete, provider resources included.
        if let Some(root) = (doomed.iter()).position(|(i, _)| is_stack_type(&base[*i].ty)) {
            for slot in (0..doomed.len()).filter(|&s| s != root) {
                if !unblocks[slot].contains(&root) {
                    blockers[root] += 1;
                    unblocks[slot].push(root);
                }
            }
        }
        let mut tasks = JoinSet::new();
        let ctx = self.ctx.clone();
        let spawn = |tasks: &mut JoinSet<_>, slot: usize| {
            let ctx = ctx.clone();
            let (index, op) = doomed[slot];
            let turn = ctx.reserve();
            tasks.spawn(async move { (slot, ctx.run_delete(index, op, turn).await) });
        };
        for slot in (0..doomed.len()).rev().filter(|&s| blockers[s] == 0) {
            spawn(&mut tasks, slot);
        }
        while let Some(joined) = tasks.join_next().await {
            let (slot, result) = joined.expect("delete task panicked");
            match result {
                Err(StepError::Halted) => {}
                Err(e) => {
                    self.error(e.to_string());
                    if !self.options.continue_on_error {
                        self.ctx.halt();
                    }
                }
                Ok(()) if self.ctx.is_halted() => {}
                Ok(()) => {
                    for &target in &unblocks[slot] {
                        blockers[target] -= 1;
                        if blockers[target] == 0 {
                            spawn(&mut tasks, target);
                        }
                    }
                }
            }
        }
    }
}

//! The end of a deployment: deleting what the program no longer declares and the copies it
//! replaced, each after every resource that depends on it, independent deletes in parallel.

use std::collections::{HashMap, HashSet};

use tokio::task::JoinSet;

use super::scheduler::Scheduler;
use super::step::result::StepError;
use crate::events::{Severity, StepOp};
use crate::urn::{Urn, is_stack_type};

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
        // An untargeted resource stays as it is, so what it depends on must stay too.
        if self.ctx.targets().is_some() {
            let doomed_urns: HashSet<&Urn> = doomed.iter().map(|(i, _)| &base[*i].urn).collect();
            let mut refused = HashSet::new();
            for (i, op) in &doomed {
                let urn = &base[*i].urn;
                if *op != StepOp::Delete {
                    continue;
                }
                let blocker = (self.ctx.base().dependents(urn).iter())
                    .map(|&j| &base[j])
                    .find(|d| !d.delete && !doomed_urns.contains(&d.urn) && !targeted(&d.urn));
                if let Some(dependent) = blocker {
                    self.errors.push(format!(
                        "{urn}: cannot delete it: {} depends on it and is not targeted; add \
                         `--target {}` or `--target-dependents`",
                        dependent.urn, dependent.urn
                    ));
                    refused.insert(*i);
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

//! The policy check between a step's plan and its execution: every pack judges the resource
//! about to be created, imported, updated or replaced; a mandatory violation fails the step
//! before any provider call changes anything, an advisory one is reported and recorded. Once
//! the program has ended, the packs judge the whole stack. Each violation is one
//! `PolicyViolation` event; the failure it causes only names it, so it is shown once.

use super::context::StepContext;
use super::plan::{Kind, StepPlan};
use super::result::StepError;
use crate::events::Event;
use crate::policy::{EnforcementLevel, PackRun, PolicyResource, Violation};
use crate::resource::ResourceState;

impl StepContext {
    /// Asks every pack about `state`, which `plan` is about to change (its recorded state
    /// `old`), and remembers it for the stack's analysis.
    pub(super) async fn check_policies(
        &self,
        plan: &StepPlan,
        kind: Kind,
        state: &ResourceState,
        old: Option<&ResourceState>,
    ) -> Result<(), StepError> {
        if self.policies.is_empty() || kind != Kind::Custom {
            return Ok(());
        }
        // An import changes the stack as a create does: what it adopts is judged too.
        let changes = matches!(
            plan,
            StepPlan::Create
                | StepPlan::Import { .. }
                | StepPlan::Update { .. }
                | StepPlan::Replace { .. }
        );
        let resource = PolicyResource {
            ty: state.ty.clone(),
            urn: state.urn.clone(),
            inputs: state.inputs.clone(),
            old_inputs: old.map(|o| o.inputs.clone()),
            provider: state.provider.as_ref().map(|p| p.urn.clone()),
            parent: state.parent.clone(),
            dependencies: state.dependencies.clone(),
        };
        if changes {
            let mut mandatory = Vec::new();
            for (index, pack) in self.policies.0.iter().enumerate() {
                let violations = (pack.analyze_resource(&resource).await)
                    .map_err(|e| self.fail(&state.urn, e.to_string()))?;
                mandatory.extend(self.report(index, violations));
            }
            if !mandatory.is_empty() {
                return Err(self.fail(&state.urn, mandatory_failure(&mandatory)));
            }
        }
        if !matches!(plan, StepPlan::NotCreated) {
            self.policy_resources
                .lock()
                .expect("policy resources")
                .push(resource);
        }
        Ok(())
    }

    /// Asks every pack about the stack's resources once the program has ended; the errors
    /// of mandatory violations and of packs that failed.
    pub(crate) async fn check_stack_policies(&self) -> Vec<String> {
        if self.policies.is_empty() {
            return Vec::new();
        }
        let resources = std::mem::take(&mut *self.policy_resources.lock().expect("policy"));
        let mut errors = Vec::new();
        for (index, pack) in self.policies.0.iter().enumerate() {
            match pack.analyze_stack(&resources).await {
                Ok(violations) => {
                    let mandatory = self.report(index, violations);
                    if !mandatory.is_empty() {
                        errors.push(format!("the stack {}", mandatory_failure(&mandatory)));
                    }
                }
                Err(e) => errors.push(e.to_string()),
            }
        }
        errors
    }

    /// What each pack did so far: its identity and its violations by level.
    pub(crate) fn policy_runs(&self) -> Vec<PackRun> {
        let counts = self.policy_counts.lock().expect("policy counts");
        (self.policies.0.iter().zip(counts.iter()))
            .map(|(pack, (advisory, mandatory))| PackRun {
                name: pack.name().to_owned(),
                version: pack.version().to_owned(),
                digest: pack.digest().to_owned(),
                advisory: *advisory,
                mandatory: *mandatory,
            })
            .collect()
    }

    /// Emits `violations`, those of the pack at `index`, as events (so the display shows them
    /// and `plinth logs` keeps them) and counts them; the mandatory ones, which the caller
    /// fails on.
    fn report(&self, index: usize, violations: Vec<Violation>) -> Vec<Violation> {
        let mut mandatory = Vec::new();
        for violation in violations {
            {
                let mut counts = self.policy_counts.lock().expect("policy counts");
                let (advisory, mandatory) = &mut counts[index];
                match violation.level {
                    EnforcementLevel::Disabled => continue,
                    EnforcementLevel::Advisory => *advisory += 1,
                    EnforcementLevel::Mandatory => *mandatory += 1,
                }
            }
            if violation.level == EnforcementLevel::Mandatory {
                mandatory.push(violation.clone());
            }
            self.events.emit(Event::PolicyViolation(violation));
        }
        mandatory
    }
}

/// The failure for mandatory `violations` (at least one): it names their policies, whose
/// events say the rest.
fn mandatory_failure(violations: &[Violation]) -> String {
    let mut policies: Vec<String> = (violations.iter())
        .map(|v| format!("`{}/{}`", v.pack, v.policy))
        .collect();
    policies.dedup();
    format!(
        "violates {} mandatory polic{} ({}); nothing was changed",
        violations.len(),
        if violations.len() == 1 { "y" } else { "ies" },
        crate::shown::escape_controls(&policies.join(", "))
    )
}

//! The policy check between a step's plan and its execution: every pack judges the resource
//! about to be created, updated or replaced; a mandatory violation fails the step before any
//! provider call changes anything, an advisory one is reported and recorded as a diagnostic.
//! Once the program has ended, the packs judge the whole stack.

use super::context::StepContext;
use super::plan::{Kind, StepPlan};
use super::result::StepError;
use crate::events::Severity;
use crate::policy::{EnforcementLevel, PolicyResource, Violation};
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
        let changes = matches!(
            plan,
            StepPlan::Create | StepPlan::Update { .. } | StepPlan::Replace { .. }
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
            for pack in &self.policies.0 {
                let violations = (pack.analyze_resource(&resource).await)
                    .map_err(|e| self.fail(&state.urn, e.to_string()))?;
                mandatory.extend(self.report(violations));
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
        for pack in &self.policies.0 {
            match pack.analyze_stack(&resources).await {
                Ok(violations) => {
                    let mandatory = self.report(violations);
                    if !mandatory.is_empty() {
                        errors.push(format!("the stack {}", mandatory_failure(&mandatory)));
                    }
                }
                Err(e) => errors.push(e.to_string()),
            }
        }
        errors
    }

    /// Reports `violations` as diagnostics (so the display shows them and `plinth logs` keeps
    /// them); the mandatory ones, which the caller fails on.
    fn report(&self, violations: Vec<Violation>) -> Vec<Violation> {
        let mut mandatory = Vec::new();
        for violation in violations {
            let severity = match violation.level {
                EnforcementLevel::Disabled => continue,
                EnforcementLevel::Advisory => Severity::Warning,
                EnforcementLevel::Mandatory => Severity::Error,
            };
            let urn = violation.urn.as_ref();
            self.events.diagnostic(urn, severity, violation.to_string());
            if violation.level == EnforcementLevel::Mandatory {
                mandatory.push(violation);
            }
        }
        mandatory
    }
}

/// The failure for mandatory `violations` (at least one).
fn mandatory_failure(violations: &[Violation]) -> String {
    let lines: Vec<String> = violations.iter().map(|v| format!("\n  {v}")).collect();
    format!(
        "violates {} mandatory polic{}; nothing was changed:{}",
        violations.len(),
        if violations.len() == 1 { "y" } else { "ies" },
        lines.concat()
    )
}

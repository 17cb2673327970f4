//! Policy packs in the step pipeline, on in-process fakes: a pack objects to any resource whose
//! input `v` is `bad` (mandatory) or `meh` (advisory), and to a stack of more than `max`
//! resources.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use plinth_deploytest::*;
use plinth_engine::deployment::Options;
use plinth_engine::policy::{
    EnforcementLevel, PackRun, PolicyError, PolicyPack, PolicyPacks, PolicyResource, Violation,
};
use plinth_engine::value::Value;

#[derive(Default)]
struct FakePack {
    /// The resources analyzed, as `urn name: old v -> new v`.
    seen: Mutex<Vec<String>>,
    /// The stack's analysis objects to more resources than this.
    max: Option<usize>,
    /// Every call fails.
    broken: bool,
}

fn v(inputs: &plinth_engine::value::PropertyMap) -> String {
    inputs.get("v").map(Value::to_string).unwrap_or_default()
}

fn violation(level: EnforcementLevel, message: &str, r: Option<&PolicyResource>) -> Violation {
    Violation {
        pack: "fake".into(),
        policy: "no-bad-v".into(),
        level,
        message: message.into(),
        property: "v".into(),
        urn: r.map(|r| r.urn.clone()),
    }
}

#[async_trait]
impl PolicyPack for FakePack {
    fn name(&self) -> &str {
        "fake"
    }

    fn version(&self) -> &str {
        "0.1.0"
    }

    fn digest(&self) -> &str {
        "fa4e"
    }

    async fn analyze_resource(&self, r: &PolicyResource) -> Result<Vec<Violation>, PolicyError> {
        if self.broken {
            return Err(PolicyError {
                pack: "fake".into(),
                message: "`analyze-resource` trapped".into(),
            });
        }
        let old = r.old_inputs.as_ref().map(v).unwrap_or_default();
        (self.seen.lock().unwrap()).push(format!("{}: {old} -> {}", r.urn.name(), v(&r.inputs)));
        Ok(match r.inputs.get("v").and_then(Value::as_str) {
            Some("bad") => vec![violation(EnforcementLevel::Mandatory, "v is bad", Some(r))],
            Some("meh") => vec![violation(EnforcementLevel::Advisory, "v is meh", Some(r))],
            _ => Vec::new(),
        })
    }

    async fn analyze_stack(&self, rs: &[PolicyResource]) -> Result<Vec<Violation>, PolicyError> {
        Ok(match self.max {
            Some(max) if rs.len() > max => {
                vec![violation(EnforcementLevel::Mandatory, "too many", None)]
            }
            _ => Vec::new(),
        })
    }
}

fn with(pack: Arc<FakePack>) -> Options {
    Options {
        policies: PolicyPacks(vec![pack]),
        ..Options::default()
    }
}

#[tokio::test]
async fn a_mandatory_violation_stops_its_step_before_the_provider_is_called() {
    let mut h = Harness::new();
    let pack = Arc::new(FakePack::default());
    let decls = vec![decl("a").input("v", "1"), decl("b").input("v", "bad")];
    let outcome = h.up_with(decls, with(pack.clone())).await;
    let errors = outcome.errors.join("\n");
    // The failure names the policy; the violation itself is its own event, shown once.
    assert!(
        errors.contains("violates 1 mandatory policy (`fake/no-bad-v`); nothing was changed")
            && !errors.contains("v is bad"),
        "{errors}"
    );
    assert_eq!(
        outcome.policies,
        [PackRun {
            name: "fake".into(),
            version: "0.1.0".into(),
            digest: "fa4e".into(),
            advisory: 0,
            mandatory: 1,
        }]
    );
    assert!(!h.provider.calls().contains(&"create b".to_owned()));
    assert!(!h.names().contains(&"b".to_owned()), "{:?}", h.names());
}

#[tokio::test]
async fn an_update_is_judged_with_its_old_inputs_and_a_violation_keeps_the_old_state() {
    let mut h = Harness::new();
    let pack = Arc::new(FakePack::default());
    h.up_with(vec![decl("a").input("v", "1")], with(pack.clone()))
        .await;
    h.provider.clear_calls();
    let outcome = (h.up_with(vec![decl("a").input("v", "bad")], with(pack.clone()))).await;
    assert!(!outcome.errors.is_empty());
    assert!(!h.provider.calls().iter().any(|c| c.starts_with("update")));
    assert_eq!(h.state("a").inputs.get("v"), Some(&Value::from("1")));
    let seen = pack.seen.lock().unwrap().clone();
    assert_eq!(seen, ["a:  -> \"1\"", "a: \"1\" -> \"bad\""]);

    // An unchanged resource is not judged again.
    (h.up_with(vec![decl("a").input("v", "1")], with(pack.clone()))).await;
    assert_eq!(pack.seen.lock().unwrap().len(), 2);
}

#[tokio::test]
async fn an_advisory_violation_lets_the_run_succeed() {
    let mut h = Harness::new();
    let pack = Arc::new(FakePack::default());
    let outcome = h
        .up_with(vec![decl("a").input("v", "meh")], with(pack))
        .await;
    assert!(outcome.errors.is_empty(), "{:?}", outcome.errors);
    assert_eq!(h.names(), ["a"]);
    assert_eq!(
        (outcome.policies[0].advisory, outcome.policies[0].mandatory),
        (1, 0)
    );
}

#[tokio::test]
async fn a_failing_pack_fails_the_step_naming_the_pack() {
    let mut h = Harness::new();
    let pack = Arc::new(FakePack {
        broken: true,
        ..FakePack::default()
    });
    let outcome = h.up_with(vec![decl("a").input("v", "1")], with(pack)).await;
    let errors = outcome.errors.join("\n");
    assert!(
        errors.contains("policy pack `fake` failed: `analyze-resource` trapped"),
        "{errors}"
    );
    assert!(h.provider.calls().is_empty(), "{:?}", h.provider.calls());
}

#[tokio::test]
async fn the_stack_is_judged_once_the_program_ends_before_anything_is_deleted() {
    let mut h = Harness::new();
    h.up(vec![decl("a").input("v", "1"), decl("old").input("v", "1")])
        .await;
    let pack = Arc::new(FakePack {
        max: Some(1),
        ..FakePack::default()
    });
    let decls = vec![decl("a").input("v", "1"), decl("b").input("v", "2")];
    let outcome = h.up_with(decls, with(pack)).await;
    let errors = outcome.errors.join("\n");
    assert!(
        errors.contains("the stack violates 1 mandatory policy"),
        "{errors}"
    );
    // The deletions wait for a clean run.
    assert!(h.names().contains(&"old".to_owned()), "{:?}", h.names());
}

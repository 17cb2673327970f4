//! `up --plan`'s second line: under a plan, a step the plan does not have is refused before it
//! runs (the first line, the CLI's preview compared with the plan, cannot see a program that
//! registers one thing in a preview and another in an update).

use std::sync::Arc;

use plinth_deploytest::*;
use plinth_engine::deployment::Options;
use plinth_engine::events::{Event, StepOp};
use plinth_engine::plan::{PlanGuard, PlannedStep};

fn script(decls: Vec<Decl>) -> Box<ScriptProgram> {
    Box::new(ScriptProgram {
        decls,
        apply_runs: Arc::default(),
    })
}

/// The steps a preview of `decls` plans, as `preview --save-plan` keeps them.
async fn plan(h: &mut Harness, decls: Vec<Decl>) -> Vec<PlannedStep> {
    let outcome = h.run(script(decls), true).await;
    assert!(outcome.errors.is_empty(), "{:?}", outcome.errors);
    (h.events.iter())
        .filter_map(|event| match event {
            Event::StepDone { step, .. } => Some(PlannedStep::of(step)),
            _ => None,
        })
        .collect()
}

fn under(plan: &[PlannedStep]) -> Options {
    Options {
        plan: Some(Arc::new(PlanGuard::new(plan))),
        ..Options::default()
    }
}

#[tokio::test]
async fn the_planned_steps_run_their_unknowns_now_known() {
    let mut h = Harness::new();
    let decls = vec![decl("a").input("v", "1"), decl("b").from("prev", "a")];
    let planned = plan(&mut h, decls.clone()).await;
    let b = planned.iter().find(|s| s.urn.name() == "b").unwrap();
    assert!(b.inputs.as_ref().unwrap()["prev"].is_unknown(), "{b:?}");
    let outcome = h.up_with(decls, under(&planned)).await;
    assert!(outcome.errors.is_empty(), "{:?}", outcome.errors);
    assert_eq!(h.sorted_names(), ["a", "b"]);
}

#[tokio::test]
async fn a_step_with_other_inputs_or_not_planned_is_refused_before_it_runs() {
    let mut h = Harness::new();
    let planned = plan(&mut h, vec![decl("a").input("v", "1")]).await;
    let outcome = (h.up_with(vec![decl("a").input("v", "2")], under(&planned))).await;
    assert!(
        outcome.errors.iter().any(|e| e.contains(
            "refused before it ran, as the plan does not have it: the input `v` of a create of"
        )),
        "{:?}",
        outcome.errors
    );
    assert!(h.provider.calls().is_empty(), "{:?}", h.provider.calls());

    let outcome = (h.up_with(vec![decl("a").input("v", "1"), decl("z")], under(&planned))).await;
    let refused = format!(
        "the program now asks for a create of `{}`",
        Harness::urn("z")
    );
    assert!(
        outcome.errors.iter().any(|e| e.contains(&refused)),
        "{:?}",
        outcome.errors
    );
    assert!(!h.names().contains(&"z".to_owned()), "{:?}", h.names());
}

#[tokio::test]
async fn a_delete_not_planned_is_refused_before_it_runs() {
    let mut h = Harness::new();
    let outcome = h.up(vec![decl("a"), decl("b")]).await;
    assert!(outcome.errors.is_empty(), "{:?}", outcome.errors);
    let planned = plan(&mut h, vec![decl("a"), decl("b")]).await;
    assert!(planned.iter().all(|s| s.op == StepOp::Same), "{planned:?}");
    h.provider.clear_calls();
    let outcome = h.up_with(vec![decl("a")], under(&planned)).await;
    assert!(
        outcome
            .errors
            .iter()
            .any(|e| e.contains("the program now asks for a delete of")),
        "{:?}",
        outcome.errors
    );
    assert!(h.provider.calls().is_empty(), "{:?}", h.provider.calls());
    assert_eq!(h.sorted_names(), ["a", "b"]);
}

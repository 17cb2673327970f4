use super::*;

fn urn(name: &str) -> Urn {
    Urn::new("dev", "p", None, "testkit:Echo", name)
}

fn step(name: &str, op: StepOp, inputs: &[(&str, Value)]) -> PlannedStep {
    PlannedStep {
        urn: urn(name),
        ty: "testkit:Echo".into(),
        op,
        inputs: Some(
            inputs
                .iter()
                .map(|(k, v)| ((*k).into(), v.clone()))
                .collect(),
        ),
        replaces: Vec::new(),
    }
}

fn secret(text: &str) -> Value {
    Value::Secret(Box::new(text.into()))
}

#[test]
fn the_same_steps_in_another_order_match() {
    let planned = [
        step("a", StepOp::Create, &[("value", "x".into())]),
        step("b", StepOp::Update, &[("value", "y".into())]),
    ];
    let now = [planned[1].clone(), planned[0].clone()];
    assert_eq!(compare(&planned, &now), Ok(()));
}

#[test]
fn an_unknown_planned_value_may_become_known_and_nothing_else_may_change() {
    let planned = [step(
        "b",
        StepOp::Create,
        &[("prev", Value::Unknown), ("value", "v".into())],
    )];
    let known = [step(
        "b",
        StepOp::Create,
        &[("prev", "from-a".into()), ("value", "v".into())],
    )];
    assert_eq!(compare(&planned, &known), Ok(()));
    // The other way round is a change: a value known in the plan cannot become unknown.
    let error = compare(&known, &planned).unwrap_err();
    assert!(
        matches!(&error, Difference::Input { path, secret: false, .. } if path == "prev"),
        "{error}"
    );
    let other = [step(
        "b",
        StepOp::Create,
        &[("prev", Value::Unknown), ("value", "w".into())],
    )];
    let error = compare(&planned, &other).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "the input `value` of a create of `{}` differs from the plan's",
            urn("b")
        )
    );
}

#[test]
fn an_input_added_or_dropped_is_a_difference_at_its_path() {
    let nested = |v: Value| {
        Value::Object(
            [("tags".to_owned(), Value::Array(vec!["a".into(), v]))]
                .into_iter()
                .collect(),
        )
    };
    let planned = [step("a", StepOp::Create, &[("spec", nested("b".into()))])];
    let now = [step("a", StepOp::Create, &[("spec", nested("c".into()))])];
    let error = compare(&planned, &now).unwrap_err();
    assert!(
        matches!(&error, Difference::Input { path, .. } if path == "spec.tags.1"),
        "{error}"
    );
    let more = [step(
        "a",
        StepOp::Create,
        &[("spec", nested("b".into())), ("extra", "1".into())],
    )];
    let error = compare(&planned, &more).unwrap_err();
    assert!(
        matches!(&error, Difference::Input { path, .. } if path == "extra"),
        "{error}"
    );
    let error = compare(&more, &planned).unwrap_err();
    assert!(
        matches!(&error, Difference::Input { path, .. } if path == "extra"),
        "{error}"
    );
}

#[test]
fn a_changed_secret_is_named_but_never_shown() {
    let planned = [step(
        "a",
        StepOp::Update,
        &[("token", secret("old-plaintext"))],
    )];
    let now = [step(
        "a",
        StepOp::Update,
        &[("token", secret("new-plaintext"))],
    )];
    let error = compare(&planned, &now).unwrap_err().to_string();
    assert!(
        error.contains("`token`") && error.contains("a secret"),
        "{error}"
    );
    assert!(!error.contains("plaintext"), "{error}");
    // A value that stopped (or started) being secret is a difference too, and still hidden.
    let plain = [step(
        "a",
        StepOp::Update,
        &[("token", "old-plaintext".into())],
    )];
    let error = compare(&planned, &plain).unwrap_err().to_string();
    assert!(
        error.contains("a secret") && !error.contains("plaintext"),
        "{error}"
    );
    assert_eq!(compare(&planned, &planned.clone()), Ok(()));
}

#[test]
fn a_step_more_or_less_is_named() {
    let planned = [
        step("a", StepOp::Create, &[]),
        step("b", StepOp::Create, &[]),
    ];
    let error = compare(&planned, &planned[..1]).unwrap_err();
    assert_eq!(
        error,
        Difference::Missing(Step {
            op: StepOp::Create,
            urn: urn("b").to_string()
        })
    );
    assert_eq!(
        error.to_string(),
        format!(
            "the plan has a create of `{}`, which the program no longer asks for",
            urn("b")
        )
    );
    let error = compare(&planned[..1], &planned).unwrap_err();
    assert!(matches!(
        error,
        Difference::Unplanned(Step {
            op: StepOp::Create,
            ..
        })
    ));
}

#[test]
fn another_operation_on_the_same_resource_is_named_with_both() {
    let planned = [step("a", StepOp::Update, &[])];
    let mut replace = step("a", StepOp::Replace, &[]);
    replace.replaces = vec!["replace_key".into()];
    let now = [replace, step("a", StepOp::DeleteReplaced, &[])];
    let error = compare(&planned, &now).unwrap_err().to_string();
    assert_eq!(
        error,
        format!(
            "the plan has an update of `{}`; the program now asks for a delete-replaced and a \
             replace of it",
            urn("a")
        )
    );
}

#[test]
fn replace_reasons_and_types_must_match() {
    let mut planned = step("a", StepOp::Replace, &[]);
    planned.replaces = vec!["replace_key".into()];
    let mut now = planned.clone();
    now.replaces = vec!["value".into()];
    let error = compare(&[planned.clone()], &[now]).unwrap_err();
    assert!(matches!(error, Difference::Replaces { .. }), "{error}");
    let mut now = planned.clone();
    now.ty = "testkit:Other".into();
    let error = compare(&[planned], &[now]).unwrap_err();
    assert!(matches!(error, Difference::Type { .. }), "{error}");
}

#[test]
fn hostile_names_are_escaped_in_the_difference() {
    let planned = [step("a", StepOp::Create, &[("x\u{1b}[2Jy", "1".into())])];
    let now = [step("a", StepOp::Create, &[("x\u{1b}[2Jy", "2".into())])];
    let error = compare(&planned, &now).unwrap_err().to_string();
    assert!(!error.contains('\u{1b}'), "{error:?}");
    assert!(error.contains("x\\u{1b}[2Jy"), "{error}");
}

#[test]
fn a_planned_step_survives_its_json() {
    let planned = step(
        "a",
        StepOp::Create,
        &[("n", Value::Integer(3)), ("later", Value::Unknown)],
    );
    let json = serde_json::to_string(&planned).unwrap();
    let back: PlannedStep = serde_json::from_str(&json).unwrap();
    assert_eq!(back, planned);
    let bad_urn = json.replace("urn:plinth", "not-a-urn");
    assert!(serde_json::from_str::<PlannedStep>(&bad_urn).is_err());
}

//! The decision on its own: every step kind, and every option that changes it, without a
//! provider (a diff is given as the provider would return it).

use proptest::prelude::*;

use super::*;

fn state(ty: &str, custom: bool) -> ResourceState {
    ResourceState {
        urn: Urn::new("dev", "proj", None, ty, "r"),
        ty: ty.to_owned(),
        custom,
        id: if custom { "id-1".into() } else { String::new() },
        inputs: props(&[("size", "1")]),
        outputs: PropertyMap::new(),
        parent: None,
        dependencies: Vec::new(),
        protect: false,
        retain_on_delete: false,
        delete: false,
        provider: None,
        custom_timeouts: None,
    }
}

fn custom() -> ResourceState {
    state("pkg:index:Thing", true)
}

fn provider_resource() -> ResourceState {
    state("plinth:providers:pkg", true)
}

fn component() -> ResourceState {
    state("my:app:Group", false)
}

fn props(pairs: &[(&str, &str)]) -> PropertyMap {
    (pairs.iter())
        .map(|(k, v)| ((*k).to_owned(), Value::String((*v).to_owned())))
        .collect()
}

fn strings(keys: &[&str]) -> Vec<String> {
    keys.iter().map(|k| (*k).to_owned()).collect()
}

fn diff(changed: &[&str], replaces: &[&str], delete_before_replace: bool) -> DiffResult {
    DiffResult {
        changed: strings(changed),
        replaces: strings(replaces),
        delete_before_replace,
    }
}

fn targeted() -> PlanOptions<'static> {
    PlanOptions {
        targeted: true,
        ..PlanOptions::default()
    }
}

fn decide(
    kind: Kind,
    old: Option<(&ResourceState, &DiffResult)>,
    options: PlanOptions,
) -> Result<StepPlan, PlanError> {
    // Not the recorded state's URN: an alias may have found that state.
    let urn = Urn::new("dev", "proj", None, "pkg:index:Thing", "registered");
    plan(&PlanInput {
        kind,
        urn: &urn,
        old,
        options,
    })
}

fn update(changed: &[&str]) -> StepPlan {
    StepPlan::Update {
        changed: strings(changed),
    }
}

fn replace(changed: &[&str], replaces: &[&str], delete_first: bool) -> StepPlan {
    StepPlan::Replace {
        changed: strings(changed),
        replaces: strings(replaces),
        delete_first,
    }
}

#[test]
fn a_new_resource_is_created() {
    for kind in [Kind::Custom, Kind::Provider, Kind::Component] {
        assert_eq!(
            decide(kind, None, targeted()),
            Ok(StepPlan::Create),
            "{kind:?}"
        );
    }
}

#[test]
fn no_difference_is_same() {
    let old = custom();
    let none = DiffResult::default();
    for kind in [Kind::Custom, Kind::Provider, Kind::Component] {
        assert_eq!(
            decide(kind, Some((&old, &none)), targeted()),
            Ok(StepPlan::Same)
        );
    }
}

#[test]
fn a_change_the_provider_can_make_in_place_is_an_update() {
    let old = custom();
    let d = diff(&["size"], &[], false);
    assert_eq!(
        decide(Kind::Custom, Some((&old, &d)), targeted()),
        Ok(update(&["size"]))
    );
}

#[test]
fn a_change_the_provider_says_replaces_is_a_replacement_created_first() {
    let old = custom();
    let d = diff(&["size", "name"], &["name"], false);
    assert_eq!(
        decide(Kind::Custom, Some((&old, &d)), targeted()),
        Ok(replace(&["size", "name"], &["name"], false))
    );
}

#[test]
fn delete_before_replace_from_the_provider_or_the_option_deletes_first() {
    let old = custom();
    let provider_says = diff(&["name"], &["name"], true);
    assert_eq!(
        decide(Kind::Custom, Some((&old, &provider_says)), targeted()),
        Ok(replace(&["name"], &["name"], true))
    );
    let d = diff(&["name"], &["name"], false);
    let option = PlanOptions {
        delete_before_replace: true,
        ..targeted()
    };
    assert_eq!(
        decide(Kind::Custom, Some((&old, &d)), option),
        Ok(replace(&["name"], &["name"], true))
    );
    // The option alone replaces nothing: it says how, not whether.
    let d = diff(&["size"], &[], false);
    assert_eq!(
        decide(Kind::Custom, Some((&old, &d)), option),
        Ok(update(&["size"]))
    );
}

#[test]
fn replace_on_changes_turns_an_update_of_a_named_property_into_a_replacement() {
    let old = custom();
    let keys = strings(&["size"]);
    let options = PlanOptions {
        replace_on_changes: &keys,
        ..targeted()
    };
    let d = diff(&["size", "tag"], &[], false);
    assert_eq!(
        decide(Kind::Custom, Some((&old, &d)), options),
        Ok(replace(&["size", "tag"], &["size"], false))
    );
    // Named once, though the provider names it too.
    let d = diff(&["size"], &["size"], false);
    assert_eq!(
        decide(Kind::Custom, Some((&old, &d)), options),
        Ok(replace(&["size"], &["size"], false))
    );
    // A property that did not change replaces nothing.
    let d = diff(&["tag"], &[], false);
    assert_eq!(
        decide(Kind::Custom, Some((&old, &d)), options),
        Ok(update(&["tag"]))
    );
}

#[test]
fn replace_and_a_changed_provider_replace_what_did_not_change() {
    let old = custom();
    let none = DiffResult::default();
    let asked = PlanOptions {
        replace: true,
        ..targeted()
    };
    let moved = PlanOptions {
        provider_changed: true,
        ..targeted()
    };
    for options in [asked, moved] {
        assert_eq!(
            decide(Kind::Custom, Some((&old, &none)), options),
            Ok(replace(&[], &[], false))
        );
        let d = diff(&["size"], &[], false);
        assert_eq!(
            decide(Kind::Custom, Some((&old, &d)), options),
            Ok(replace(&["size"], &[], false))
        );
    }
}

#[test]
fn protect_refuses_a_replacement_and_says_why() {
    let mut old = custom();
    old.protect = true;
    let d = diff(&["name"], &["name"], false);
    let error = decide(Kind::Custom, Some((&old, &d)), targeted()).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "cannot replace protected resource (changes to name require it); remove `protect` \
             first (`plinth state unprotect {}`)",
            Urn::new("dev", "proj", None, "pkg:index:Thing", "registered")
        )
    );
    let none = DiffResult::default();
    let asked = PlanOptions {
        replace: true,
        ..targeted()
    };
    let error = decide(Kind::Custom, Some((&old, &none)), asked).unwrap_err();
    assert!(
        error.to_string().contains("(--replace asks for it)"),
        "{error}"
    );
    // An update or nothing at all is no business of `protect`.
    let d = diff(&["size"], &[], false);
    assert_eq!(
        decide(Kind::Custom, Some((&old, &d)), targeted()),
        Ok(update(&["size"]))
    );
    assert_eq!(
        decide(Kind::Custom, Some((&old, &none)), targeted()),
        Ok(StepPlan::Same)
    );
}

#[test]
fn import_adopts_a_new_resource_by_id() {
    let options = PlanOptions {
        import_id: Some("vpc-123"),
        ..targeted()
    };
    assert_eq!(
        decide(Kind::Custom, None, options),
        Ok(StepPlan::Import {
            id: "vpc-123".into()
        })
    );
    // Only a custom resource has an id to import.
    for kind in [Kind::Provider, Kind::Component] {
        assert_eq!(decide(kind, None, options), Ok(StepPlan::Create));
    }
}

#[test]
fn import_of_a_resource_already_in_the_state_follows_its_diff_whatever_the_id() {
    // Once imported, the state holds the resource: a matching id and a mismatching one alike
    // leave the decision to the diff, as for any resource in the state.
    let old = custom();
    for id in ["id-1", "another-id"] {
        let options = PlanOptions {
            import_id: Some(id),
            ..targeted()
        };
        let none = DiffResult::default();
        assert_eq!(
            decide(Kind::Custom, Some((&old, &none)), options),
            Ok(StepPlan::Same),
            "{id}"
        );
        let d = diff(&["size"], &[], false);
        assert_eq!(
            decide(Kind::Custom, Some((&old, &d)), options),
            Ok(update(&["size"])),
            "{id}"
        );
    }
}

#[test]
fn import_is_refused_when_what_exists_differs_from_the_program() {
    let existing = props(&[("size", "1"), ("tag", "a")]);
    let program = props(&[("size", "2"), ("tag", "a")]);
    assert_eq!(
        import_mismatch("vpc-1", &DiffResult::default(), &existing, &existing),
        None
    );
    let error = import_mismatch("vpc-1", &diff(&["size"], &[], false), &existing, &program);
    assert_eq!(
        error.map(|e| e.to_string()).as_deref(),
        Some(
            "cannot import `vpc-1`: the program's inputs differ from the existing resource \
             (size: existing \"1\" vs program \"2\"); make the program match, then run again"
        )
    );
    let missing = import_mismatch("vpc-1", &diff(&["x"], &[], false), &existing, &program);
    assert!(
        missing
            .unwrap()
            .to_string()
            .contains("x: existing (none) vs program (none)")
    );
}

#[test]
fn what_target_leaves_out_is_kept_or_not_created_whatever_else_holds() {
    let mut old = custom();
    old.protect = true;
    let d = diff(&["name"], &["name"], true);
    let keys = strings(&["name"]);
    let options = PlanOptions {
        targeted: false,
        replace: true,
        provider_changed: true,
        import_id: Some("x"),
        replace_on_changes: &keys,
        delete_before_replace: true,
    };
    for kind in [Kind::Custom, Kind::Provider, Kind::Component] {
        assert_eq!(decide(kind, Some((&old, &d)), options), Ok(StepPlan::Kept));
        assert_eq!(decide(kind, None, options), Ok(StepPlan::NotCreated));
    }
    // Targeted, the same registration is replaced (or refused, protected).
    old.protect = false;
    let targeted = PlanOptions {
        targeted: true,
        ..options
    };
    assert_eq!(
        decide(Kind::Custom, Some((&old, &d)), targeted),
        Ok(replace(&["name"], &["name"], true))
    );
}

#[test]
fn a_provider_resource_changes_with_its_configuration_only() {
    let old = provider_resource();
    let keys = strings(&["region"]);
    // `--replace`, a changed provider and the replacing options are not a provider resource's.
    let options = PlanOptions {
        replace: true,
        provider_changed: true,
        replace_on_changes: &keys,
        delete_before_replace: true,
        ..targeted()
    };
    let none = DiffResult::default();
    assert_eq!(
        decide(Kind::Provider, Some((&old, &none)), options),
        Ok(StepPlan::Same)
    );
    let d = diff(&["region"], &[], false);
    assert_eq!(
        decide(Kind::Provider, Some((&old, &d)), options),
        Ok(update(&["region"]))
    );
    let d = diff(&["region"], &["region"], true);
    assert_eq!(
        decide(Kind::Provider, Some((&old, &d)), options),
        Ok(replace(&["region"], &["region"], false))
    );
    let mut protected = old.clone();
    protected.protect = true;
    assert_eq!(
        decide(Kind::Provider, Some((&protected, &d)), options),
        Err(PlanError::ProtectedProvider)
    );
}

#[test]
fn a_component_is_same_or_created_whatever_its_options() {
    let old = component();
    let d = diff(&["size"], &["size"], true);
    let options = PlanOptions {
        replace: true,
        provider_changed: true,
        delete_before_replace: true,
        ..targeted()
    };
    assert_eq!(
        decide(Kind::Component, Some((&old, &d)), options),
        Ok(StepPlan::Same)
    );
    assert_eq!(decide(Kind::Component, None, options), Ok(StepPlan::Create));
}

#[test]
fn the_kind_of_a_registration() {
    assert_eq!(Kind::of(&custom()), Kind::Custom);
    assert_eq!(Kind::of(&provider_resource()), Kind::Provider);
    assert_eq!(Kind::of(&component()), Kind::Component);
}

#[test]
fn the_display_shows_each_plan_as_its_step() {
    assert_eq!(StepPlan::Kept.op(), Some(StepOp::Same));
    assert_eq!(StepPlan::NotCreated.op(), None);
    assert_eq!(StepPlan::Same.op(), Some(StepOp::Same));
    assert_eq!(StepPlan::Create.op(), Some(StepOp::Create));
    let import = StepPlan::Import { id: "i".into() };
    assert_eq!(import.op(), Some(StepOp::Import));
    assert_eq!(update(&["a"]).op(), Some(StepOp::Update));
    assert_eq!(update(&["a"]).changes(), (&strings(&["a"])[..], &[][..]));
    let r = replace(&["a", "b"], &["b"], true);
    assert_eq!(r.op(), Some(StepOp::Replace));
    assert_eq!(
        r.changes(),
        (&strings(&["a", "b"])[..], &strings(&["b"])[..])
    );
}

#[test]
fn ignore_changes_keeps_the_recorded_value_of_an_ignored_property() {
    let old = props(&[("size", "1"), ("tag", "a")]);
    let mut inputs = props(&[("size", "2"), ("tag", "b")]);
    ignore_changes(&old, &mut inputs, &strings(&["tag"])).unwrap();
    assert_eq!(inputs, props(&[("size", "2"), ("tag", "a")]));
    // What the provider then diffs: the ignored change is gone, the other one stays.
    let d = config_diff(&old, &inputs, &[]);
    assert_eq!(d.changed, strings(&["size"]));
    let mut all = props(&[("size", "2"), ("tag", "b")]);
    ignore_changes(&old, &mut all, &strings(&["size", "tag"])).unwrap();
    let d = config_diff(&old, &all, &[]);
    let old_state = custom();
    assert_eq!(
        decide(Kind::Custom, Some((&old_state, &d)), targeted()),
        Ok(StepPlan::Same)
    );
    let error = ignore_changes(&old, &mut all, &strings(&["a..b"])).unwrap_err();
    assert!(error.to_string().starts_with("ignore_changes: "), "{error}");
}

#[test]
fn a_provider_configuration_change_replaces_only_through_its_schema() {
    let old = props(&[("region", "a"), ("retries", "1")]);
    let new = props(&[("region", "b"), ("retries", "2"), ("extra", "x")]);
    let schema = [PropertySchema {
        name: "region".into(),
        replace_on_change: true,
        ..PropertySchema::default()
    }];
    assert_eq!(
        config_diff(&old, &new, &schema),
        diff(&["extra", "region", "retries"], &["region"], false)
    );
    assert_eq!(config_diff(&old, &old, &schema), DiffResult::default());
}

fn binding(urn: &Urn, config: PropertyMap, replaced: bool) -> ProviderBinding {
    ProviderBinding {
        reference: ProviderRef {
            urn: urn.clone(),
            id: "p2".into(),
        },
        config,
        replaced,
    }
}

#[test]
fn a_changed_or_unknown_provider_forces_a_replacement() {
    let a = Urn::new("dev", "proj", None, "plinth:providers:pkg", "a");
    let b = Urn::new("dev", "proj", None, "plinth:providers:pkg", "b");
    let recorded = ProviderRef {
        urn: a.clone(),
        id: "p1".into(),
    };
    let config = props(&[("region", "x")]);
    let known = |_: &ProviderRef| Some(&config);
    // No binding (a component, a provider resource): nothing to change.
    assert!(!provider_changed(Some(&recorded), None, known));
    // Its provider resource was replaced in this run.
    let same_urn = binding(&a, config.clone(), true);
    assert!(provider_changed(Some(&recorded), Some(&same_urn), known));
    // The same provider resource, reconfigured in place: an update of it, not a replacement.
    let updated = binding(&a, props(&[("region", "y")]), false);
    assert!(!provider_changed(Some(&recorded), Some(&updated), known));
    // Moved to another provider resource configured alike, or differently.
    let alike = binding(&b, config.clone(), false);
    assert!(!provider_changed(Some(&recorded), Some(&alike), known));
    let other = binding(&b, props(&[("region", "y")]), false);
    assert!(provider_changed(Some(&recorded), Some(&other), known));
    // Recorded with a provider resource the state does not hold: unknown, so replaced.
    assert!(provider_changed(Some(&recorded), Some(&alike), |_| None));
    // Recorded before provider resources were: nothing to compare with.
    assert!(!provider_changed(None, Some(&other), known));
}

#[test]
fn deletes_honor_protect_retain_on_delete_and_preview() {
    let plain = custom();
    assert_eq!(plan_delete(&plain, false), DeletePlan::Delete);
    assert_eq!(plan_delete(&plain, true), DeletePlan::Nothing);
    let mut retained = custom();
    retained.retain_on_delete = true;
    assert_eq!(plan_delete(&retained, false), DeletePlan::Forget);
    assert_eq!(plan_delete(&retained, true), DeletePlan::Nothing);
    let mut protected = custom();
    protected.protect = true;
    protected.retain_on_delete = true;
    // Refused even in a preview, so that the preview shows the failure to come.
    assert_eq!(plan_delete(&protected, false), DeletePlan::Refused);
    assert_eq!(plan_delete(&protected, true), DeletePlan::Refused);
    assert_eq!(plan_delete(&provider_resource(), false), DeletePlan::Forget);
    // A component holds nothing real, whatever its options.
    let mut group = component();
    group.protect = true;
    assert_eq!(plan_delete(&group, false), DeletePlan::Forget);
    assert_eq!(plan_delete(&group, true), DeletePlan::Nothing);
}

#[test]
fn retain_on_delete_does_not_change_a_replacement() {
    // It changes what the delete of the old copy does (see `plan_delete`), not the decision.
    let mut old = custom();
    let d = diff(&["name"], &["name"], true);
    let before = decide(Kind::Custom, Some((&old, &d)), targeted());
    old.retain_on_delete = true;
    assert_eq!(decide(Kind::Custom, Some((&old, &d)), targeted()), before);
}

fn any_kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        Just(Kind::Custom),
        Just(Kind::Provider),
        Just(Kind::Component)
    ]
}

fn any_keys() -> impl Strategy<Value = Vec<String>> {
    proptest::collection::vec(proptest::sample::select(vec!["a", "b", "c"]), 0..3)
        .prop_map(|keys| keys.into_iter().map(str::to_owned).collect())
}

/// A diff as a provider returns it: `replaces` among `changed`.
fn any_diff() -> impl Strategy<Value = DiffResult> {
    (any_keys(), any::<u8>(), any::<bool>()).prop_map(|(mut changed, mask, dbr)| {
        changed.sort();
        changed.dedup();
        let replaces = (changed.iter().enumerate())
            .filter(|(i, _)| mask & (1 << i) != 0)
            .map(|(_, k)| k.clone())
            .collect();
        DiffResult {
            changed,
            replaces,
            delete_before_replace: dbr,
        }
    })
}

proptest! {
    #[test]
    fn the_plan_is_deterministic_and_same_exactly_when_nothing_differs(
        kind in any_kind(),
        has_old in any::<bool>(),
        protect in any::<bool>(),
        diff in any_diff(),
        flags in any::<[bool; 4]>(),
        replace_on_changes in any_keys(),
        import in any::<bool>(),
    ) {
        let [targeted, replace, provider_changed, delete_before_replace] = flags;
        let mut old = match kind {
            Kind::Custom => custom(),
            Kind::Provider => provider_resource(),
            Kind::Component => component(),
        };
        old.protect = protect;
        let options = PlanOptions {
            targeted,
            replace,
            provider_changed,
            import_id: import.then_some("imported"),
            replace_on_changes: &replace_on_changes,
            delete_before_replace,
        };
        let old = has_old.then_some((&old, &diff));
        let first = decide(kind, old, options);
        prop_assert_eq!(&first, &decide(kind, old, options));
        let forced = kind == Kind::Custom && (replace || provider_changed);
        let nothing_differs = match kind {
            Kind::Component => true,
            _ => diff.changed.is_empty() && !forced,
        };
        prop_assert_eq!(
            first == Ok(StepPlan::Same),
            targeted && has_old && nothing_differs
        );
        match first {
            Ok(StepPlan::Replace { changed, replaces, delete_first }) => {
                prop_assert!(!protect);
                prop_assert_eq!(changed, diff.changed.clone());
                prop_assert!(diff.replaces.iter().all(|k| replaces.contains(k)));
                prop_assert!(replaces.iter().all(|k| diff.changed.contains(k)));
                let asked = kind == Kind::Custom && delete_before_replace;
                prop_assert_eq!(delete_first, diff.delete_before_replace && kind == Kind::Custom || asked);
            }
            Ok(StepPlan::Update { changed }) => {
                prop_assert!(!changed.is_empty());
                prop_assert_eq!(changed, diff.changed.clone());
            }
            Err(_) => prop_assert!(protect && targeted && has_old),
            _ => {}
        }
    }
}

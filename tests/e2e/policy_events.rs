//! Policy results are events: each violation is one `policy-violation` and each phase's packs
//! one `policy-summary`, in `--json` (valid against docs/events.schema.json) and in the
//! update's events that `plinth logs` shows, on the file backend and on the service. A
//! mandatory violation is shown once: the failure it causes only names its policy. An imported
//! resource is judged as a created one is.

use serde_json::Value;

use crate::json_events::json_lines;
use crate::support::service::TestService;
use crate::support::{Env, ServiceLogin, guest};

/// A scenario project with the random plugin on `service` if given, the test pack named in its
/// Plinth.yaml.
fn project(service: Option<ServiceLogin>) -> Env {
    Env::project_on(
        &format!(
            "name: scenario\nprogram: {}\nplugins:\n  testkit:\n    path: {}\n  random:\n    \
             path: {}\npolicy-packs:\n  - {}\n",
            guest("plinth-scenario").display(),
            guest("plinth-testkit").display(),
            guest("plinth-random").display(),
            guest("plinth-policy-testpack").display(),
        ),
        service,
    )
}

const TOO_SHORT: &str = "the password is 8 characters long; make it at least 16";

fn of_type<'a>(events: &'a [Value], ty: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == ty).collect()
}

/// The violations and the summary of a failing preview and an advisory `up`, as events and in
/// `plinth logs`.
fn violations_are_events(env: &Env) {
    env.config("resources", "a");
    env.config("value_a", "v");
    env.config("password_length", "8");

    let out = env.run(&["preview", "--json"]);
    assert!(!out.status.success());
    let events = json_lines(&out);
    let mandatory: Vec<_> = of_type(&events, "policy-violation")
        .into_iter()
        .filter(|e| e["level"] == "mandatory")
        .collect();
    assert_eq!(mandatory.len(), 1, "{events:#?}");
    let violation = mandatory[0];
    assert_eq!(violation["pack"], "testpack");
    assert_eq!(violation["policy"], "password-length");
    assert_eq!(violation["property"], "length");
    assert_eq!(violation["message"], TOO_SHORT);
    assert!(
        (violation["urn"].as_str().unwrap()).ends_with("::random:RandomPassword::password"),
        "{violation}"
    );
    let summary = of_type(&events, "policy-summary");
    assert_eq!(summary.len(), 1, "{events:#?}");
    let pack = &summary[0]["packs"][0];
    assert_eq!(
        (pack["name"].as_str(), pack["mandatory"].as_u64()),
        (Some("testpack"), Some(1))
    );
    let digest = pack["digest"].as_str().unwrap();
    assert_eq!(digest.len(), 64, "{pack}");
    // The failure names the policy; the violation's text is in its own event only.
    let errors: Vec<&str> = (of_type(&events, "step-failed").into_iter())
        .chain(of_type(&events, "error"))
        .filter_map(|e| e["error"].as_str().or(e["message"].as_str()))
        .collect();
    assert!(
        errors
            .iter()
            .any(|e| e.contains("violates 1 mandatory policy (`testpack/password-length`)"))
            && !errors.iter().any(|e| e.contains(TOO_SHORT)),
        "{errors:?}"
    );

    // Shown once by the human display too.
    let out = env.run(&["preview"]);
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(printed.matches(TOO_SHORT).count(), 1, "{printed}");

    // An advisory violation, kept with the update's events.
    env.config("password_length", "16");
    env.ok(&["up", "--yes", "--skip-preview"]);
    let logs = env.ok(&["logs"]);
    assert!(
        logs.contains(
            "policy violation: urn:plinth:dev::scenario::testkit:Echo::a: [advisory] policy \
             `testpack/value-length`: `v` is a short value (property `value`)"
        ),
        "{logs}"
    );
    assert!(
        logs.contains(&format!(
            "policy packs ran: testpack 0.1.0 (sha256 {digest}): 0 mandatory, 2 advisory"
        )),
        "{logs}"
    );
}

#[test]
fn violations_are_events_on_the_file_backend() {
    violations_are_events(&project(None));
}

#[test]
fn violations_are_events_on_the_service() {
    let service = TestService::start();
    violations_are_events(&project(Some(ServiceLogin {
        url: service.url().to_owned(),
        token: service.token.clone(),
    })));
}

#[test]
fn an_imported_resource_is_judged() {
    let env = project(None);
    env.config("resources", "a");
    env.config("value_a", "v");
    env.config("import_a", "existing-a");
    let out = env.ok(&["up", "--yes", "--skip-preview"]);
    assert!(
        out.contains(
            "policy a: [advisory] policy `testpack/value-length`: `v` is a short value \
             (property `value`)"
        ),
        "{out}"
    );
}

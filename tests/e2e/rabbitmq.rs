//! The rabbitmq provider (TypeScript, over the management HTTP API) against real brokers started
//! by the tests: every effect is checked in what the broker exports (its definitions, through its
//! management API) or does (a password logging in over AMQP), never by trusting what the
//! provider reports. Each test has a broker of its own, so that comparing the
//! whole broker before and after is exact.

use plinth_test_rabbitmq::{RabbitMq, USERNAME, eventually};
use serde_json::{Value as Json, json};

use crate::count_line;
use crate::support::{Env, guest, repo_root};

pub(crate) fn broker() -> RabbitMq {
    RabbitMq::start()
        .expect("a RabbitMQ broker for the tests (scripts/setup installs rabbitmq-server)")
}

/// A project with the JSON-driven test program and the rabbitmq provider (built from its
/// TypeScript source), granted the broker's management API with one `http:` line and
/// configured as its administrator. `uri` (secret) is an AMQP URI of the broker's vhost `vhost`.
pub(crate) fn project(broker: &RabbitMq, vhost: &str) -> Env {
    let env = Env::project(&format!(
        "name: scenario\nprogram: {}\nplugins:\n  rabbitmq:\n    path: {}\n    grants:\n      http: [\"{}\"]\n",
        guest("plinth-pg-program").display(),
        repo_root().join("plugins/rabbitmq").display(),
        broker.management_authority(),
    ));
    env.config("rabbitmq:endpoint", &broker.endpoint());
    env.config("rabbitmq:username", USERNAME);
    env.ok(&[
        "config",
        "set",
        "rabbitmq:password",
        broker.password(),
        "--secret",
    ]);
    let uri = format!(
        "amqp://{USERNAME}:{}@127.0.0.1:{}/{vhost}",
        broker.password(),
        broker.amqp_port()
    );
    env.ok(&["config", "set", "uri", &uri, "--secret"]);
    env
}

pub(crate) fn declare(env: &Env, resources: &Json) {
    env.config("resources", &resources.to_string());
}

fn vhost_ref() -> Json {
    json!({"$output": ["vhost", "name"]})
}

/// One resource of every type, in the vhost `e2e`; `v` picks a variant of the values that
/// change in place (1, 2) and `r` one of those that replace (1, 2).
fn every_type(v: u8, r: u8) -> Json {
    let vh = vhost_ref();
    let pick = |a: Json, b: Json, which: u8| if which == 1 { a } else { b };
    json!([
        {"type": "rabbitmq:VHost", "name": "vhost", "inputs": {
            "name": "e2e", "description": pick(json!("orders"), json!("orders, v2"), v),
            "tags": ["prod"], "max_queues": pick(json!(50), json!(60), v)}},
        {"type": "rabbitmq:User", "name": "user", "inputs": {
            "name": "app", "password": {"$secret": pick(json!("app_password"), json!("app_password2"), v)},
            "tags": pick(json!(["monitoring"]), json!(["monitoring", "management"]), v)}},
        {"type": "rabbitmq:Permissions", "name": "perms", "inputs": {
            "user": {"$output": ["user", "name"]}, "vhost": vh,
            "configure": pick(json!("^app\\."), json!(".*"), v), "write": ".*", "read": ".*"}},
        {"type": "rabbitmq:Exchange", "name": "events", "inputs": {
            "name": "events", "vhost": vh, "type": "topic"}},
        {"type": "rabbitmq:Exchange", "name": "spare", "inputs": {
            "name": "spare", "vhost": vh, "type": pick(json!("fanout"), json!("direct"), r)}},
        {"type": "rabbitmq:TopicPermissions", "name": "topic", "inputs": {
            "user": {"$output": ["user", "name"]}, "vhost": vh,
            "permissions": pick(
                json!([{"exchange": "events", "write": "^orders\\.", "read": ".*"}]),
                json!([{"exchange": "events", "write": ".*", "read": ".*"},
                       {"exchange": "spare", "write": "^x", "read": "^x"}]), v)}},
        {"type": "rabbitmq:Queue", "name": "orders", "inputs": {
            "name": "orders", "vhost": vh, "type": "quorum", "arguments": {"x-delivery-limit": 5}}},
        {"type": "rabbitmq:Queue", "name": "audit", "inputs": {
            "name": "audit", "vhost": vh,
            "arguments": {"x-message-ttl": pick(json!(60000), json!(120000), r)}}},
        {"type": "rabbitmq:Binding", "name": "bind", "inputs": {
            "vhost": vh, "source": {"$output": ["events", "name"]},
            "destination": {"$output": ["orders", "name"]}, "destination_type": "queue",
            "routing_key": pick(json!("orders.#"), json!("orders.*"), r)}},
        {"type": "rabbitmq:Policy", "name": "policy", "inputs": {
            "name": "ttl", "vhost": vh, "pattern": "^audit$", "apply_to": "queues", "priority": 1,
            "definition": {"message-ttl": pick(json!(30000), json!(45000), v)}}},
        {"type": "rabbitmq:OperatorPolicy", "name": "cap", "inputs": {
            "name": "cap", "vhost": vh, "pattern": ".*",
            "definition": {"max-length": pick(json!(100000), json!(5000), v)}}},
        {"type": "rabbitmq:Shovel", "name": "shovel", "inputs": {
            "name": "audit-copy", "vhost": vh, "source_uri": {"$secret": "uri"},
            // By output: a shovel declares a source queue it does not find, so it must start
            // after the queue is created (with its arguments), never beside it.
            "source_queue": {"$output": ["audit", "name"]}, "destination_uri": {"$secret": "uri"},
            "destination_exchange": {"$output": ["events", "name"]},
            "destination_exchange_key": "orders.audit",
            "reconnect_delay": pick(json!(1), json!(5), v)}},
        {"type": "rabbitmq:FederationUpstream", "name": "upstream", "inputs": {
            "name": "origin", "vhost": vh, "uri": {"$secret": "uri"}, "exchange": "events",
            "max_hops": pick(json!(1), json!(2), v)}},
    ])
}

/// The entries of a definitions list in `vhost` (or of no vhost, for users and vhosts).
fn entries<'a>(definitions: &'a Json, list: &str) -> Vec<&'a Json> {
    definitions[list].as_array().unwrap().iter().collect()
}

/// The one entry of `list` whose `key` is `value`.
fn entry<'a>(definitions: &'a Json, list: &str, key: &str, value: &str) -> &'a Json {
    let found: Vec<_> = entries(definitions, list)
        .into_iter()
        .filter(|e| e[key] == value)
        .collect();
    assert_eq!(
        found.len(),
        1,
        "one {list} entry with {key} {value} in {definitions:#}"
    );
    found[0]
}

fn without_password_hashes(mut definitions: Json) -> Json {
    for user in definitions["users"].as_array_mut().unwrap() {
        user.as_object_mut().unwrap().remove("password_hash");
    }
    definitions
}

fn parameter<'a>(definitions: &'a Json, component: &str, name: &str) -> &'a Json {
    let found = entries(definitions, "parameters")
        .into_iter()
        .find(|p| p["component"] == component && p["name"] == name);
    &found.unwrap_or_else(|| panic!("no {component} {name} in {definitions:#}"))["value"]
}

#[test]
fn every_type_is_created_updated_replaced_and_destroyed() {
    let broker = broker();
    let before = broker.definitions().unwrap();
    let env = project(&broker, "e2e");
    env.ok(&["config", "set", "app_password", "first-pw", "--secret"]);
    env.ok(&["config", "set", "app_password2", "second-pw", "--secret"]);

    // Create.
    declare(&env, &every_type(1, 1));
    let out = env.ok(&["up", "--yes"]);
    assert!(count_line(&out).contains("13 created"), "{out}");
    let d = broker.definitions().unwrap();
    let vhost = entry(&d, "vhosts", "name", "e2e");
    assert_eq!(vhost["metadata"]["description"], "orders", "{vhost}");
    assert_eq!(vhost["metadata"]["tags"], json!(["prod"]), "{vhost}");
    assert_eq!(
        parameter(&d, "vhost-limits", "limits"),
        &json!({"max-queues": 50})
    );
    assert_eq!(
        entry(&d, "users", "name", "app")["tags"],
        json!(["monitoring"])
    );
    assert!(
        broker.logs_in("app", "first-pw").unwrap(),
        "app does not log in"
    );
    let perms = entry(&d, "permissions", "user", "app");
    assert_eq!(
        (perms["vhost"].as_str(), perms["configure"].as_str()),
        (Some("e2e"), Some("^app\\."))
    );
    let topic = entry(&d, "topic_permissions", "user", "app");
    assert_eq!(
        (topic["exchange"].as_str(), topic["write"].as_str()),
        (Some("events"), Some("^orders\\."))
    );
    assert_eq!(entry(&d, "exchanges", "name", "events")["type"], "topic");
    let orders = entry(&d, "queues", "name", "orders");
    assert_eq!(orders["arguments"]["x-queue-type"], "quorum", "{orders}");
    assert_eq!(orders["arguments"]["x-delivery-limit"], 5, "{orders}");
    assert_eq!(
        entry(&d, "queues", "name", "audit")["arguments"]["x-message-ttl"],
        60000
    );
    let binding = entry(&d, "bindings", "source", "events");
    assert_eq!(
        (
            binding["destination"].as_str(),
            binding["routing_key"].as_str()
        ),
        (Some("orders"), Some("orders.#"))
    );
    assert_eq!(
        entry(&d, "policies", "name", "ttl")["definition"],
        json!({"message-ttl": 30000})
    );
    assert_eq!(parameter(&d, "operator_policy", "cap")["pattern"], ".*");
    let shovel = parameter(&d, "shovel", "audit-copy");
    assert_eq!(shovel["src-queue"], "audit", "{shovel}");
    assert_eq!(shovel["dest-exchange-key"], "orders.audit", "{shovel}");
    assert_eq!(
        parameter(&d, "federation-upstream", "origin")["exchange"],
        "events"
    );
    // Ids in the forms cyrilgdn/rabbitmq imports.
    let created = env.resources();
    for expected in [
        ("vhost", "e2e"),
        ("user", "app"),
        ("perms", "app@e2e"),
        ("orders", "orders@e2e"),
        ("shovel", "audit-copy@e2e"),
    ] {
        assert!(
            created.contains(&(expected.0.to_owned(), expected.1.to_owned())),
            "{created:?}"
        );
    }
    assert!(
        created.contains(&(
            "bind".to_owned(),
            "e2e/events/orders/queue/orders.%2523".to_owned()
        )),
        "{created:?}"
    );
    // The secrets (the user's password, the AMQP URIs and the provider's password) are sealed.
    let state = env.export().to_string();
    assert!(
        !state.contains("first-pw") && !state.contains(broker.password()),
        "a secret in state"
    );
    // Nothing to do again, and what the broker holds is what was recorded.
    env.ok(&["preview", "--expect-no-changes"]);
    env.ok(&["refresh", "--expect-no-changes"]);

    // Update in place: every updatable type changes, none is replaced, ids are kept.
    declare(&env, &every_type(2, 1));
    let out = env.ok(&["up", "--yes"]);
    assert!(count_line(&out).contains("8 updated"), "{out}");
    assert!(!count_line(&out).contains("replaced"), "{out}");
    assert_eq!(env.resources(), created);
    let d = broker.definitions().unwrap();
    assert_eq!(
        entry(&d, "vhosts", "name", "e2e")["metadata"]["description"],
        "orders, v2"
    );
    assert_eq!(
        parameter(&d, "vhost-limits", "limits"),
        &json!({"max-queues": 60})
    );
    assert_eq!(
        entry(&d, "users", "name", "app")["tags"],
        json!(["monitoring", "management"])
    );
    assert!(
        broker.logs_in("app", "second-pw").unwrap(),
        "app does not log in"
    );
    assert!(
        !broker.logs_in("app", "first-pw").unwrap(),
        "the old password still works"
    );
    assert_eq!(entry(&d, "permissions", "user", "app")["configure"], ".*");
    assert_eq!(entries(&d, "topic_permissions").len(), 2, "{d:#}");
    assert_eq!(
        entry(&d, "policies", "name", "ttl")["definition"],
        json!({"message-ttl": 45000})
    );
    assert_eq!(
        parameter(&d, "operator_policy", "cap")["definition"],
        json!({"max-length": 5000})
    );
    assert_eq!(parameter(&d, "shovel", "audit-copy")["reconnect-delay"], 5);
    assert_eq!(
        parameter(&d, "federation-upstream", "origin")["max-hops"],
        2
    );
    env.ok(&["refresh", "--expect-no-changes"]);

    // Replace: what the broker cannot change in place. The queue and the exchange keep their
    // names, so the old ones go first; the binding is a new one.
    declare(&env, &every_type(2, 2));
    let out = env.ok(&["up", "--yes"]);
    assert!(count_line(&out).contains("3 replaced"), "{out}");
    let d = broker.definitions().unwrap();
    assert_eq!(
        entry(&d, "queues", "name", "audit")["arguments"]["x-message-ttl"],
        120000
    );
    assert_eq!(entry(&d, "exchanges", "name", "spare")["type"], "direct");
    assert_eq!(
        entry(&d, "bindings", "source", "events")["routing_key"],
        "orders.*"
    );
    let binding = |ids: &[(String, String)]| ids.iter().find(|(name, _)| name == "bind").cloned();
    let replaced = binding(&env.resources()).unwrap().1;
    assert!(
        replaced.starts_with("e2e/events/orders/queue/orders."),
        "{replaced}"
    );
    assert_ne!(Some(replaced), binding(&created).map(|(_, id)| id));
    env.ok(&["refresh", "--expect-no-changes"]);

    // Destroy leaves the broker as it was.
    env.ok(&["destroy", "--yes"]);
    assert_eq!(broker.definitions().unwrap(), before);
}

#[test]
fn drift_made_with_rabbitmqctl_is_found_by_refresh_and_undone_by_up() {
    let broker = broker();
    let env = project(&broker, "e2e");
    env.ok(&["config", "set", "app_password", "first-pw", "--secret"]);
    declare(&env, &every_type(1, 1));
    env.ok(&["up", "--yes"]);
    let declared = broker.definitions().unwrap();

    let ctl = |args: &[&str]| broker.ctl(args).unwrap();
    ctl(&["set_permissions", "-p", "e2e", "app", "^x", "^x", "^x"]);
    ctl(&["set_user_tags", "app", "administrator"]);
    ctl(&[
        "set_topic_permissions",
        "-p",
        "e2e",
        "app",
        "events",
        "^z",
        "^z",
    ]);
    ctl(&[
        "set_policy",
        "-p",
        "e2e",
        "--apply-to",
        "queues",
        "--priority",
        "1",
        "ttl",
        "^audit$",
        "{\"message-ttl\":1}",
    ]);
    ctl(&[
        "set_operator_policy",
        "-p",
        "e2e",
        "--apply-to",
        "queues",
        "cap",
        ".*",
        "{\"max-length\":7}",
    ]);
    ctl(&["set_vhost_limits", "-p", "e2e", "{\"max-queues\": 7}"]);
    ctl(&[
        "set_parameter",
        "-p",
        "e2e",
        "federation-upstream",
        "origin",
        "{\"uri\":\"amqp://\",\"max-hops\":3}",
    ]);
    ctl(&["clear_parameter", "-p", "e2e", "shovel", "audit-copy"]);
    // A shovel still running declares its source queue again when it is gone: the queue is
    // deleted once the broker reports the shovel stopped.
    eventually("the shovel audit-copy stops", || {
        Ok(!(broker.shovels()?.iter()).any(|s| s["name"] == "audit-copy"))
    })
    .unwrap();
    ctl(&["delete_queue", "-p", "e2e", "audit"]);

    let out = env.run(&["refresh", "--expect-no-changes"]);
    assert!(!out.status.success(), "drift went unnoticed");
    let out = env.ok(&["refresh", "--yes"]);
    for changed in [
        "configure",
        "tags",
        "definition",
        "max_queues",
        "max_hops",
        "permissions",
    ] {
        assert!(
            out.contains(changed),
            "{changed} not shown as drift:\n{out}"
        );
    }
    let state = env.export();
    let recorded = |name: &str| {
        (state["snapshot"]["resources"].as_array().unwrap().iter())
            .find(|r| r["urn"].as_str().unwrap().ends_with(&format!("::{name}")))
            .cloned()
    };
    assert_eq!(recorded("perms").unwrap()["inputs"]["configure"], "^x");
    assert_eq!(
        recorded("user").unwrap()["inputs"]["tags"],
        json!(["administrator"])
    );
    assert_eq!(recorded("vhost").unwrap()["inputs"]["max_queues"], 7);
    assert_eq!(
        recorded("cap").unwrap()["inputs"]["definition"],
        json!({"max-length": 7})
    );
    assert!(
        recorded("audit").is_none(),
        "the deleted queue stays in the state"
    );
    assert!(
        recorded("shovel").is_none(),
        "the deleted shovel stays in the state"
    );
    // The URI read back from the broker stays a secret.
    assert!(
        !state.to_string().contains("amqp://\""),
        "a URI read back is not sealed"
    );

    // `up` puts back what the program declares.
    let out = env.ok(&["up", "--yes"]);
    assert!(count_line(&out).contains("2 created"), "{out}");
    // The same, but for the user's password hash: restoring its tags sends the password again,
    // which the broker hashes with a new salt.
    assert_eq!(
        without_password_hashes(broker.definitions().unwrap()),
        without_password_hashes(declared)
    );
    assert!(
        broker.logs_in("app", "first-pw").unwrap(),
        "app does not log in"
    );
    env.ok(&["refresh", "--expect-no-changes"]);
    env.ok(&["destroy", "--yes"]);
}

#[test]
fn existing_objects_are_imported_by_id_and_bad_settings_are_named() {
    let broker = broker();
    let before = broker.definitions().unwrap();
    // Made by another client: rabbitmqctl, and a definitions file for what it cannot declare.
    let ctl = |args: &[&str]| broker.ctl(args).unwrap();
    ctl(&["add_vhost", "legacy"]);
    // The provider's user needs permissions on a vhost to delete what is in it.
    ctl(&[
        "set_permissions",
        "-p",
        "legacy",
        USERNAME,
        ".*",
        ".*",
        ".*",
    ]);
    ctl(&["add_user", "old", "old-pw"]);
    ctl(&["set_user_tags", "old", "monitoring"]);
    ctl(&["set_permissions", "-p", "legacy", "old", ".*", ".*", "^$"]);
    ctl(&[
        "set_topic_permissions",
        "-p",
        "legacy",
        "old",
        "amq.topic",
        "^a",
        "^b",
    ]);
    ctl(&[
        "set_policy",
        "-p",
        "legacy",
        "--apply-to",
        "queues",
        "lim",
        "^jobs$",
        "{\"max-length\":10}",
    ]);
    ctl(&[
        "set_operator_policy",
        "-p",
        "legacy",
        "--apply-to",
        "queues",
        "op",
        ".*",
        "{\"expires\":600000}",
    ]);
    ctl(&[
        "set_parameter",
        "-p",
        "legacy",
        "federation-upstream",
        "up",
        "{\"uri\":\"amqp://\"}",
    ]);
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        file.path(),
        json!({
            "exchanges": [{"name": "work", "vhost": "legacy", "type": "direct", "durable": true,
                           "auto_delete": false, "internal": false, "arguments": {}}],
            "queues": [{"name": "jobs", "vhost": "legacy", "durable": true, "auto_delete": false,
                        "arguments": {"x-queue-type": "classic", "x-max-priority": 10}},
                       // The shovel's destination, so that the shovel declares nothing.
                       {"name": "done", "vhost": "legacy", "durable": true, "auto_delete": false,
                        "arguments": {"x-queue-type": "classic"}}],
            "bindings": [{"source": "work", "vhost": "legacy", "destination": "jobs",
                          "destination_type": "queue", "routing_key": "run", "arguments": {}}],
        })
        .to_string(),
    )
    .unwrap();
    ctl(&["import_definitions", &file.path().display().to_string()]);
    // After the queues: a shovel declares its queues when they do not exist, without
    // arguments, and a definitions import leaves an existing queue as it is (`jobs`, declared
    // by the shovel first, lost its `x-max-priority`; the import then found no arguments).
    ctl(&[
        "set_parameter",
        "-p",
        "legacy",
        "shovel",
        "mover",
        "{\"src-uri\":\"amqp:///legacy\",\"src-queue\":\"jobs\",\"dest-uri\":\"amqp:///legacy\",\"dest-queue\":\"done\"}",
    ]);
    let made = broker.definitions().unwrap();

    let env = project(&broker, "legacy");
    env.ok(&["config", "set", "old_password", "old-pw", "--secret"]);
    let lg = json!({"$output": ["vhost", "name"]});
    let resources = |tags: Json| {
        json!([
            {"type": "rabbitmq:VHost", "name": "vhost", "import": "legacy", "inputs": {"name": "legacy"}},
            {"type": "rabbitmq:User", "name": "user", "import": "old",
             "inputs": {"name": "old", "password": {"$secret": "old_password"}, "tags": tags}},
            {"type": "rabbitmq:Permissions", "name": "perms", "import": "old@legacy",
             "inputs": {"user": "old", "vhost": lg, "configure": ".*", "write": ".*", "read": "^$"}},
            {"type": "rabbitmq:TopicPermissions", "name": "topic", "import": "old@legacy",
             "inputs": {"user": "old", "vhost": lg,
                        "permissions": [{"exchange": "amq.topic", "write": "^a", "read": "^b"}]}},
            {"type": "rabbitmq:Exchange", "name": "work", "import": "work@legacy",
             "inputs": {"name": "work", "vhost": lg, "type": "direct"}},
            {"type": "rabbitmq:Queue", "name": "jobs", "import": "jobs@legacy",
             "inputs": {"name": "jobs", "vhost": lg, "arguments": {"x-max-priority": 10}}},
            {"type": "rabbitmq:Binding", "name": "bind", "import": "legacy/work/jobs/queue/run",
             "inputs": {"vhost": lg, "source": "work", "destination": "jobs",
                        "destination_type": "queue", "routing_key": "run"}},
            {"type": "rabbitmq:Policy", "name": "lim", "import": "lim@legacy",
             "inputs": {"name": "lim", "vhost": lg, "pattern": "^jobs$", "apply_to": "queues",
                        "definition": {"max-length": 10}}},
            {"type": "rabbitmq:OperatorPolicy", "name": "op", "import": "op@legacy",
             "inputs": {"name": "op", "vhost": lg, "pattern": ".*", "definition": {"expires": 600000}}},
            {"type": "rabbitmq:FederationUpstream", "name": "up", "import": "up@legacy",
             "inputs": {"name": "up", "vhost": lg, "uri": "amqp://"}},
            {"type": "rabbitmq:Shovel", "name": "mover", "import": "mover@legacy",
             "inputs": {"name": "mover", "vhost": lg, "source_uri": "amqp:///legacy",
                        "source_queue": "jobs", "destination_uri": "amqp:///legacy",
                        "destination_queue": "done", "ack_mode": "on-confirm", "reconnect_delay": 1}},
        ])
    };

    // An import whose inputs differ from what exists is refused, naming the difference.
    declare(&env, &resources(json!(["administrator"])));
    let err = env.fails(&["up", "--yes"]);
    assert!(err.contains("tags"), "{err}");
    assert_eq!(
        broker.definitions().unwrap(),
        made,
        "a refused import changed the broker"
    );

    declare(&env, &resources(json!(["monitoring"])));
    let out = env.ok(&["up", "--yes"]);
    assert!(count_line(&out).contains("11 imported"), "{out}");
    assert_eq!(
        broker.definitions().unwrap(),
        made,
        "an import changed the broker"
    );
    env.ok(&["preview", "--expect-no-changes"]);
    env.ok(&["refresh", "--expect-no-changes"]);
    let exported = env.export();
    let resources = exported["snapshot"]["resources"].as_array().unwrap();
    let queue = resources.iter().find(|r| r["type"] == "rabbitmq:Queue");
    let queue = queue.unwrap();
    assert_eq!(
        queue["inputs"]["arguments"]["x-max-priority"], 10,
        "{queue}"
    );

    // A malformed id is refused, naming the form.
    let other = project(&broker, "legacy");
    declare(
        &other,
        &json!([{"type": "rabbitmq:Queue", "name": "q", "import": "jobs",
                 "inputs": {"name": "jobs", "vhost": "legacy"}}]),
    );
    let err = other.fails(&["up", "--yes"]);
    assert!(err.contains("NAME@VHOST"), "{err}");
    // Creating what exists is refused rather than taken over.
    declare(
        &other,
        &json!([{"type": "rabbitmq:Queue", "name": "q", "inputs": {"name": "jobs", "vhost": "legacy"}}]),
    );
    let err = other.fails(&["up", "--yes"]);
    assert!(
        err.contains("already exists") && err.contains("jobs@legacy"),
        "{err}"
    );
    // A wrong password is named as such.
    other.ok(&["config", "set", "rabbitmq:password", "wrong", "--secret"]);
    let err = other.fails(&["up", "--yes"]);
    assert!(
        err.contains("the broker refused the request as rabbitmq:username"),
        "{err}"
    );
    // Without the grant, the request is refused by the sandbox, which names the line to add.
    std::fs::write(
        other.project.join("Plinth.yaml"),
        format!(
            "name: scenario\nprogram: {}\nplugins:\n  rabbitmq:\n    path: {}\n",
            guest("plinth-pg-program").display(),
            repo_root().join("plugins/rabbitmq").display(),
        ),
    )
    .unwrap();
    other.ok(&[
        "config",
        "set",
        "rabbitmq:password",
        broker.password(),
        "--secret",
    ]);
    let err = other.fails(&["up", "--yes"]);
    assert!(
        err.contains(&format!("http: [\"{}\"]", broker.management_authority())),
        "{err}"
    );

    // Destroy leaves the broker as it was before any of it.
    env.ok(&["destroy", "--yes"]);
    assert_eq!(broker.definitions().unwrap(), before);
}

#[test]
fn the_python_example_runs_against_a_broker() {
    let broker = broker();
    let before = broker.definitions().unwrap();
    let dir = tempfile::tempdir().unwrap();
    // The example as a user has it, its grant pointed at this broker's port.
    let example = repo_root().join("examples/rabbitmq");
    for file in ["main.py", "pyproject.toml", "Plinth.yaml"] {
        let text = std::fs::read_to_string(example.join(file)).unwrap();
        let text = text
            .replace("../../", &format!("{}/", repo_root().display()))
            .replace("127.0.0.1:15672", &broker.management_authority());
        std::fs::write(dir.path().join(file), text).unwrap();
    }
    let env = Env::in_dir(dir.path().to_owned(), "dev");
    env.config("rabbitmq:endpoint", &broker.endpoint());
    env.config("rabbitmq:username", USERNAME);
    env.ok(&[
        "config",
        "set",
        "rabbitmq:password",
        broker.password(),
        "--secret",
    ]);
    env.ok(&["config", "set", "app_password", "example-pw", "--secret"]);

    let out = env.ok(&["up", "--yes"]);
    assert!(count_line(&out).contains("created"), "{out}");
    let d = broker.definitions().unwrap();
    entry(&d, "vhosts", "name", "shop");
    entry(&d, "queues", "name", "orders");
    assert!(
        broker.logs_in("shop-app", "example-pw").unwrap(),
        "shop-app does not log in"
    );
    let outputs: Json = serde_json::from_str(&env.ok(&["stack", "output", "--json"])).unwrap();
    assert_eq!(outputs["queue"], "orders", "{outputs}");
    env.ok(&["preview", "--expect-no-changes"]);
    env.ok(&["destroy", "--yes"]);
    assert_eq!(broker.definitions().unwrap(), before);
}

/// The vhost `typed` with a default queue type, and an AMQP 1.0 shovel between two queues of
/// the default vhost (RabbitMQ's AMQP 1.0 listener serves the default vhost); `app` picks the
/// application properties the shovel sets (1, 2).
fn typed_and_amqp10(queue_type: &str, app: u8) -> Json {
    let app = if app == 1 {
        json!({"origin": "plinth"})
    } else {
        json!({"origin": "plinth", "stage": "two"})
    };
    json!([
        {"type": "rabbitmq:VHost", "name": "typed", "inputs": {
            "name": "typed", "default_queue_type": queue_type}},
        {"type": "rabbitmq:Queue", "name": "src", "inputs": {"name": "src10"}},
        {"type": "rabbitmq:Queue", "name": "dst", "inputs": {"name": "dst10"}},
        {"type": "rabbitmq:Shovel", "name": "s10", "inputs": {
            "name": {"$output": ["dst", "name"]},
            "source_protocol": "amqp10", "source_uri": {"$secret": "uri"},
            "source_address": "/amq/queue/src10",
            "destination_protocol": "amqp10", "destination_uri": {"$secret": "uri"},
            "destination_address": "/amq/queue/dst10",
            "destination_application_properties": app,
            "destination_properties": {"content_type": "text/plain"},
            "destination_message_annotations": {"x-opt-source": "src10"},
            "destination_add_forward_headers": true}},
    ])
}

/// `rabbitmqctl eval` of a change to vhost `typed`'s default queue type: RabbitMQ 3.10's CLI
/// has no command for it (3.11's `update_vhost_metadata`).
fn set_queue_type(broker: &RabbitMq, queue_type: &str) {
    broker
        .ctl(&[
            "eval",
            &format!(
                "rabbit_misc:execute_mnesia_transaction(fun() -> rabbit_vhost:update_metadata(\
                 <<\"typed\">>, fun(M) -> M#{{default_queue_type => <<\"{queue_type}\">>}} end) end)."
            ),
        ])
        .unwrap();
}

#[test]
fn a_vhost_default_queue_type_and_amqp10_shovel_fields_live_their_lives() {
    let broker = broker();
    let before = broker.definitions().unwrap();
    // The AMQP 1.0 URI: the listener serves the default vhost.
    let env = project(&broker, "");

    // Create: the type is the vhost's, the AMQP 1.0 fields the shovel's, as the broker has them.
    declare(&env, &typed_and_amqp10("quorum", 1));
    let out = env.ok(&["up", "--yes"]);
    assert!(count_line(&out).contains("4 created"), "{out}");
    let d = broker.definitions().unwrap();
    let vhost = entry(&d, "vhosts", "name", "typed");
    assert_eq!(vhost["metadata"]["default_queue_type"], "quorum", "{vhost}");
    let shovel = parameter(&d, "shovel", "dst10");
    for (key, value) in [
        ("src-protocol", json!("amqp10")),
        ("src-address", json!("/amq/queue/src10")),
        ("dest-protocol", json!("amqp10")),
        ("dest-address", json!("/amq/queue/dst10")),
        ("dest-application-properties", json!({"origin": "plinth"})),
        ("dest-properties", json!({"content_type": "text/plain"})),
        ("dest-message-annotations", json!({"x-opt-source": "src10"})),
        ("dest-add-forward-headers", json!(true)),
    ] {
        assert_eq!(shovel[key], value, "{key} in {shovel}");
    }
    // The broker runs it.
    eventually("the AMQP 1.0 shovel dst10 runs", || {
        Ok((broker.shovels()?.iter()).any(|s| s["name"] == "dst10" && s["state"] == "running"))
    })
    .unwrap();
    env.ok(&["preview", "--expect-no-changes"]);
    env.ok(&["refresh", "--expect-no-changes"]);

    // The shovel's AMQP 1.0 fields change in place.
    declare(&env, &typed_and_amqp10("quorum", 2));
    let out = env.ok(&["up", "--yes"]);
    assert!(count_line(&out).contains("1 updated"), "{out}");
    let d = broker.definitions().unwrap();
    assert_eq!(
        parameter(&d, "shovel", "dst10")["dest-application-properties"],
        json!({"origin": "plinth", "stage": "two"})
    );

    // RabbitMQ 3.10 cannot change a vhost's default queue type: refused before anything is
    // written, saying why and what to do.
    declare(&env, &typed_and_amqp10("stream", 2));
    let err = env.fails(&["up", "--yes"]);
    assert!(
        err.contains("cannot change a vhost's default queue type") && err.contains("--replace"),
        "{err}"
    );
    assert_eq!(
        broker.definitions().unwrap(),
        d,
        "a refused change changed the broker"
    );

    // A type changed out of band is drift: refresh records it, and `up` with the program
    // saying what the broker has is then a no-op.
    set_queue_type(&broker, "stream");
    let out = env.run(&["refresh", "--expect-no-changes"]);
    assert!(!out.status.success(), "drift went unnoticed");
    let out = env.ok(&["refresh", "--yes"]);
    assert!(out.contains("default_queue_type"), "{out}");
    env.ok(&["preview", "--expect-no-changes"]);
    // Back to the program's declared type by the same route, and refresh agrees.
    set_queue_type(&broker, "quorum");
    declare(&env, &typed_and_amqp10("quorum", 2));
    env.ok(&["refresh", "--yes"]);
    env.ok(&["preview", "--expect-no-changes"]);

    // A field of the other protocol is refused by check, naming it.
    let mut mixed = typed_and_amqp10("quorum", 2);
    mixed[3]["inputs"]["source_queue"] = json!("src10");
    declare(&env, &mixed);
    let err = env.fails(&["preview"]);
    assert!(
        err.contains("source_queue") && err.contains("AMQP 0-9-1 field"),
        "{err}"
    );
    let mut mixed = typed_and_amqp10("quorum", 2);
    mixed[3]["inputs"]["destination_protocol"] = json!("amqp091");
    declare(&env, &mixed);
    let err = env.fails(&["preview"]);
    assert!(
        err.contains("destination_address") && err.contains("AMQP 1.0 field"),
        "{err}"
    );
    let mut addressless = typed_and_amqp10("quorum", 2);
    addressless[3]["inputs"]
        .as_object_mut()
        .unwrap()
        .remove("source_address");
    declare(&env, &addressless);
    let err = env.fails(&["preview"]);
    assert!(
        err.contains("source_address") && err.contains("link address"),
        "{err}"
    );

    // Imported by another stack as they are (left there: the first stack's destroy below
    // deletes them): the type and the AMQP 1.0 fields read back.
    let other = project(&broker, "");
    let mut imported = typed_and_amqp10("quorum", 2);
    imported[0]["import"] = json!("typed");
    imported[1]["import"] = json!("src10@/");
    imported[2]["import"] = json!("dst10@/");
    imported[3]["import"] = json!("dst10@/");
    declare(&other, &imported);
    let out = other.ok(&["up", "--yes"]);
    assert!(count_line(&out).contains("4 imported"), "{out}");
    other.ok(&["refresh", "--expect-no-changes"]);
    let mut wrong = imported.clone();
    wrong[0]["inputs"]["default_queue_type"] = json!("classic");
    let third = project(&broker, "");
    declare(&third, &wrong);
    let err = third.fails(&["up", "--yes"]);
    assert!(err.contains("default_queue_type"), "{err}");

    // Destroy leaves the broker as it was.
    env.ok(&["destroy", "--yes"]);
    assert_eq!(broker.definitions().unwrap(), before);
}

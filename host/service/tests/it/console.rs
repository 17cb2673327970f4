//! The web console, against a real `plinth-serve` on a real PostgreSQL: its headers, sessions
//! and CSRF over plain HTTP, and its pages in a real headless Chromium over WebDriver.

use std::path::PathBuf;

use crate::common::*;
use plinth_backend::Checkpoint;
use plinth_backend::service::{ServiceCrypter, Transport};
use plinth_engine::names::{ProjectName, StackName};
use plinth_engine::resource::ResourceState;
use plinth_engine::snapshot::Snapshot;
use plinth_engine::urn::Urn;
use plinth_engine::value::{PropertyMap, Value as PValue};
use plinth_test_browser::Browser;
use serde_json::{Value, json};

/// A secret output's plaintext: no page may hold it.
const SECRET: &str = "correct-horse-battery-staple";
/// Resource names and outputs that would run script if a page did not escape them.
const SCRIPT_NAME: &str = "<script>window.__pwned='script'</script>";
const IMG_NAME: &str = "\"><img src=x onerror=\"window.__pwned='img'\">";

/// An HTTP client that follows no redirect and keeps no cookie: each test says what it sends.
fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .save_redirect_history(false)
        .build()
        .into()
}

/// An answer: status, headers (names lower-case), body.
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    fn all(&self, name: &str) -> Vec<&str> {
        (self.headers.iter())
            .filter(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }

    /// The `Set-Cookie` of cookie `name`.
    fn set_cookie(&self, name: &str) -> String {
        (self.all("set-cookie").into_iter())
            .find(|c| c.starts_with(&format!("{name}=")))
            .unwrap_or_else(|| panic!("no cookie {name} in {:?}", self.headers))
            .to_owned()
    }
}

fn request(
    service: &Service,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    form: Option<&[(&str, &str)]>,
) -> Answer {
    let mut builder = ureq::http::Request::builder()
        .method(method)
        .uri(format!("{}{path}", service.url));
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    let mut body = Vec::new();
    if let Some(fields) = form {
        builder = builder.header("Content-Type", "application/x-www-form-urlencoded");
        body = (fields.iter())
            .map(|(k, v)| format!("{k}={}", url_encoded(v)))
            .collect::<Vec<_>>()
            .join("&")
            .into_bytes();
    }
    let mut response = agent().run(builder.body(body).unwrap()).unwrap();
    let headers = (response.headers().iter())
        .map(|(n, v)| (n.as_str().to_owned(), v.to_str().unwrap_or("").to_owned()))
        .collect();
    Answer {
        status: response.status().as_u16(),
        headers,
        body: response.body_mut().read_to_string().unwrap(),
    }
}

fn url_encoded(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The value of hidden field `csrf` in a page.
fn csrf_in(page: &str) -> String {
    let at = page.find("name=\"csrf\" value=\"").expect("a CSRF field") + 19;
    page[at..at + 64].to_owned()
}

/// The `name=value` of a `Set-Cookie`.
fn pair(set_cookie: &str) -> String {
    set_cookie.split(';').next().unwrap().to_owned()
}

/// A signed-in session over plain HTTP: its cookie header (`plinth_session=…`), and the
/// answer that opened it.
fn sign_in(service: &Service, token: &str, extra: &[(&str, &str)]) -> (String, Answer) {
    let form = request(service, "GET", "/signin", extra, None);
    assert_eq!(form.status, 200, "{}", form.body);
    let csrf = csrf_in(&form.body);
    let cookie = pair(&form.set_cookie("plinth_signin"));
    let mut headers = vec![("Cookie", cookie.as_str())];
    headers.extend_from_slice(extra);
    let signed = request(
        service,
        "POST",
        "/signin",
        &headers,
        Some(&[("csrf", &csrf), ("token", token)]),
    );
    assert_eq!(signed.status, 303, "{}", signed.body);
    (pair(&signed.set_cookie("plinth_session")), signed)
}

#[test]
fn every_page_forbids_inline_script_and_framing_and_is_never_cached() {
    let (_server, db) = database();
    let service = serve(&db, &[]);
    let alice = token(&db, "alice");
    let (session, _) = sign_in(&service, &alice, &[]);
    for (path, cookie) in [
        ("/signin", ""),
        ("/", session.as_str()),
        ("/stacks/p/none", session.as_str()),
    ] {
        let answer = request(&service, "GET", path, &[("Cookie", cookie)], None);
        let policy = answer.header("content-security-policy").unwrap_or_default();
        assert!(
            policy.contains("script-src 'self'")
                && policy.contains("frame-ancestors 'none'")
                && policy.contains("default-src 'none'")
                && !policy.contains("unsafe-inline"),
            "{path}: {policy}"
        );
        assert_eq!(answer.header("x-frame-options"), Some("DENY"), "{path}");
        assert_eq!(
            answer.header("x-content-type-options"),
            Some("nosniff"),
            "{path}"
        );
        assert_eq!(answer.header("cache-control"), Some("no-store"), "{path}");
        assert!(
            answer
                .header("content-type")
                .unwrap()
                .starts_with("text/html"),
            "{path}"
        );
    }
    // A stack that does not exist: a page saying so, in HTML.
    let missing = request(
        &service,
        "GET",
        "/stacks/p/none",
        &[("Cookie", &session)],
        None,
    );
    assert_eq!(missing.status, 404);
    assert!(missing.body.contains("does not exist"), "{}", missing.body);
    // The API is as it was: JSON, under /api/v1.
    assert_eq!(
        call(&service, "GET", "user", Some(&alice), None, None).1["name"],
        "alice"
    );
}

#[test]
fn a_session_cookie_is_http_only_strict_expiring_and_secure_over_tls() {
    let (server, db) = database();
    let service = serve(&db, &[]);
    let alice = token(&db, "alice");
    let form = request(&service, "GET", "/signin", &[], None);
    let signin = form.set_cookie("plinth_signin");
    assert!(
        signin.contains("HttpOnly") && signin.contains("SameSite=Strict"),
        "{signin}"
    );

    let (_, plain) = sign_in(&service, &alice, &[]);
    assert_eq!(plain.header("location"), Some("/"));
    let cookie = plain.set_cookie("plinth_session");
    for flag in ["HttpOnly", "SameSite=Strict", "Path=/", "Max-Age=28800"] {
        assert!(cookie.contains(flag), "{flag}: {cookie}");
    }
    assert!(!cookie.contains("Secure"), "{cookie}");
    // The session id is random, not the token, nor derived from it.
    assert!(!cookie.contains(&alice));

    let (_, tls) = sign_in(&service, &alice, &[("X-Forwarded-Proto", "https")]);
    assert!(tls.set_cookie("plinth_session").contains("Secure"));

    // The database keeps the session's digest only.
    let name = db.rsplit('/').next().unwrap().split('?').next().unwrap();
    let stored = server
        .psql(name, "SELECT encode(digest, 'hex') FROM console_sessions")
        .unwrap();
    let id = pair(&cookie).split_once('=').unwrap().1.to_owned();
    use sha2::Digest;
    let digest = hex::encode(sha2::Sha256::digest(&id));
    assert!(
        stored.contains(&digest) && !stored.contains(&id),
        "{stored}"
    );
}

#[test]
fn a_wrong_token_a_missing_csrf_token_or_another_sites_form_is_refused() {
    let (_server, db) = database();
    let service = serve(&db, &[]);
    let alice = token(&db, "alice");

    // No session: every page sends to the sign-in form.
    let page = request(&service, "GET", "/", &[], None);
    assert_eq!(
        (page.status, page.header("location")),
        (303, Some("/signin"))
    );

    // A wrong token: the form again, saying why, and no session.
    let form = request(&service, "GET", "/signin", &[], None);
    let cookie = pair(&form.set_cookie("plinth_signin"));
    let csrf = csrf_in(&form.body);
    let wrong = request(
        &service,
        "POST",
        "/signin",
        &[("Cookie", &cookie)],
        Some(&[("csrf", &csrf), ("token", "0123")]),
    );
    assert_eq!(wrong.status, 401);
    assert!(
        wrong.body.contains("not valid")
            && !wrong
                .all("set-cookie")
                .iter()
                .any(|c| c.starts_with("plinth_session="))
    );

    // Sign-in without the form's CSRF cookie (a login forced by another site): refused.
    let forced = request(
        &service,
        "POST",
        "/signin",
        &[],
        Some(&[("csrf", &csrf), ("token", &alice)]),
    );
    assert_eq!(forced.status, 403, "{}", forced.body);
    assert!(forced.body.contains("CSRF"));

    // Signed in: signing out without the session's CSRF token is refused, and the session
    // goes on; from another origin, refused even with it.
    let (session, _) = sign_in(&service, &alice, &[]);
    let stacks = request(&service, "GET", "/", &[("Cookie", &session)], None);
    assert_eq!(stacks.status, 200);
    let token = csrf_in(&stacks.body);
    let bare = request(
        &service,
        "POST",
        "/signout",
        &[("Cookie", &session)],
        Some(&[("csrf", "")]),
    );
    assert_eq!(bare.status, 403);
    let elsewhere = request(
        &service,
        "POST",
        "/signout",
        &[("Cookie", &session), ("Origin", "https://evil.example")],
        Some(&[("csrf", &token)]),
    );
    assert_eq!(elsewhere.status, 403);
    assert_eq!(
        request(&service, "GET", "/", &[("Cookie", &session)], None).status,
        200
    );

    // With it: the session ends, its cookie cleared.
    let out = request(
        &service,
        "POST",
        "/signout",
        &[("Cookie", &session)],
        Some(&[("csrf", &token)]),
    );
    assert_eq!((out.status, out.header("location")), (303, Some("/signin")));
    assert!(out.set_cookie("plinth_session").contains("Max-Age=0"));
    assert_eq!(
        request(&service, "GET", "/", &[("Cookie", &session)], None).status,
        303
    );
}

#[test]
fn a_revoked_token_ends_its_sessions_at_once() {
    let (_server, db) = database();
    let service = serve(&db, &[]);
    let bob = scoped_token(&db, "bob", &["--level", "read"]);
    let (session, _) = sign_in(&service, &bob, &[]);
    assert_eq!(
        request(&service, "GET", "/", &[("Cookie", &session)], None).status,
        200
    );
    let (_, listed) = call(&service, "GET", "tokens", Some(&bob), None, None);
    let id = listed["tokens"][0]["id"].as_str().unwrap().to_owned();
    let out = token_admin(&db, &["revoke", &id]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let after = request(&service, "GET", "/", &[("Cookie", &session)], None);
    assert_eq!(
        (after.status, after.header("location")),
        (303, Some("/signin"))
    );
}

/// Records `checkpoint` as the next version of `p/dev` (an import, as `plinth stack import`
/// does), through alice's token.
fn record(service: &Service, alice: &str, checkpoint: &[u8]) {
    record_with(
        service,
        alice,
        checkpoint,
        history_entry("import"),
        json!([]),
    );
}

/// Records `checkpoint` as the next version of `p/dev`, with the history entry `entry`, begun
/// saying the configuration keys `config`.
fn record_with(service: &Service, alice: &str, checkpoint: &[u8], entry: Value, config: Value) {
    let (status, begun) = call(
        service,
        "POST",
        "stacks/p/dev/updates",
        Some(alice),
        None,
        Some(json!({ "kind": "import", "config": config })),
    );
    assert_eq!(status, 200, "{begun}");
    let update = lease_of(&begun);
    let phase = json!({ "phase": 1, "entry": entry,
                        "checkpoint": String::from_utf8(checkpoint.to_vec()).unwrap() });
    let (status, body) = on_update(service, alice, &update, "phases", Some(phase));
    assert_eq!(status, 200, "{body}");
    let done = on_update(
        service,
        alice,
        &update,
        "complete",
        Some(json!({ "result": "succeeded" })),
    );
    assert_eq!(done.0, 200, "{}", done.1);
}

fn resource_named(name: &str, inputs: PropertyMap, outputs: PropertyMap) -> ResourceState {
    let mut resource = resource(name, inputs);
    resource.outputs = outputs;
    resource
}

/// The state of `p/dev` as the CLI would seal it through the service: resources whose names
/// and outputs are markup, a secret output, and `size` as `web`'s input.
fn hostile_state(service: &Service, alice: &str, size: i64) -> Vec<u8> {
    let mut snapshot = Snapshot::default();
    let outputs: PropertyMap = [
        (
            "password".to_owned(),
            PValue::Secret(Box::new(SECRET.into())),
        ),
        ("banner".to_owned(), PValue::String(IMG_NAME.into())),
    ]
    .into_iter()
    .collect();
    let mut web = resource_named(
        "web",
        [("size".to_owned(), PValue::Integer(size))]
            .into_iter()
            .collect(),
        outputs.clone(),
    );
    web.protect = true;
    let script = resource_named(SCRIPT_NAME, PropertyMap::new(), outputs.clone());
    let mut img = resource_named(IMG_NAME, PropertyMap::new(), PropertyMap::new());
    img.parent = Some(Urn::new("dev", "p", None, "t:T", "web"));
    img.dependencies = vec![web.urn.clone()];
    snapshot.resources = vec![web, script, img];
    snapshot.adopt_root("p", "dev", outputs);
    let crypter = ServiceCrypter::new(Transport::new(&service.url, alice), "p", "dev");
    Checkpoint::new(
        &ProjectName::new("p").unwrap(),
        &StackName::new("dev").unwrap(),
        snapshot,
    )
    .to_json(&crypter)
    .unwrap()
}

/// A new master key file, made by the real command.
fn master_key(dir: &std::path::Path) -> PathBuf {
    let path = dir.join("master.key");
    let out = std::process::Command::new(serve_binary())
        .args(["key", "create"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    path
}

/// Where the tests save screenshots of the console (docs/web-console.md shows them).
fn screenshot(browser: &Browser, name: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/console-screenshots")
        .join(format!("{name}.png"));
    browser.screenshot(&path).unwrap();
}

/// Signs `browser` in with `token` through the form, as a person does.
fn browser_sign_in(browser: &Browser, service: &Service, token: &str) {
    browser.goto(&format!("{}/signin", service.url)).unwrap();
    let field = browser.find("#token").unwrap();
    browser.type_into(&field, token).unwrap();
    let home = format!("{}/", service.url);
    follow(browser, "button[type=submit]", || {
        browser.url().unwrap() == home
    });
}

/// Clicks the element `css` names, then waits until `arrived` says the page it loads is
/// there (a click may return before the browser has navigated).
fn follow(browser: &Browser, css: &str, arrived: impl Fn() -> bool) {
    browser.click(&browser.find(css).unwrap()).unwrap();
    eventually(&format!("the page `{css}` leads to"), || {
        arrived() && browser.execute("return document.readyState;").unwrap() == "complete"
    });
}

/// Whether the browser is at `path` of the service.
fn at(browser: &Browser, service: &Service, path: &str) -> bool {
    browser.url().unwrap() == format!("{}{path}", service.url)
}

/// Nothing a page showed ran as script, and no page held the secret.
fn nothing_ran_and_no_secret(browser: &Browser, page: &str) {
    let pwned = browser
        .execute("return window.__pwned === undefined ? null : String(window.__pwned);")
        .unwrap();
    assert_eq!(pwned, Value::Null, "{page}: script ran");
    let source = browser.source().unwrap();
    assert!(
        !source.contains(SECRET),
        "{page} holds the secret: {source}"
    );
    assert!(
        !source.contains("ciphertext") && !source.contains("v1:"),
        "{page}: {source}"
    );
    assert!(
        browser.find_all("img").unwrap().is_empty(),
        "{page}: an <img> was made of data"
    );
    assert!(
        browser
            .find_all("main script:not([src='/assets/logs.js'])")
            .unwrap()
            .is_empty(),
        "{page}: a <script> was made of data"
    );
}

#[test]
fn in_a_real_browser_a_user_walks_stacks_resources_history_and_diff_and_nothing_hostile_runs() {
    let dir = tempfile::tempdir().unwrap();
    let key = master_key(dir.path());
    let (_server, db) = database();
    let service = serve(&db, &["--master-key", key.to_str().unwrap()]);
    let alice = token(&db, "alice");
    create_stack(&service, &alice, "dev");
    create_stack(&service, &alice, "prod");
    record(&service, &alice, &hostile_state(&service, &alice, 1));
    // The second says its client ran two policy packs (one named as markup) and applied a
    // saved plan.
    let mut checked = history_entry("import");
    checked["policy_packs"] = json!([
        { "name": "rules", "version": "1.0", "digest": "ab".repeat(32), "advisory": 1, "mandatory": 0 },
        { "name": SCRIPT_NAME, "version": "", "digest": "cd".repeat(32), "advisory": 0, "mandatory": 0 },
    ]);
    checked["plan"] = json!({ "made-against": 1, "state-digest": "ef".repeat(32), "steps": 3 });
    // Its client said the stack's configuration keys: a secret's by name only, a value as markup.
    let config = json!([
        { "key": "region", "secret": false, "value": "eu-west-1" },
        { "key": "banner", "secret": false, "value": IMG_NAME },
        { "key": "db-password", "secret": true },
    ]);
    record_with(
        &service,
        &alice,
        &hostile_state(&service, &alice, 2),
        checked,
        config,
    );
    // A client that sends a secret key's value is refused: the service never stores one.
    let (status, answer) = call(
        &service,
        "POST",
        "stacks/p/dev/updates",
        Some(&alice),
        None,
        Some(json!({ "kind": "update",
                     "config": [{ "key": "db-password", "secret": true, "value": SECRET }] })),
    );
    assert_eq!(status, 400, "{answer}");
    assert!(!answer.to_string().contains(SECRET), "{answer}");

    let browser = Browser::start().unwrap();
    browser_sign_in(&browser, &service, &alice);
    // Stacks: both, with their resource counts and last update.
    let rows = browser.text(&browser.find("#stacks").unwrap()).unwrap();
    assert!(rows.contains("p/dev 3 import · succeeded alice"), "{rows}");
    assert!(rows.contains("p/prod 0 none yet"), "{rows}");
    screenshot(&browser, "stacks");
    // The filter.
    browser
        .goto(&format!("{}/?filter=pro", service.url))
        .unwrap();
    let rows = browser.text(&browser.find("#stacks").unwrap()).unwrap();
    assert!(rows.contains("p/prod") && !rows.contains("p/dev"), "{rows}");

    // The stack: its tree, hostile names as text, the secret output as [secret].
    browser.goto(&format!("{}/", service.url)).unwrap();
    follow(&browser, "#stacks a[href='/stacks/p/dev']", || {
        at(&browser, &service, "/stacks/p/dev")
    });
    let tree = browser.text(&browser.find("#resources").unwrap()).unwrap();
    assert!(
        tree.contains(SCRIPT_NAME) && tree.contains(IMG_NAME),
        "{tree}"
    );
    assert!(tree.contains("web t:T protected"), "{tree}");
    let outputs = browser.text(&browser.find("#outputs").unwrap()).unwrap();
    let banner = serde_json::to_string(IMG_NAME).unwrap();
    assert!(
        outputs.contains("\"[secret]\"") && outputs.contains(&banner),
        "{outputs}"
    );
    let config = browser.text(&browser.find("#config").unwrap()).unwrap();
    assert!(
        config.contains("region eu-west-1")
            && config.contains(&format!("banner {IMG_NAME}"))
            && config.contains("db-password [secret]"),
        "{config}"
    );
    nothing_ran_and_no_secret(&browser, "the stack page");
    screenshot(&browser, "stack");

    // A resource: inputs, outputs, dependencies, parent.
    let links = browser.find_all("#resources a").unwrap();
    let img = (links.iter())
        .find(|a| browser.text(a).unwrap() == IMG_NAME)
        .expect("the img-named resource's link");
    browser.click(img).unwrap();
    eventually("the resource page", || {
        browser.url().unwrap().contains("/resource?urn=")
            && browser.execute("return document.readyState;").unwrap() == "complete"
    });
    assert_eq!(
        browser.text(&browser.find("h1").unwrap()).unwrap(),
        IMG_NAME
    );
    let facts = browser.text(&browser.find("#facts").unwrap()).unwrap();
    assert!(
        facts.contains("Parent urn:plinth:dev::p::t:T::web"),
        "{facts}"
    );
    nothing_ran_and_no_secret(&browser, "the img resource's page");
    browser
        .goto(&format!(
            "{}/stacks/p/dev/resource?urn={}",
            service.url,
            url_encoded("urn:plinth:dev::p::t:T::web")
        ))
        .unwrap();
    let outputs = browser.text(&browser.find("#outputs").unwrap()).unwrap();
    assert!(outputs.contains("\"password\": \"[secret]\""), "{outputs}");
    nothing_ran_and_no_secret(&browser, "web's page");
    screenshot(&browser, "resource");

    // History, newest first, and the diff of the two versions down to the property.
    browser
        .goto(&format!("{}/stacks/p/dev/history", service.url))
        .unwrap();
    let history = browser.text(&browser.find("#history").unwrap()).unwrap();
    let (two, one) = (
        history.find("\n2 import").unwrap(),
        history.find("\n1 import").unwrap(),
    );
    assert!(two < one, "{history}");
    // What the update checked: its packs' results and the plan it applied.
    let checks = browser
        .text(&browser.find("#history tr:nth-child(2)").unwrap())
        .unwrap();
    assert!(
        checks.contains("policy rules 1.0: 1 advisory violation(s)")
            && checks.contains(&format!("policy {SCRIPT_NAME}: passed"))
            && checks.contains("Applied a saved plan of 3 step(s), made against version 1"),
        "{checks}"
    );
    nothing_ran_and_no_secret(&browser, "the history");
    screenshot(&browser, "history");
    browser
        .goto(&format!("{}/stacks/p/dev/logs?version=2", service.url))
        .unwrap();
    let checks = browser.text(&browser.find("#checks").unwrap()).unwrap();
    assert!(
        checks.contains("policy rules 1.0: 1 advisory violation(s)")
            && checks.contains("made against version 1"),
        "{checks}"
    );
    browser
        .goto(&format!("{}/stacks/p/dev/history", service.url))
        .unwrap();
    follow(&browser, "#history a[href$='diff?from=1&to=2']", || {
        at(&browser, &service, "/stacks/p/dev/diff?from=1&to=2")
    });
    let diff = browser.text(&browser.find("#diff").unwrap()).unwrap();
    assert!(
        diff.contains("~ changed") && diff.contains("inputs.size: 1 → 2"),
        "{diff}"
    );
    // The secret output, sealed anew, is not shown as a change (nor its ciphertext).
    assert!(!diff.contains("password"), "{diff}");
    nothing_ran_and_no_secret(&browser, "the diff");
    screenshot(&browser, "diff");
}

#[test]
fn a_read_token_sees_no_action_and_its_forged_form_is_refused_while_a_writer_cancels() {
    let (_server, db) = database();
    let service = serve(&db, &[]);
    let alice = token(&db, "alice");
    create_stack(&service, &alice, "dev");
    create_stack(&service, &alice, "prod");
    let reader = scoped_token(
        &db,
        "carol",
        &["--level", "read", "--project", "p", "--stack", "dev"],
    );
    let (status, begun) = begin(&service, &alice, "dev");
    assert_eq!(status, 200, "{begun}");

    // The reader sees dev only, its running update, and no cancel button.
    let browser = Browser::start().unwrap();
    browser_sign_in(&browser, &service, &reader);
    let rows = browser.text(&browser.find("#stacks").unwrap()).unwrap();
    assert!(rows.contains("p/dev") && !rows.contains("p/prod"), "{rows}");
    assert!(rows.contains("by alice, lease until"), "{rows}");
    browser
        .goto(&format!("{}/stacks/p/dev", service.url))
        .unwrap();
    // Its text read again until shown: on a loaded machine a page just loaded once read as
    // none.
    let running = || (browser.find("#running")).and_then(|running| browser.text(&running));
    eventually("the stack's page showing alice's update", || {
        running().is_ok_and(|text| text.contains("by alice"))
    });
    assert!(browser.find_all("#cancel").unwrap().is_empty());
    browser
        .goto(&format!("{}/stacks/p/prod", service.url))
        .unwrap();
    let page = browser.source().unwrap();
    assert!(
        page.contains("needs read-no-secrets on stack p/prod"),
        "{page}"
    );

    // The form posted anyway, with the reader's own session and CSRF token: refused, as the
    // API refuses the reader's `plinth cancel`.
    let (session, _) = sign_in(&service, &reader, &[]);
    let page = request(
        &service,
        "GET",
        "/stacks/p/dev",
        &[("Cookie", &session)],
        None,
    );
    let forged = request(
        &service,
        "POST",
        "/stacks/p/dev/cancel",
        &[("Cookie", &session)],
        Some(&[("csrf", &csrf_in(&page.body)), ("confirm", "yes")]),
    );
    assert_eq!(forged.status, 403, "{}", forged.body);
    assert!(
        forged.body.contains("needs write on stack p/dev"),
        "{}",
        forged.body
    );
    assert!(get_stack(&service, &alice)["holder"].is_object());

    // Alice cancels it in the browser, confirming.
    let browser = Browser::start().unwrap();
    browser_sign_in(&browser, &service, &alice);
    browser
        .goto(&format!("{}/stacks/p/dev", service.url))
        .unwrap();
    screenshot(&browser, "running");
    browser
        .click(&browser.find("#cancel input[name=confirm]").unwrap())
        .unwrap();
    follow(&browser, "#cancel button", || {
        browser.find_all("#running").unwrap().is_empty()
    });
    assert_eq!(
        browser.url().unwrap(),
        format!("{}/stacks/p/dev", service.url)
    );
    assert!(browser.find_all("#running").unwrap().is_empty());
    assert!(get_stack(&service, &alice)["holder"].is_null());
    // Audited as the API's cancel is, with alice's name.
    let (_, audit) = call(
        &service,
        "GET",
        "audit?stack=p/dev",
        Some(&alice),
        None,
        None,
    );
    assert!(audit.to_string().contains("update.cancelled"), "{audit}");
}

fn get_stack(service: &Service, token: &str) -> Value {
    call(service, "GET", "stacks/p/dev", Some(token), None, None).1
}

/// Sends events `events` as batch `seq` of the update.
fn log_batch(service: &Service, alice: &str, update: &(String, String), seq: u64, events: Value) {
    let (status, body) = on_update(
        service,
        alice,
        update,
        "events",
        Some(json!({ "seq": seq, "events": events })),
    );
    assert_eq!(status, 200, "{body}");
}

#[test]
fn a_running_updates_log_streams_live_into_the_page_and_ends_saying_how() {
    let (_server, db) = database();
    let service = serve(&db, &[]);
    let alice = token(&db, "alice");
    create_stack(&service, &alice, "dev");
    let (status, begun) = begin(&service, &alice, "dev");
    assert_eq!(status, 200, "{begun}");
    let update = lease_of(&begun);
    let urn = format!("urn:plinth:dev::p::t:T::{SCRIPT_NAME}");
    log_batch(
        &service,
        &alice,
        &update,
        1,
        json!([
            { "seq": 1, "at_ms": 5, "event": "step-started", "op": "create", "urn": urn },
        ]),
    );

    let browser = Browser::start().unwrap();
    browser_sign_in(&browser, &service, &alice);
    browser
        .goto(&format!("{}/stacks/p/dev", service.url))
        .unwrap();
    follow(&browser, "a[href='/stacks/p/dev/logs']", || {
        at(&browser, &service, "/stacks/p/dev/logs")
    });
    let log = browser.find("#log").unwrap();
    // What was logged before the page opened, as `plinth logs` prints it.
    assert_eq!(
        browser.text(&log).unwrap(),
        format!("   +0.005s  create {urn} started")
    );

    // Events logged while the page is open appear in it, as text.
    log_batch(
        &service,
        &alice,
        &update,
        2,
        json!([
            { "seq": 2, "at_ms": 1250, "event": "step-done", "op": "create", "urn": urn, "duration_ms": 1245 },
            { "seq": 3, "at_ms": 1300, "event": "diagnostic", "severity": "warning", "urn": null,
              "message": IMG_NAME },
        ]),
    );
    eventually("the streamed events to appear", || {
        browser.text(&log).unwrap().contains(IMG_NAME)
    });
    let text = browser.text(&log).unwrap();
    assert!(
        text.contains(&format!("+1.250s  create {urn} done in 1245ms")),
        "{text}"
    );
    log_batch(
        &service,
        &alice,
        &update,
        3,
        json!([
            { "seq": 4, "at_ms": 1400, "event": "summary", "failed": false, "duration_ms": 1400,
              "changes": { "same": 0, "create": 1, "update": 0, "replace": 0, "delete": 0 } },
        ]),
    );
    eventually("the summary to appear", || {
        browser
            .text(&log)
            .unwrap()
            .contains("done after 1400ms: 1 created")
    });
    screenshot(&browser, "logs");
    nothing_ran_and_no_secret(&browser, "the live log");

    // It ends: the page says how.
    let (status, body) = on_update(
        &service,
        &alice,
        &update,
        "complete",
        Some(json!({ "result": "succeeded" })),
    );
    assert_eq!(status, 200, "{body}");
    let status = browser.find("#status").unwrap();
    eventually("the end to be shown", || {
        browser
            .text(&status)
            .unwrap()
            .contains("The update ended: succeeded.")
    });
}

#[test]
fn an_admin_makes_a_token_seen_once_revokes_it_and_reads_the_audit_log_filtered() {
    let (_server, db) = database();
    let service = serve(&db, &[]);
    let alice = token(&db, "alice");
    create_stack(&service, &alice, "dev");
    create_stack(&service, &alice, "prod");
    let browser = Browser::start().unwrap();
    browser_sign_in(&browser, &service, &alice);

    // Made in the console: shown once, and it works.
    follow(&browser, "nav a[href='/tokens']", || {
        at(&browser, &service, "/tokens")
    });
    browser
        .type_into(&browser.find("#name").unwrap(), SCRIPT_NAME)
        .unwrap();
    browser
        .type_into(&browser.find("#project").unwrap(), "p")
        .unwrap();
    follow(&browser, "#create button", || {
        !browser.find_all("#new-token").unwrap().is_empty()
    });
    let made = browser.text(&browser.find("#new-token").unwrap()).unwrap();
    let (status, me) = call(&service, "GET", "user", Some(&made), None, None);
    assert_eq!((status, &me["grants"]), (200, &json!("read on project p")));
    let listed = browser.text(&browser.find("#tokens").unwrap()).unwrap();
    assert!(listed.contains(SCRIPT_NAME), "{listed}");
    nothing_ran_and_no_secret(&browser, "the tokens page");
    screenshot(&browser, "tokens");
    // Never again.
    browser.goto(&format!("{}/tokens", service.url)).unwrap();
    assert!(!browser.source().unwrap().contains(&made));

    // Revoked in the console: refused by the API at once.
    let rows = browser.find_all("#tokens tr").unwrap();
    let row = (rows.iter())
        .find(|r| browser.text(r).unwrap().contains(SCRIPT_NAME))
        .unwrap();
    let id = browser
        .attribute(
            &browser
                .find("#tokens tr:nth-child(3) input[name=id]")
                .unwrap(),
            "value",
        )
        .unwrap();
    assert!(browser.text(row).unwrap().contains(id.as_deref().unwrap()));
    follow(
        &browser,
        "#tokens tr:nth-child(3) form.revoke button",
        || call(&service, "GET", "user", Some(&made), None, None).0 == 401,
    );
    assert_eq!(
        call(&service, "GET", "user", Some(&made), None, None).0,
        401
    );

    // The audit log, filtered by stack and by user.
    browser
        .goto(&format!("{}/audit?stack=p/dev", service.url))
        .unwrap();
    let rows = browser.text(&browser.find("#audit").unwrap()).unwrap();
    assert!(
        rows.contains("stack.created alice") && rows.contains("p/dev") && !rows.contains("p/prod"),
        "{rows}"
    );
    browser
        .goto(&format!("{}/audit?user=alice", service.url))
        .unwrap();
    let rows = browser.text(&browser.find("#audit").unwrap()).unwrap();
    assert!(
        rows.contains("token.created") && rows.contains("token.revoked"),
        "{rows}"
    );
    screenshot(&browser, "audit");
    browser
        .goto(&format!("{}/audit?user=nobody", service.url))
        .unwrap();
    let rows = browser.text(&browser.find("#audit").unwrap()).unwrap();
    assert!(!rows.contains("alice"), "{rows}");

    // A read token has no audit log, as in the API.
    let reader = scoped_token(&db, "carol", &["--level", "read"]);
    let (session, _) = sign_in(&service, &reader, &[]);
    let page = request(&service, "GET", "/", &[("Cookie", &session)], None);
    assert!(!page.body.contains("/audit"));
    let refused = request(&service, "GET", "/audit", &[("Cookie", &session)], None);
    assert_eq!(refused.status, 403, "{}", refused.body);
}

#[test]
fn sign_ins_sign_outs_and_refusals_are_audited_and_an_address_guessing_tokens_is_held_off() {
    let (_server, db) = database();
    let service = serve(&db, &[]);
    let alice = token(&db, "alice");
    let (session, _) = sign_in(&service, &alice, &[]);
    let page = request(&service, "GET", "/", &[("Cookie", &session)], None);
    let out = request(
        &service,
        "POST",
        "/signout",
        &[("Cookie", &session)],
        Some(&[("csrf", &csrf_in(&page.body))]),
    );
    assert_eq!(out.status, 303);
    let signed_in = audited(&db, "console.signed-in");
    let signed_out = audited(&db, "console.signed-out");
    for row in [&signed_in[..], &signed_out[..]].concat() {
        assert_eq!(row["user"], "alice", "{row}");
        assert_eq!(row["source"], "127.0.0.1", "{row}");
        assert!(
            row["token"].as_str().is_some_and(|t| t.len() == 12),
            "{row}"
        );
        assert!(row["at"].as_str().is_some_and(|t| !t.is_empty()), "{row}");
    }
    assert_eq!((signed_in.len(), signed_out.len()), (1, 1));

    // Wrong tokens: each refused and recorded, with no token id (a guess is nobody's token)
    // and never the guess itself, until the address has used its attempts up.
    let attempt = |token: &str| {
        let form = request(&service, "GET", "/signin", &[], None);
        let cookie = pair(&form.set_cookie("plinth_signin"));
        request(
            &service,
            "POST",
            "/signin",
            &[("Cookie", &cookie)],
            Some(&[("csrf", &csrf_in(&form.body)), ("token", token)]),
        )
    };
    let mut refused = 0;
    let held_off = loop {
        let answer = attempt(&format!("guess-{refused}"));
        if answer.status != 401 {
            break answer;
        }
        refused += 1;
        assert!(refused <= 100, "no limit after {refused} wrong tokens");
    };
    assert_eq!(held_off.status, 429, "{}", held_off.body);
    assert!(refused >= 3, "held off after only {refused} attempts");
    let retry: u64 = held_off.header("retry-after").unwrap().parse().unwrap();
    assert!(retry >= 1);
    assert!(
        held_off
            .body
            .contains("too many sign-in attempts from your address"),
        "{}",
        held_off.body
    );
    // Held off, even with the right token: the limit is the address's, not the token's.
    assert_eq!(attempt(&alice).status, 429);
    let failed = audited(&db, "console.sign-in-failed");
    assert_eq!(failed.len(), refused);
    for row in &failed {
        assert_eq!(row["user"], "(unknown)", "{row}");
        assert_eq!(row["source"], "127.0.0.1", "{row}");
        assert!(row["token"].is_null(), "{row}");
        assert!(!row.to_string().contains("guess-"), "{row}");
    }
    // A user at another address is not held off (the service trusts X-Forwarded-For here only
    // when told to: this one does not, so the header changes nothing and is refused too).
    let form = request(
        &service,
        "GET",
        "/signin",
        &[("X-Forwarded-For", "10.9.9.9")],
        None,
    );
    let cookie = pair(&form.set_cookie("plinth_signin"));
    let spoofed = request(
        &service,
        "POST",
        "/signin",
        &[("Cookie", &cookie), ("X-Forwarded-For", "10.9.9.9")],
        Some(&[("csrf", &csrf_in(&form.body)), ("token", &alice)]),
    );
    assert_eq!(spoofed.status, 429);
}

#[test]
fn the_web_console_page_shows_screenshots_that_are_committed() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let page = std::fs::read_to_string(root.join("docs/web-console.md")).unwrap();
    let images: Vec<&str> = (page.split("](").skip(1))
        .filter_map(|rest| rest.split(')').next())
        .filter(|target| target.ends_with(".png"))
        .collect();
    assert!(images.len() >= 5, "the page shows {images:?}");
    for image in images {
        assert!(image.starts_with("images/"), "{image}");
        let image = format!("docs/{image}");
        let bytes = std::fs::read(root.join(&image))
            .unwrap_or_else(|e| panic!("docs/web-console.md shows {image}, which is missing: {e}"));
        assert!(
            bytes.starts_with(b"\x89PNG\r\n\x1a\n"),
            "{image} is not a PNG"
        );
        assert!(bytes.len() < 150 << 10, "{image} is {} bytes", bytes.len());
    }
}

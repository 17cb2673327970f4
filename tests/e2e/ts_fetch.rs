//! A `fetch` the sandbox refuses rejects its promise with an error a TypeScript provider can
//! catch (tests/plugins/fetch-ts), with or without a request body, instead of trapping the
//! component's event loop.

use crate::support::{Env, repo_root};

#[test]
fn a_refused_fetch_is_an_error_the_provider_catches() {
    let env = Env::scenario_with(&format!(
        "  fetch:\n    path: {}\n",
        repo_root().join("tests/plugins/fetch-ts").display()
    ));
    env.config("resources", "get,put");
    env.config("type_get", "fetch:Request");
    env.config("type_put", "fetch:Request");
    // Nothing listens there, and nothing is granted: the host refuses before connecting.
    env.config("inputs_get", "url=http://127.0.0.1:9/get");
    env.config(
        "inputs_put",
        "url=http://127.0.0.1:9/put;method=PUT;body=hello",
    );
    env.ok(&["up", "--yes"]);
    let state = env.export();
    for name in ["get", "put"] {
        let resource = (state["snapshot"]["resources"].as_array().unwrap().iter())
            .find(|r| r["urn"].as_str().unwrap().ends_with(&format!("::{name}")))
            .unwrap_or_else(|| panic!("no {name} in {state}"));
        let caught = resource["outputs"]["caught"].as_str();
        assert!(
            caught.is_some_and(|c| c.contains("TypeError")),
            "{name}: {resource}"
        );
    }
}

//! What a failed run shows: a preview whose program fails does not show the stack's existing
//! outputs as removed (it changes none of them).

use crate::support::Env;

#[test]
fn a_failed_preview_does_not_show_the_outputs_removed() {
    let env = Env::scenario();
    env.ok(&["up", "--yes"]);
    let outputs = env.ok(&["stack", "output"]);
    assert!(outputs.contains("names"), "{outputs}");
    // The program now requires a value nobody set: it fails before registering its outputs.
    env.config("require", "missing_key");
    let out = env.command(&["preview"]).output().expect("plinth runs");
    assert!(!out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("missing_key"), "{stderr}");
    for removed in ["- names", "- count"] {
        assert!(!stdout.contains(removed), "{removed:?} in:\n{stdout}");
    }
    // And the stack still has them.
    assert_eq!(env.ok(&["stack", "output"]), outputs);
}

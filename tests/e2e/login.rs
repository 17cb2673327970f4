//! `plinth login`, `logout` and `whoami`: the backend commands use is remembered in
//! PLINTH_HOME, and PLINTH_BACKEND_URL still overrides it.

use std::os::unix::fs::PermissionsExt;

use crate::support::{Env, own_home};

#[test]
fn login_chooses_the_backend_logout_forgets_it_and_the_variable_overrides() {
    let env = Env::scenario();
    let home = own_home();
    let chosen = tempfile::tempdir().unwrap();
    // Commands as a user runs them: the backend comes from the login, not the variable.
    let plinth = |args: &[&str], url_override: bool| {
        let mut cmd = env.command(args);
        cmd.env("PLINTH_HOME", home.path()).env("HOME", home.path());
        if !url_override {
            cmd.env_remove("PLINTH_BACKEND_URL");
        }
        let out = cmd.output().unwrap();
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        (out.status.success(), text(&out.stdout), text(&out.stderr))
    };

    // Before any login: the default, ~/.plinth.
    let (ok, out, _) = plinth(&["whoami"], false);
    assert!(ok);
    let default = format!("Backend: file://{}/.plinth", home.path().display());
    assert!(out.contains(&default), "{out}");

    // A relative file URL is stored absolute.
    let parent = chosen.path().parent().unwrap().to_str().unwrap();
    let name = chosen.path().file_name().unwrap().to_str().unwrap();
    let (ok, out, err) = plinth(&["-C", parent, "login", &format!("file://{name}")], false);
    assert!(ok, "{err}");
    let absolute = format!("file://{}", chosen.path().display());
    assert!(
        out.contains(&format!("Logged in to {absolute} as ")),
        "{out}"
    );
    let (_, out, _) = plinth(&["whoami"], false);
    assert!(out.contains(&format!("Backend: {absolute}")), "{out}");
    let credentials = home.path().join("credentials.json");
    let mode = std::fs::metadata(&credentials)
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "credentials must be private");

    // Stacks now go to the chosen backend.
    let (ok, _, err) = plinth(&["stack", "init", "team"], false);
    assert!(ok, "{err}");
    assert!(chosen.path().join("stacks/scenario/team.json").exists());
    // The variable overrides the login: the test's own state directory has no `team`.
    let (ok, out, _) = plinth(&["stack", "ls"], true);
    assert!(ok && !out.contains("team"), "{out}");

    let (ok, out, _) = plinth(&["logout"], false);
    assert!(ok && out.contains("Logged out of file://"), "{out}");
    let (_, out, _) = plinth(&["whoami"], false);
    assert!(out.contains(&default), "{out}");
    let (ok, out, _) = plinth(&["logout"], false);
    assert!(ok && out.contains("Not logged in"), "{out}");

    let (ok, _, err) = plinth(&["login", "s3://bucket"], false);
    assert!(
        !ok && err.contains("unsupported backend URL `s3://bucket`"),
        "{err}"
    );
}

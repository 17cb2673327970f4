//! Directory grants that nest with different access: `./site` read-write at `/site` and
//! `./site/secret` read-only at `/site/secret` let a guest write the secret directory through
//! `/site/./secret/…` (a guest resolves a path against the longest literal preopen prefix).
//! plinth refuses such grants when it loads the plugin, whichever way the guest path or the
//! host directory is spelt, before the adversary can try any spelling of its own; and with
//! grants that do not nest, no spelling of a path reaches a read-only grant for writing.

use crate::support::{Env, guest};

const KEY: &str = "the key";

/// A scenario project whose adversary plugin is granted `dirs` (YAML flow mappings), with
/// `./site/secret/key.txt`, `./secret/key.txt` and a symlink `./link` to `./site`.
fn project(dirs: &[&str]) -> Env {
    let dirs: String = dirs.iter().map(|d| format!("        - {d}\n")).collect();
    let env = Env::scenario_with(&format!(
        "  adversary:\n    path: {}\n    grants:\n      dirs:\n{dirs}",
        guest("plinth-adversary").display()
    ));
    for dir in ["site/secret", "secret"] {
        std::fs::create_dir_all(env.project.join(dir)).unwrap();
        std::fs::write(env.project.join(dir).join("key.txt"), KEY).unwrap();
    }
    std::os::unix::fs::symlink("site", env.project.join("link")).unwrap();
    env
}

/// Declares `x` as an `adversary:WriteFile` overwriting `path`.
fn overwrite(env: &Env, path: &str) {
    env.config("resources", "x");
    env.config("type_x", "adversary:WriteFile");
    env.config(
        "inputs_x",
        &format!("action=overwrite;path={path};content=pwned"),
    );
}

fn key(env: &Env, dir: &str) -> String {
    std::fs::read_to_string(env.project.join(dir).join("key.txt")).unwrap()
}

#[test]
fn grants_nested_with_different_access_are_refused_for_every_spelling() {
    const SITE: &str = "{ host: ./site, guest: /site, access: read-write }";
    let nested = [
        "{ host: ./site/secret, guest: /site/secret, access: read-only }",
        "{ host: ./site/secret, guest: /site/./secret, access: read-only }",
        "{ host: ./site/secret, guest: /site//secret, access: read-only }",
        "{ host: ./site/secret, guest: /site/secret/, access: read-only }",
        // Host directories that nest, whatever their guest paths.
        "{ host: ./site/../site/secret, guest: /secret, access: read-only }",
        "{ host: ./link/secret, guest: /secret, access: read-only }",
        "{ host: ./link, guest: /mirror, access: read-only }",
    ];
    let attacks = [
        "/site/secret/key.txt",
        "/site/./secret/key.txt",
        "/site//secret/key.txt",
        "/site/secret/./key.txt",
    ];
    for (grant, attack) in nested.iter().zip(attacks.iter().cycle()) {
        for dirs in [[SITE, grant], [grant, SITE]] {
            let env = project(&dirs);
            overwrite(&env, attack);
            let stderr = env.fails(&["up", "--yes", "--skip-preview"]);
            for needle in [
                "plugin `adversary`: cannot grant the directory",
                "granted read-only at",
                "granted read-write at `/site`",
                "give both the same access, or grant directories that do not nest",
            ] {
                assert!(
                    stderr.contains(needle),
                    "{grant}: no {needle:?} in:\n{stderr}"
                );
            }
            assert_eq!(key(&env, "site/secret"), KEY, "{grant}, {attack}");
            assert!(env.resources().is_empty(), "{grant}");
        }
    }
}

/// With grants that do not nest, every spelling of a path in the read-only grant is refused
/// for writing, and every spelling in the read-write grant works.
#[test]
fn no_spelling_of_a_path_writes_a_read_only_grant() {
    let env = project(&[
        "{ host: ./site, guest: /site, access: read-write }",
        "{ host: ./secret, guest: /secret, access: read-only }",
    ]);
    for attack in [
        "/secret/key.txt",
        "/secret/./key.txt",
        "/secret//key.txt",
        "//secret/key.txt",
        "/./secret/key.txt",
        "/site/../secret/key.txt",
        "/link/secret/key.txt",
    ] {
        overwrite(&env, attack);
        let stderr = env.fails(&["up", "--yes", "--skip-preview"]);
        assert!(
            stderr.contains(&format!("overwriting `{attack}`")),
            "{attack}: {stderr}"
        );
        assert_eq!(key(&env, "secret"), KEY, "{attack}");
    }
    for spelling in ["/site/./secret/key.txt", "/site//secret/key.txt"] {
        overwrite(&env, spelling);
        env.ok(&["up", "--yes", "--skip-preview"]);
        assert_eq!(key(&env, "site/secret"), "pwned", "{spelling}");
        std::fs::write(env.project.join("site/secret/key.txt"), KEY).unwrap();
        // Deleted, so that the next spelling creates it again.
        env.config("resources", "ok");
        env.ok(&["up", "--yes", "--skip-preview"]);
    }
}

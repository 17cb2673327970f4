//! PyPI packages a Python guest declares in `[project] dependencies`: plinth installs them
//! itself, packs every module of theirs (a lazily imported one too), and refuses native code by
//! the package's name. pip installs from the wheels `scripts/setup` downloaded, never from an
//! index: PIP_NO_INDEX and PIP_FIND_LINKS, which plinth passes through to pip.

use std::path::Path;
use std::process::Output;

use crate::support::{Env, printed, repo_root, tools_dir};

/// Runs plinth with pip pointed at `wheels` only.
fn run(env: &Env, wheels: &Path, args: &[&str]) -> Output {
    env.command(args)
        .env("PIP_NO_INDEX", "1")
        .env("PIP_FIND_LINKS", wheels)
        .output()
        .expect("running plinth")
}

fn ok(env: &Env, args: &[&str]) -> String {
    let out = run(env, &tools_dir().join("wheels"), args);
    assert!(
        out.status.success(),
        "plinth {args:?} failed:\n{}",
        printed(&out)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// A Python program declaring `dependencies` (a TOML array's items) whose main exports nothing.
fn project_needing(dependencies: &str) -> Env {
    let env = Env::project("name: scenario\nprogram: .\n");
    std::fs::write(
        env.project.join("pyproject.toml"),
        format!(
            "[project]\nname = \"needs\"\nversion = \"0.1.0\"\ndependencies = [{dependencies}]\n"
        ),
    )
    .unwrap();
    std::fs::write(env.project.join("main.py"), "def main(ctx):\n    pass\n").unwrap();
    env
}

#[test]
fn a_python_program_uses_a_pypi_package_that_imports_lazily() {
    let program = repo_root().join("tests/programs/pypi-py");
    let env = Env::project(&format!("name: scenario\nprogram: {}\n", program.display()));
    // slugify imports text_unidecode when it first meets a non-ASCII string: at run time.
    ok(&env, &["up", "--yes"]);
    assert_eq!(
        ok(&env, &["stack", "output", "slug"]).trim(),
        "hello-world-ca-va"
    );
    env.config("title", "Dvořák über Straße");
    ok(&env, &["up", "--yes"]);
    assert_eq!(
        ok(&env, &["stack", "output", "slug"]).trim(),
        "dvorak-uber-strasse"
    );
}

#[test]
fn a_pypi_package_with_native_code_is_refused_by_name() {
    // markupsafe ships only platform wheels (its C speedups): there is one in the wheel dir.
    let env = project_needing("\"markupsafe==3.0.3\"");
    let out = run(&env, &tools_dir().join("wheels"), &["preview"]);
    assert!(!out.status.success());
    let text = printed(&out);
    assert!(text.contains("markupsafe"), "{text}");
    assert!(text.contains("pure-Python"), "{text}");
    assert!(!text.contains("panicked"), "{text}");
}

#[test]
fn a_pure_tagged_wheel_carrying_a_shared_library_is_refused_by_name() {
    let wheels = tempfile::tempdir().unwrap();
    sneaky_wheel(wheels.path());
    let env = project_needing("\"sneaky==1.0\"");
    let out = run(&env, wheels.path(), &["preview"]);
    assert!(!out.status.success());
    let text = printed(&out);
    assert!(
        text.contains(
            "the PyPI package `sneaky` has native code (it installs `sneaky/_speedups.so`)"
        ),
        "{text}"
    );
}

#[test]
fn a_dependency_that_is_a_pip_option_is_refused() {
    let env = project_needing("\"--index-url=http://127.0.0.1:9/simple\", \"python-slugify\"");
    let out = run(&env, &tools_dir().join("wheels"), &["preview"]);
    assert!(!out.status.success());
    let text = printed(&out);
    assert!(
        text.contains("\"--index-url=http://127.0.0.1:9/simple\", which is not a requirement"),
        "{text}"
    );
}

/// A wheel tagged `py3-none-any` that nonetheless installs a shared library, written with the
/// tools' own Python (a wheel is a zip).
fn sneaky_wheel(dir: &Path) {
    let script = r#"
import sys, zipfile
files = {
    "sneaky/__init__.py": "",
    "sneaky/_speedups.so": "\x7fELF",
    "sneaky-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: sneaky\nVersion: 1.0\n",
    "sneaky-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}
files["sneaky-1.0.dist-info/RECORD"] = "".join(f"{name},,\n" for name in files) + "sneaky-1.0.dist-info/RECORD,,\n"
with zipfile.ZipFile(sys.argv[1] + "/sneaky-1.0-py3-none-any.whl", "w") as wheel:
    for name, text in files.items():
        wheel.writestr(name, text)
"#;
    let status = std::process::Command::new(tools_dir().join("py/bin/python"))
        .args(["-c", script])
        .arg(dir)
        .status()
        .unwrap();
    assert!(status.success());
}

//! A Python program's own modules: one imported lazily (inside a function, or by
//! `importlib.import_module`) is packed into the component, as is a module of the standard
//! library imported so, the codecs the standard library
//! looks up by name (`idna`) work, and the build is keyed on what it packs: files written under
//! the project that the program does not import rebuild nothing.

use crate::support::Env;

fn output(env: &Env, name: &str) -> String {
    env.ok(&["stack", "output", name]).trim().to_owned()
}

#[test]
fn lazily_imported_modules_are_packed_and_only_what_is_packed_rebuilds() {
    let env = Env::project("name: scenario\nprogram: .\n");
    let dir = &env.project;
    let write = |path: &str, text: &str| {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write(
        "pyproject.toml",
        "[project]\nname = \"lazy\"\nversion = \"0.1.0\"\n",
    );
    // A program no earlier run built: the build cache outlives the test's directory.
    let run = serde_json::to_string(&dir.display().to_string()).unwrap();
    write(
        "main.py",
        &format!(
            "RUN = {run}\n\n\
             def main(ctx):\n    \
                 from helpers.words import greeting\n    \
                 import importlib\n    \
                 shout = importlib.import_module(\"helpers.shout\")\n    \
                 ctx.export(\"greeting\", shout.shout(greeting(ctx.config(\"name\", \"world\"))))\n    \
                 ctx.export(\"host\", \"bücher.example\".encode(\"idna\").decode(\"ascii\"))\n    \
                 import colorsys\n    \
                 ctx.export(\"hls\", str(colorsys.rgb_to_hls(1.0, 0.0, 0.0)))\n"
        ),
    );
    write("helpers/__init__.py", "");
    write(
        "helpers/words.py",
        "def greeting(name):\n    return f\"hello {name}\"\n",
    );
    write(
        "helpers/shout.py",
        "def shout(text):\n    return text.upper()\n",
    );
    assert!(env.built(&["up", "--yes"]).contains("Building program"));
    assert_eq!(output(&env, "greeting"), "HELLO WORLD");
    assert_eq!(output(&env, "host"), "xn--bcher-kva.example");
    // A module of the standard library imported inside the function, too.
    assert_eq!(output(&env, "hls"), "(0.0, 0.5, 1.0)");

    // Nothing the program imports: no rebuild, and the module that would stop a build is
    // never run.
    write("notes.json", "{}");
    write("data/state.json", "{}");
    write("unrelated.py", "raise SystemExit('never imported')\n");
    let again = env.built(&["up", "--yes"]);
    assert!(!again.contains("Building program"), "{again}");

    write(
        "helpers/words.py",
        "def greeting(name):\n    return f\"hi {name}\"\n",
    );
    assert!(env.built(&["up", "--yes"]).contains("Building program"));
    assert_eq!(output(&env, "greeting"), "HI WORLD");
}

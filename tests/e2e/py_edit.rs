//! The Python edit loop: a program runs on the prebuilt program runtime, which imports the
//! program's modules from a read-only code directory (and the standard library from a
//! read-only library directory), so an edit copies the code only. The runtime is built once
//! per SDK and toolchain, shared by every Python program, and an error in the loaded code
//! still names the user's file and line.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::SystemTime;

use crate::support::{Env, repo_root};

const RUNTIME: &str = "python-program-runtime.wasm";

/// A Python program whose `main` exports `greeting` from its module `words`; `words.py` says
/// `word`. The project's own path is in `main.py`, so that no earlier run's build is reused.
fn project(word: &str) -> Env {
    let env = Env::project("name: scenario\nprogram: .\n");
    let run = serde_json::to_string(&env.project.display().to_string()).unwrap();
    std::fs::write(
        env.project.join("pyproject.toml"),
        "[project]\nname = \"edited\"\nversion = \"0.1.0\"\n",
    )
    .unwrap();
    std::fs::write(
        env.project.join("main.py"),
        format!(
            "RUN = {run}\n\n\
             def main(ctx):\n    \
                 import words\n    \
                 import fractions\n    \
                 ctx.export(\"greeting\", words.greeting())\n    \
                 ctx.export(\"half\", str(fractions.Fraction(1, 2)))\n"
        ),
    )
    .unwrap();
    write_words(&env, word);
    env
}

fn write_words(env: &Env, word: &str) {
    std::fs::write(
        env.project.join("words.py"),
        format!("def greeting():\n    return {word:?}\n"),
    )
    .unwrap();
}

fn build_cache() -> PathBuf {
    repo_root().join("target/e2e-home/build-cache")
}

/// The prebuilt Python program runtimes in the tests' build cache, with when each was written
/// and its inode: a runtime built again would be a new file.
fn runtimes() -> BTreeMap<PathBuf, (SystemTime, u64)> {
    use std::os::unix::fs::MetadataExt;
    let mut found = BTreeMap::new();
    for entry in std::fs::read_dir(build_cache())
        .into_iter()
        .flatten()
        .flatten()
    {
        let file = entry.path().join(RUNTIME);
        if let Ok(meta) = std::fs::metadata(&file) {
            found.insert(file, (meta.modified().unwrap(), meta.ino()));
        }
    }
    found
}

/// The code directories in the build cache built from `env`'s program (their `main.py` is its
/// own, which names the project).
fn code_entries(env: &Env) -> Vec<PathBuf> {
    let main = std::fs::read_to_string(env.project.join("main.py")).unwrap();
    (std::fs::read_dir(build_cache())
        .into_iter()
        .flatten()
        .flatten())
    .map(|entry| entry.path().join("code"))
    .filter(|code| std::fs::read_to_string(code.join("0/main.py")).is_ok_and(|t| t == main))
    .collect()
}

/// What `words.py` says in each of `entries`.
fn words_in(entries: &[PathBuf]) -> Vec<String> {
    let mut words: Vec<String> = (entries.iter())
        .map(|code| std::fs::read_to_string(code.join("0/words.py")).unwrap())
        .collect();
    words.sort();
    words
}

fn output(env: &Env, name: &str) -> String {
    env.ok(&["stack", "output", name]).trim().to_owned()
}

#[test]
fn an_edited_python_program_runs_its_new_code_on_the_same_runtime() {
    let env = project("one");
    let first = env.built(&["up", "--yes"]);
    assert!(first.contains("Building program"), "{first}");
    assert_eq!(output(&env, "greeting"), "one");
    // A module of the standard library the runtime did not load while it was built.
    assert_eq!(output(&env, "half"), "1/2");
    let runtimes_before = runtimes();
    assert!(
        !runtimes_before.is_empty(),
        "no runtime in the build cache:\n{first}"
    );

    assert_eq!(code_entries(&env).len(), 1);
    for (edit, word) in ["two", "three"].into_iter().enumerate() {
        write_words(&env, word);
        let stderr = env.built(&["up", "--yes"]);
        // The code is copied again; the runtime is not built: the same file, untouched.
        assert!(stderr.contains("Building program"), "{word}: {stderr}");
        assert!(
            !stderr.contains("program runtime (once"),
            "{word} rebuilt the runtime: {stderr}"
        );
        assert_eq!(runtimes(), runtimes_before, "{word}: {stderr}");
        // One more code entry, holding the edited module.
        let entries = code_entries(&env);
        assert_eq!(entries.len(), edit + 2, "{word}: {entries:?}");
        let edited = format!("def greeting():\n    return {word:?}\n");
        assert_eq!(
            words_in(&entries).iter().filter(|w| **w == edited).count(),
            1,
            "{word}: {entries:?}"
        );
        assert_eq!(output(&env, "greeting"), word, "{word}: {stderr}");
    }
    // An unchanged program is not even copied into the cache again.
    let again = env.built(&["preview"]);
    assert!(!again.contains("Building program"), "{again}");
}

#[test]
fn every_python_program_shares_one_runtime() {
    let first = project("first");
    first.built(&["up", "--yes"]);
    let runtimes_before = runtimes();
    let second = project("second");
    let stderr = second.built(&["up", "--yes"]);
    assert!(stderr.contains("Building program"), "{stderr}");
    assert!(!stderr.contains("program runtime (once"), "{stderr}");
    assert_eq!(runtimes(), runtimes_before, "{stderr}");
    assert_eq!(output(&second, "greeting"), "second");
    assert_eq!(output(&first, "greeting"), "first");
}

#[test]
fn a_syntax_error_in_an_edited_module_names_its_file_and_line() {
    let env = project("one");
    env.built(&["up", "--yes"]);
    std::fs::write(
        env.project.join("words.py"),
        "def greeting():\n    return \"fine\"\n\ndef broken(:\n    pass\n",
    )
    .unwrap();
    let stderr = env.fails(&["preview"]);
    assert!(
        stderr.contains("SyntaxError") && stderr.contains("words.py:4"),
        "{stderr}"
    );
    // Neither the runtime's frames nor the import system's show.
    assert!(!stderr.contains("frozen importlib"), "{stderr}");
    assert!(!stderr.contains("/.plinth-code"), "{stderr}");

    // An exception while a module is imported names the user's line too.
    std::fs::write(
        env.project.join("words.py"),
        "LIMITS = {}\nFIRST = LIMITS[\"first\"]\n",
    )
    .unwrap();
    let stderr = env.fails(&["preview"]);
    assert!(
        stderr.contains("KeyError") && stderr.contains("words.py:2"),
        "{stderr}"
    );
}

/// A plan names the program by a digest over the runtime and the code it loads: a plan saved
/// before an edit refuses the edited program, though the runtime is the same file.
#[test]
fn a_plan_refuses_a_python_program_edited_since() {
    let env = project("one");
    let plan = env.project.join("plan.json");
    env.ok(&["preview", "--save-plan", plan.to_str().unwrap()]);
    write_words(&env, "two");
    let stderr = env.fails(&["up", "--yes", "--plan", plan.to_str().unwrap()]);
    assert!(
        stderr.contains("the program changed since the plan was made"),
        "{stderr}"
    );
    write_words(&env, "one");
    env.ok(&["up", "--yes", "--plan", plan.to_str().unwrap()]);
    assert_eq!(output(&env, "greeting"), "one");
}

/// The code and library directories the runtime reads are no grant: the program can read
/// them, but writes, deletions and new files are refused, and the files stay as they were.
#[test]
fn a_python_program_cannot_touch_its_own_code_or_library() {
    let env = project("one");
    let run = serde_json::to_string(&env.project.display().to_string()).unwrap();
    std::fs::write(
        env.project.join("main.py"),
        format!(
            "import os\n\
             RUN = {run}\n\n\
             def attempt(name, action):\n    \
                 try:\n        \
                     action()\n        \
                     return f\"{{name}}: done\"\n    \
                 except OSError as e:\n        \
                     return f\"{{name}}: refused\"\n\n\
             def main(ctx):\n    \
                 with open(\"/.plinth-code/0/main.py\") as f:\n        \
                     ctx.export(\"read\", f.readline().strip())\n    \
                 results = [\n        \
                     attempt(\"write code\", lambda: open(\"/.plinth-code/0/main.py\", \"w\").write(\"x\")),\n        \
                     attempt(\"new code\", lambda: open(\"/.plinth-code/0/new.py\", \"x\").write(\"x\")),\n        \
                     attempt(\"delete code\", lambda: os.remove(\"/.plinth-code/plinth-code.json\")),\n        \
                     attempt(\"write library\", lambda: open(\"/.plinth-library/python/fractions.py\", \"a\").write(\"x\")),\n        \
                     attempt(\"delete library\", lambda: os.remove(\"/.plinth-library/python/fractions.py\")),\n    \
                 ]\n    \
                 ctx.export(\"attempts\", \", \".join(results))\n"
        ),
    )
    .unwrap();
    env.built(&["up", "--yes"]);
    assert_eq!(output(&env, "read"), "import os");
    assert_eq!(
        output(&env, "attempts"),
        "write code: refused, new code: refused, delete code: refused, \
         write library: refused, delete library: refused"
    );
    // The cached code is as it was built, and the library still has what was attacked.
    let entries = code_entries(&env);
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert!(!entries[0].join("0/new.py").exists());
    assert!(entries[0].join("plinth-code.json").is_file());
    for runtime in runtimes().keys() {
        let library = runtime.parent().unwrap().join("library/python");
        assert!(library.join("fractions.py").is_file(), "{library:?}");
    }
}

//! Component files plinth refuses before reading them whole: a huge file (3 GB read into 6.3 GB
//! of memory before its magic number was checked), `/dev/zero` (read until out of memory), a
//! directory, a FIFO (opening one blocks) and a file that is not a component. Each is refused
//! with a message saying what it is, by `plugin install`, as a plugin's `path:` and as the
//! program. And the precompiled cache: an artifact that was damaged is compiled again, with a
//! warning, instead of being trusted (wasmtime's deserialization trusts its input).

use std::path::{Path, PathBuf};

use crate::support::{Env, guest};

/// The hostile files, in `dir`, with what plinth must say about each.
fn hostile_files(dir: &Path) -> Vec<(PathBuf, &'static str)> {
    let huge = dir.join("huge.wasm");
    // Sparse: three gigabytes that use no disk.
    std::fs::File::create(&huge)
        .unwrap()
        .set_len(3 << 30)
        .unwrap();
    let fifo = dir.join("fifo.wasm");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let garbage = dir.join("garbage.wasm");
    std::fs::write(&garbage, vec![b'x'; 1 << 20]).unwrap();
    vec![
        (
            huge,
            "is 3072 MiB, larger than the 256 MiB a component file may be",
        ),
        (
            PathBuf::from("/dev/zero"),
            "is a character device, not a component file",
        ),
        (fifo, "is a FIFO, not a component file"),
        (
            garbage,
            "is not a WebAssembly component: it does not start with the WebAssembly magic number",
        ),
    ]
}

#[test]
fn plugin_install_refuses_what_is_no_component_file_before_reading_it() {
    let env = Env::scenario();
    let dir = tempfile::tempdir().unwrap();
    let mut files = hostile_files(dir.path());
    files.push((
        dir.path().to_owned(),
        "is a directory, not a component file",
    ));
    for (path, says) in files {
        let path = path.display().to_string();
        let stderr = env.fails(&["plugin", "install", &path]);
        assert!(
            stderr.contains(&path) && stderr.contains(says),
            "{path}: {stderr}"
        );
    }
}

#[test]
fn a_plugin_or_program_path_to_what_is_no_component_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    for (path, says) in hostile_files(dir.path()) {
        let plugin = Env::scenario_with(&format!("  hostile:\n    path: {}\n", path.display()));
        let program = Env::project(&format!(
            "name: scenario\nprogram: {}\nplugins:\n  testkit:\n    path: {}\n",
            path.display(),
            guest("plinth-testkit").display()
        ));
        for env in [plugin, program] {
            let stderr = env.fails(&["preview"]);
            assert!(
                stderr.contains(&path.display().to_string()) && stderr.contains(says),
                "{path:?}: {stderr}"
            );
        }
    }
}

/// A way to damage an artifact's bytes.
type Damage = fn(&mut Vec<u8>);

/// The `.cwasm` artifacts in `home`'s precompiled cache.
fn artifacts(home: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(home.join("cache"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "cwasm"))
        .collect();
    found.sort();
    found
}

#[test]
fn a_damaged_precompiled_artifact_is_compiled_again() {
    let env = Env::scenario();
    let home = tempfile::tempdir().unwrap();
    let preview = || {
        let out = env
            .command(&["preview"])
            .env("PLINTH_HOME", home.path())
            .output()
            .unwrap();
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert!(out.status.success(), "{stderr}");
        stderr
    };
    let first = preview();
    assert!(!first.contains("damaged"), "{first}");
    let cached = artifacts(home.path());
    assert_eq!(cached.len(), 2, "the program and the testkit plugin");
    let damages: [(&str, Damage); 3] = [
        ("a byte flipped", |bytes| {
            let middle = bytes.len() / 2;
            bytes[middle] ^= 0xff;
        }),
        ("truncated", |bytes| bytes.truncate(bytes.len() * 2 / 3)),
        ("its header zeroed", |bytes| bytes[..64].fill(0)),
    ];
    for (how, damage) in damages {
        for artifact in &cached {
            let mut bytes = std::fs::read(artifact).unwrap();
            damage(&mut bytes);
            std::fs::write(artifact, bytes).unwrap();
        }
        let stderr = preview();
        for artifact in &cached {
            let warning = stderr.lines().find(|l| {
                l.contains("a precompiled artifact is damaged")
                    && l.contains(&artifact.display().to_string())
            });
            assert!(warning.is_some(), "{how}, {artifact:?}: {stderr}");
        }
        assert!(stderr.contains("compiling the component again"), "{stderr}");
        // Compiled again and stored whole: the next run is quiet.
        assert!(!preview().contains("damaged"), "{how}");
    }
}

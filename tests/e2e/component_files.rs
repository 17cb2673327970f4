//! Component files plinth refuses before reading them whole: a huge file (3 GB read into 6.3 GB
//! of memory before its magic number was checked), `/dev/zero` (read until out of memory), a
//! directory, a FIFO (opening one blocks) and a file that is not a component. Each is refused
//! with a message saying what it is, by `plugin install`, as a plugin's `path:` and as the
//! program.

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

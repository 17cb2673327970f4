//! The modules of a Python guest's own code its entry module can import, at the top of a
//! module or inside a function, found by `pyimports.py` (run by the Python of plinth's tools).
//! componentize-py packs only the modules loaded while it builds the component: the app module
//! imports these, so that a lazily imported one is packed too, and their files key the build.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};
use serde::Deserialize;
use serde_json::json;

use super::run::run_with_input;

const SCANNER: &str = include_str!("pyimports.py");

/// What the scanner found.
#[derive(Debug, Deserialize)]
pub struct Found {
    /// Module names, the entry module first.
    pub modules: Vec<String>,
    /// Their files, in the same order.
    pub files: Vec<PathBuf>,
    /// The other modules they import: the standard library's, or missing ones.
    pub external: Vec<String>,
}

/// The modules `entry` can import from the directories of `path` (in search order), leaving
/// out those found in a directory of `stop` (PyPI packages, which are all packed anyway).
pub fn scan(
    python: &Path,
    entry: &str,
    path: &[&Path],
    stop: &[&Path],
    what: &str,
) -> Result<Found> {
    let request = json!({ "entry": entry, "path": path, "stop": stop });
    let stdout = run_with_input(
        Command::new(python).args(["-I", "-c", SCANNER]),
        &request.to_string(),
        what,
        "finding the modules its code imports",
    )?;
    serde_json::from_slice(&stdout)
        .with_context(|| format!("{what}: the module scan wrote no readable list"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, path: &str, text: &str) {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    /// Run by the system's python3, which scripts/setup needs anyway.
    #[test]
    fn finds_every_module_of_the_guest_it_can_import_and_nothing_else() {
        let project = tempfile::tempdir().unwrap();
        let packages = tempfile::tempdir().unwrap();
        let p = project.path();
        write(
            p,
            "main.py",
            "import os\nfrom app import top\n\ndef main(ctx):\n    \
             from app.sub import leaf\n    import importlib\n    \
             importlib.import_module(\"by_name\")\n    import slugify\n",
        );
        write(p, "app/__init__.py", "");
        write(p, "app/top.py", "");
        write(p, "app/sub/__init__.py", "from . import sibling\n");
        write(p, "app/sub/leaf.py", "");
        write(p, "app/sub/sibling.py", "");
        // Syntax newer than the scanning Python's: found line by line.
        write(
            p,
            "by_name.py",
            "type Alias[T] = list[T]\nf\"{x!r:{y}}\"\nimport newer\n",
        );
        write(p, "newer.py", "");
        write(p, "unrelated.py", "raise SystemExit\n");
        write(packages.path(), "slugify/__init__.py", "");
        let found = scan(
            Path::new("python3"),
            "main",
            &[p, packages.path()],
            &[packages.path()],
            "test",
        )
        .unwrap();
        let mut modules = found.modules.clone();
        modules.sort();
        assert_eq!(
            modules,
            [
                "app",
                "app.sub",
                "app.sub.leaf",
                "app.sub.sibling",
                "app.top",
                "by_name",
                "main",
                "newer"
            ]
        );
        assert_eq!(found.modules[0], "main");
        for external in ["os", "importlib"] {
            assert!(found.external.iter().any(|e| e == external), "{found:?}");
        }
        assert!(
            !found.external.iter().any(|e| e.starts_with("slugify")),
            "{found:?}"
        );
        assert_eq!(found.files.len(), found.modules.len());
        assert!(found.files[0].ends_with("main.py"), "{:?}", found.files[0]);
    }
}

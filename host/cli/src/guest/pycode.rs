//! A Python program's code as the prebuilt runtime reads it (`plinth/runtime.py` in the SDK):
//! each folder of the program's module path becomes a numbered folder of the code directory,
//! holding the modules the program can import from it (the PyPI packages installed for it
//! whole), and `plinth-code.json` names the entry module and those folders in search order.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde_json::json;

/// The file that tells the runtime what to import, in the code directory.
pub const MANIFEST: &str = "plinth-code.json";

/// Writes, in `code`, the module files `files` (each found in a folder of `path`) and every
/// file of the `packages` folders (which are folders of `path` too), and the manifest naming
/// `module` as the entry; returns the manifest's path.
pub fn lay_out(
    code: &Path,
    module: &str,
    path: &[&Path],
    packages: &[&Path],
    files: &[PathBuf],
) -> Result<PathBuf> {
    let folders: Vec<PathBuf> = (0..path.len()).map(|n| code.join(n.to_string())).collect();
    for folder in &folders {
        std::fs::create_dir_all(folder)
            .with_context(|| format!("creating {}", folder.display()))?;
    }
    for file in files {
        // The innermost folder holding it: a folder of the path may be inside another.
        let (n, root) = (path.iter().enumerate())
            .filter(|(_, root)| file.starts_with(root))
            .max_by_key(|(_, root)| root.as_os_str().len())
            .with_context(|| format!("{} is in no folder of the module path", file.display()))?;
        copy(file, &folders[n].join(file.strip_prefix(root)?))?;
    }
    for package in packages {
        if let Some(n) = path.iter().position(|root| root == package) {
            copy_tree(package, &folders[n])?;
        }
    }
    let names: Vec<String> = (0..path.len()).map(|n| n.to_string()).collect();
    let manifest = code.join(MANIFEST);
    std::fs::write(
        &manifest,
        json!({ "module": module, "path": names }).to_string(),
    )
    .with_context(|| format!("writing {}", manifest.display()))?;
    Ok(manifest)
}

fn copy(from: &Path, to: &Path) -> Result<()> {
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::copy(from, to)
        .with_context(|| format!("copying {} to {}", from.display(), to.display()))?;
    Ok(())
}

/// Copies the files under `from` into `to`, bytecode caches left out (the runtime compiles
/// what it imports, and its code is read-only).
fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    let entries = std::fs::read_dir(from).with_context(|| format!("reading {}", from.display()))?;
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name();
        if name == "__pycache__" {
            continue;
        }
        let kind = entry.file_type()?;
        if kind.is_dir() {
            copy_tree(&entry.path(), &to.join(&name))?;
        } else if kind.is_file() {
            copy(&entry.path(), &to.join(&name))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_folder_of_the_path_keeps_its_modules_and_packages_are_copied_whole() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("project");
        let vendor = project.join("vendor");
        let packages = dir.path().join("packages");
        for (file, text) in [
            (project.join("main.py"), "import helper\n"),
            (vendor.join("helper.py"), "X = 1\n"),
            (project.join("unused.py"), "Y = 2\n"),
            (packages.join("slugify/__init__.py"), ""),
            (packages.join("slugify/__pycache__/x.pyc"), ""),
        ] {
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, text).unwrap();
        }
        let code = dir.path().join("code");
        let manifest = lay_out(
            &code,
            "main",
            &[&project, &vendor, &packages],
            &[&packages],
            &[project.join("main.py"), vendor.join("helper.py")],
        )
        .unwrap();
        assert!(code.join("0/main.py").is_file());
        assert!(code.join("1/helper.py").is_file(), "in its own folder");
        assert!(!code.join("0/vendor").exists());
        assert!(!code.join("0/unused.py").exists(), "only what it imports");
        assert!(code.join("2/slugify/__init__.py").is_file());
        assert!(!code.join("2/slugify/__pycache__").exists());
        let written: serde_json::Value =
            serde_json::from_slice(&std::fs::read(manifest).unwrap()).unwrap();
        assert_eq!(
            written,
            json!({ "module": "main", "path": ["0", "1", "2"] })
        );
    }
}

//! The project's directory: refused unless empty, and left as it was found when making the
//! project fails half way (removed if `plinth new` created it, emptied again otherwise).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use plinth_engine::shown::escape_controls;

/// Refuses a directory that holds anything: a project is never written over files.
pub fn check_empty(dir: &Path) -> Result<()> {
    let shown = || escape_controls(&dir.display().to_string()).into_owned();
    if !dir.exists() {
        return Ok(());
    }
    if !dir.is_dir() {
        bail!("{} exists and is not a directory", shown());
    }
    let mut entries = std::fs::read_dir(dir).with_context(|| format!("cannot read {}", shown()))?;
    if let Some(entry) = entries.next() {
        let entry = entry?;
        bail!(
            "{} is not empty (it has `{}`): `plinth new` makes a project only in a new or empty \
             directory; name another one (`plinth new TEMPLATE DIR`)",
            shown(),
            escape_controls(&entry.file_name().to_string_lossy())
        );
    }
    Ok(())
}

/// A directory being filled with a project, undone on drop unless [`NewDir::keep`] is called.
pub struct NewDir {
    dir: PathBuf,
    /// `plinth new` made the directory itself (else it was there, empty).
    made: bool,
    kept: bool,
}

impl NewDir {
    pub fn create(dir: &Path) -> Result<NewDir> {
        let made = !dir.exists();
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        Ok(NewDir {
            dir: dir.to_owned(),
            made,
            kept: false,
        })
    }

    /// Writes each `(relative path, text)`.
    pub fn write(&self, files: &[(String, String)]) -> Result<()> {
        for (path, text) in files {
            let path = self.dir.join(path);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)
                    .with_context(|| format!("cannot create {}", parent.display()))?;
            }
            std::fs::write(&path, text)
                .with_context(|| format!("cannot write {}", path.display()))?;
        }
        Ok(())
    }

    /// The project is complete: keep it.
    pub fn keep(mut self) {
        self.kept = true;
    }
}

impl Drop for NewDir {
    fn drop(&mut self) {
        if self.kept {
            return;
        }
        if self.made {
            let _ = std::fs::remove_dir_all(&self.dir);
            return;
        }
        // It was empty: everything in it is ours.
        if let Ok(entries) = std::fs::read_dir(&self.dir) {
            for entry in entries.flatten() {
                let path = entry.path();
                let _ = if path.is_dir() {
                    std::fs::remove_dir_all(&path)
                } else {
                    std::fs::remove_file(&path)
                };
            }
        }
    }
}

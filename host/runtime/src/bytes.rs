//! The bytes of a component file together with their SHA-256, read and hashed once: what a
//! caller checks (against a lock file's pin, say) is exactly what the runtime compiles, even if
//! the file is replaced on disk in between.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use crate::error::LoadError;

/// A component file's contents and their SHA-256. The hash is always the hash of these bytes:
/// the only ways to make one compute it.
#[derive(Clone)]
pub struct ComponentBytes {
    path: PathBuf,
    /// An `Arc<Vec>` rather than an `Arc<[u8]>`, which would copy the file once more.
    bytes: Arc<Vec<u8>>,
    sha256: String,
    /// How long reading and hashing took.
    read: Duration,
}

impl ComponentBytes {
    /// Reads and hashes the file at `path`.
    pub fn read(path: &Path) -> Result<ComponentBytes, LoadError> {
        let started = Instant::now();
        let bytes = std::fs::read(path).map_err(|error| LoadError::Read {
            path: path.to_owned(),
            error,
        })?;
        let mut component = ComponentBytes::new(path.to_owned(), bytes);
        component.read = started.elapsed();
        Ok(component)
    }

    /// `bytes`, read from `path` (which names them in messages), with their hash.
    pub fn new(path: PathBuf, bytes: Vec<u8>) -> ComponentBytes {
        let started = Instant::now();
        let sha256 = hex::encode(Sha256::digest(&bytes));
        ComponentBytes {
            path,
            bytes: Arc::new(bytes),
            sha256,
            read: started.elapsed(),
        }
    }

    /// Where the bytes were read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The SHA-256 of the bytes, in hex.
    pub fn sha256(&self) -> &str {
        &self.sha256
    }

    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    pub(crate) fn read_time(&self) -> Duration {
        self.read
    }
}

impl fmt::Debug for ComponentBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ComponentBytes")
            .field("path", &self.path)
            .field("len", &self.bytes.len())
            .field("sha256", &self.sha256)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_is_of_the_bytes_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.wasm");
        std::fs::write(&path, b"first").unwrap();
        let read = ComponentBytes::read(&path).unwrap();
        std::fs::write(&path, b"second").unwrap();
        assert_eq!(read.bytes(), b"first");
        assert_eq!(read.sha256(), hex::encode(Sha256::digest(b"first")));
        assert!(format!("{read:?}").contains("len: 5"));
    }
}

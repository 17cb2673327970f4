//! The bytes of a component file together with their SHA-256, read and hashed once: what a
//! caller checks (against a lock file's pin, say) is exactly what the runtime compiles, even if
//! the file is replaced on disk in between.

use std::fmt;
use std::fs::{File, FileType, OpenOptions};
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use crate::error::LoadError;

/// The largest component file plinth reads (and downloads): 256 MiB. No plugin or program is
/// near it (a Python one, interpreter included, is about 40 MiB), and a file that is must not
/// be read whole into memory by mistake.
pub const MAX_COMPONENT_BYTES: u64 = 256 << 20;

/// Reads the component file at `path`, checking before reading it whole that it is a regular
/// file (not a directory, a device such as `/dev/zero`, or a FIFO, which opening would block
/// on), no larger than [`MAX_COMPONENT_BYTES`], and starts with a component's header.
pub fn read_component_file(path: &Path) -> Result<Vec<u8>, LoadError> {
    let read_error = |error| LoadError::Read {
        path: path.to_owned(),
        error,
    };
    // Non-blocking, so that opening a FIFO returns at once; `fstat` then refuses it.
    let mut file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(read_error)?;
    let meta = file.metadata().map_err(read_error)?;
    if !meta.is_file() {
        return Err(LoadError::NotAFile {
            path: path.to_owned(),
            kind: kind_of(meta.file_type()),
        });
    }
    let too_large = |size: u64| LoadError::TooLarge {
        path: path.to_owned(),
        size,
        limit: MAX_COMPONENT_BYTES,
    };
    if meta.len() > MAX_COMPONENT_BYTES {
        return Err(too_large(meta.len()));
    }
    let mut header = [0u8; 8];
    let got = read_up_to(&mut file, &mut header).map_err(read_error)?;
    check_is_component(path, &header[..got])?;
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    bytes.extend_from_slice(&header[..got]);
    // The file may grow while it is read: never read past the limit.
    let rest = MAX_COMPONENT_BYTES + 1 - got as u64;
    file.take(rest)
        .read_to_end(&mut bytes)
        .map_err(read_error)?;
    if bytes.len() as u64 > MAX_COMPONENT_BYTES {
        return Err(too_large(bytes.len() as u64));
    }
    Ok(bytes)
}

/// Fills as much of `buf` as the file holds.
fn read_up_to(file: &mut File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match file.read(&mut buf[got..])? {
            0 => break,
            n => got += n,
        }
    }
    Ok(got)
}

fn kind_of(file_type: FileType) -> &'static str {
    if file_type.is_dir() {
        "a directory"
    } else if file_type.is_fifo() {
        "a FIFO"
    } else if file_type.is_char_device() {
        "a character device"
    } else if file_type.is_block_device() {
        "a block device"
    } else if file_type.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

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
    /// Reads (as [`read_component_file`] does) and hashes the file at `path`.
    pub fn read(path: &Path) -> Result<ComponentBytes, LoadError> {
        let started = Instant::now();
        let bytes = read_component_file(path)?;
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

/// Rejects files that are not components with a message that says what they are instead.
pub(crate) fn check_is_component(path: &Path, bytes: &[u8]) -> Result<(), LoadError> {
    let reason = match bytes {
        [b'\0', b'a', b's', b'm', _, _, 1, 0, ..] => return Ok(()),
        [b'\0', b'a', b's', b'm', _, _, 0, 0, ..] => {
            "it is a core WebAssembly module; build the plugin as a component (for the \
             `wasm32-wasip2` target, or with `wasm-tools component new`)"
        }
        [b'\0', b'a', b's', b'm', ..] => "its WebAssembly header is of an unknown kind",
        [0x7f, b'E', b'L', b'F', ..] => {
            "it is a native or precompiled binary; give the `.wasm` file instead"
        }
        _ => "it does not start with the WebAssembly magic number",
    };
    Err(LoadError::NotAComponent {
        path: path.to_owned(),
        reason: reason.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_is_of_the_bytes_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.wasm");
        std::fs::write(&path, FIRST).unwrap();
        let read = ComponentBytes::read(&path).unwrap();
        std::fs::write(&path, b"\0asm\x0d\0\x01\0second").unwrap();
        assert_eq!(read.bytes(), FIRST);
        assert_eq!(read.sha256(), hex::encode(Sha256::digest(FIRST)));
        assert!(format!("{read:?}").contains("len: 13"));
    }

    /// The preamble of a component, and some more.
    const FIRST: &[u8] = b"\0asm\x0d\0\x01\0first";

    fn refusal(path: &Path) -> String {
        let started = Instant::now();
        let error = read_component_file(path).unwrap_err().to_string();
        // Refused without reading: a full read of these would take far longer, or forever.
        assert!(started.elapsed() < Duration::from_secs(10), "{error}");
        error
    }

    #[test]
    fn what_is_not_a_component_file_is_refused_before_it_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let huge = dir.path().join("huge.wasm");
        let file = File::create(&huge).unwrap();
        file.set_len(3 << 30).unwrap(); // sparse: no disk used
        let error = refusal(&huge);
        assert!(
            error.contains("is 3072 MiB, larger than the 256 MiB a component file may be"),
            "{error}"
        );
        let fifo = dir.path().join("fifo.wasm");
        let status = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(status.unwrap().success());
        for (path, kind) in [
            (Path::new("/dev/zero"), "a character device"),
            (dir.path(), "a directory"),
            (fifo.as_path(), "a FIFO"),
        ] {
            let error = refusal(path);
            assert!(
                error.contains(&format!("is {kind}, not a component file")),
                "{error}"
            );
        }
        let garbage = dir.path().join("garbage.wasm");
        std::fs::write(&garbage, vec![b'x'; 1 << 20]).unwrap();
        assert!(refusal(&garbage).contains("magic number"));
        let empty = dir.path().join("empty.wasm");
        std::fs::write(&empty, b"").unwrap();
        assert!(refusal(&empty).contains("magic number"));
    }
}

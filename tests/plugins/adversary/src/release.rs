//! A release marker a test rewrites in the built component, so that the same code stands for
//! other releases of the plugin, as a registry would hold them: another version asking for
//! other capabilities. Blank, it is the crate's own version asking for nothing.
//!
//! The payload between `PLINTH-ADVERSARY-RELEASE[` and `]`, padded with spaces, is `VERSION`
//! followed by `;KIND=VALUE` items, KIND one of `env`, `tcp`, `udp`, `http`, `dir` (read-only)
//! and `dir-rw`: `0.2.0;tcp=db.internal:5432`.

use std::sync::OnceLock;

use plinth_sdk::Capabilities;

/// The marker, kept as it is in the component's data: rewritten in place, same length.
static MARKER: [u8; 96] = *b"PLINTH-ADVERSARY-RELEASE[                                                                      ]";
const PREFIX: &str = "PLINTH-ADVERSARY-RELEASE[";

/// What the marker says.
pub struct Release {
    pub version: String,
    items: Vec<(String, String)>,
}

/// The release this build is, read once.
pub fn release() -> &'static Release {
    static RELEASE: OnceLock<Release> = OnceLock::new();
    RELEASE.get_or_init(|| {
        // Read through an opaque reference, so that the compiler keeps the bytes a test
        // rewrites instead of folding the blank marker into the code.
        let marker = std::hint::black_box(&MARKER);
        let text = String::from_utf8_lossy(&marker[PREFIX.len()..marker.len() - 1]);
        let mut parts = text.trim().split(';');
        let version = match parts.next() {
            Some(v) if !v.is_empty() => v.to_owned(),
            _ => env!("CARGO_PKG_VERSION").to_owned(),
        };
        let items = parts
            .filter_map(|item| item.split_once('='))
            .map(|(kind, value)| (kind.to_owned(), value.to_owned()))
            .collect();
        Release { version, items }
    })
}

impl Release {
    pub fn capabilities(&self) -> Capabilities {
        self.items
            .iter()
            .fold(Capabilities::new(), |caps, (kind, value)| {
                match kind.as_str() {
                    "env" => caps.env(value),
                    "tcp" => caps.tcp(value),
                    "udp" => caps.udp(value),
                    "http" => caps.http(value),
                    "dir" => caps.dir(value, false, "a test's release marker asks for it"),
                    "dir-rw" => caps.dir(value, true, "a test's release marker asks for it"),
                    _ => caps,
                }
            })
    }
}

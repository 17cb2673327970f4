//! The service's version, from the header every answer carries: a client warns, once per
//! service and process, when it is too far from its own (another major version, or another
//! minor one before 1.0; see [`Release::too_far_from`]). A service older than the header names
//! no version and is not judged.

use std::collections::BTreeSet;
use std::sync::Mutex;

use plinth_engine::shown::escape_controls;
use plinth_state::protocol::version::Release;

/// This client's version: the CLI's, the service's and the SDKs' are one.
const CLIENT: &str = env!("CARGO_PKG_VERSION");

/// The longest part of a header that is not a version a warning quotes.
const QUOTED: usize = 40;

/// The services judged so far in this process, by URL.
static JUDGED: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());

/// Judges the version the service at `url` named, the first time it names one, printing the
/// warning if there is one.
pub(super) fn note(url: &str, header: Option<&[u8]>) {
    let Some(header) = header else { return };
    if !(JUDGED.lock().expect("never poisoned")).insert(url.to_owned()) {
        return;
    }
    if let Some(warning) = warning(url, CLIENT, header) {
        eprintln!("warning: {warning}");
    }
}

/// What to tell the user of a client at version `client` whose service at `url` named the
/// version `header`, if anything.
pub fn warning(url: &str, client: &str, header: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(header);
    let client_release = Release::parse(client).expect("plinth's own version is a version");
    let Some(service) = Release::parse(text.trim()) else {
        // A hostile or broken answer: quoted short and escaped, never as it came.
        let quoted: String = text.chars().take(QUOTED).collect();
        return Some(format!(
            "the service at {url} names its version `{}`, which is not a version; check that \
             the URL is a plinth service's",
            escape_controls(&quoted)
        ));
    };
    client_release.too_far_from(service).then(|| {
        format!(
            "this plinth is {client} but the service at {url} is {}: versions this far apart \
             may not understand each other; use a plinth of the service's series ({}) with it, \
             or upgrade the service",
            text.trim(),
            service.series()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::warning;

    const URL: &str = "http://127.0.0.1:1";

    #[test]
    fn the_same_series_is_quiet_and_another_is_named() {
        assert_eq!(warning(URL, "0.3.0", b"0.3.9"), None);
        assert_eq!(warning(URL, "1.2.0", b"1.0.0"), None);
        let far = warning(URL, "0.3.0", b"0.2.1").unwrap();
        assert!(far.contains("this plinth is 0.3.0"), "{far}");
        assert!(far.contains(&format!("{URL} is 0.2.1")), "{far}");
        assert!(far.contains("(0.2.x)"), "{far}");
        assert!(warning(URL, "1.0.0", b"2.0.0").unwrap().contains("(2.x)"));
    }

    #[test]
    fn a_header_that_is_not_a_version_is_quoted_short_and_escaped() {
        let hostile = format!("\u{1b}[2J{}", "x".repeat(500));
        let said = warning(URL, "0.1.0", hostile.as_bytes()).unwrap();
        assert!(!said.contains('\u{1b}'), "{said}");
        assert!(said.contains("\\u{1b}[2J"), "{said}");
        assert!(said.len() < 300, "{said}");
        assert!(
            warning(URL, "0.1.0", b"\xff\xfe")
                .unwrap()
                .contains("not a version")
        );
    }
}

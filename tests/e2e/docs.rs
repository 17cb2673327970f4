//! The guides show real code: their complete examples are the example crates, byte for byte
//! (those crates are built and run by `gen_sdk::kv_example_lifecycle`), and they name one WIT
//! version.

use crate::support::repo_root;

fn read(path: &str) -> String {
    std::fs::read_to_string(repo_root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The Rust block of `guide` that follows the comment naming `file`.
fn included_block<'a>(guide: &'a str, file: &str) -> &'a str {
    let marker = format!("<!-- The block below is {file}, byte for byte");
    let at = guide
        .find(&marker)
        .unwrap_or_else(|| panic!("no block marked as {file}"));
    let start = at + guide[at..].find("```rust\n").unwrap() + "```rust\n".len();
    let end = start + guide[start..].find("\n```\n").unwrap() + 1;
    &guide[start..end]
}

#[test]
fn the_guides_show_the_example_crates_as_they_are() {
    for (guide, file) in [
        (
            "docs/writing-a-provider.md",
            "examples/kv/provider/src/lib.rs",
        ),
        ("docs/writing-a-program.md", "examples/kv/src/lib.rs"),
    ] {
        assert!(
            included_block(&read(guide), file) == read(file),
            "{guide} shows an outdated copy of {file}: paste the file in again"
        );
    }
}

#[test]
fn the_guides_name_the_current_wit_version() {
    for guide in ["docs/writing-a-provider.md", "docs/writing-a-program.md"] {
        let text = read(guide);
        let first = text.find("plinth:plugin@").expect(guide);
        assert!(
            text[first..].starts_with("plinth:plugin@0.3.0"),
            "{guide} names another WIT version first"
        );
    }
}

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

/// The guide to adding a language names the files a language lives in: each path it gives for
/// the three languages there are exists, so a move or rename shows up here.
#[test]
fn the_languages_guide_names_files_that_exist() {
    let guide = read("docs/languages.md");
    let mut named = 0;
    for (i, path) in guide.split('`').enumerate() {
        // The text between backticks, inside code spans only; the fourth language's files
        // are not written yet.
        let is_path = i % 2 == 1
            && (path.starts_with("host/") || path.starts_with("sdk-guest/"))
            && !path.contains("/go")
            && !path.contains("...");
        if is_path {
            named += 1;
            assert!(
                repo_root().join(path).exists(),
                "docs/languages.md names {path}, which does not exist"
            );
        }
    }
    assert!(named >= 10, "only {named} paths found in docs/languages.md");
}

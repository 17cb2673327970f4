//! The README and the book in docs/: every relative link and `#anchor` leads somewhere, every
//! page is in SUMMARY.md, the README stays a first read, and the CLI reference is what plinth's
//! command definitions print. Checked here so that CI needs no mdbook (`scripts/docs` builds
//! the book for reading).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};

use pulldown_cmark::{Event, HeadingLevel, Options, Parser, Tag, TagEnd};

use crate::support::repo_root;

/// A Markdown page: its anchors and the links it makes.
struct Page {
    anchors: BTreeSet<String>,
    /// Every link and image destination, in order.
    links: Vec<String>,
    /// The headings' levels and texts, in order.
    headings: Vec<(HeadingLevel, String)>,
}

fn parse(text: &str) -> Page {
    let mut page = Page {
        anchors: BTreeSet::new(),
        links: Vec::new(),
        headings: Vec::new(),
    };
    let mut heading: Option<(HeadingLevel, String)> = None;
    let options = Options::ENABLE_TABLES
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS;
    for event in Parser::new_ext(text, options) {
        match event {
            Event::Start(Tag::Heading { level, .. }) => heading = Some((level, String::new())),
            Event::Text(t) | Event::Code(t) => {
                if let Some((_, h)) = heading.as_mut() {
                    h.push_str(&t);
                }
            }
            Event::End(TagEnd::Heading(_)) => {
                let (level, text) = heading.take().expect("a heading ends after it starts");
                let base = slug(&text);
                // A repeated heading's anchor gets -1, -2, ... as GitHub and mdbook give it.
                let mut anchor = base.clone();
                let mut n = 0;
                while page.anchors.contains(&anchor) {
                    n += 1;
                    anchor = format!("{base}-{n}");
                }
                page.anchors.insert(anchor);
                page.headings.push((level, text));
            }
            Event::Start(Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. }) => {
                page.links.push(dest_url.into_string());
            }
            _ => {}
        }
    }
    page
}

/// A heading's anchor, as GitHub and mdbook make it: lowercase, spaces as `-`, punctuation
/// dropped.
fn slug(heading: &str) -> String {
    (heading.trim().to_lowercase().chars())
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// README.md and every Markdown file under docs/, by path relative to the repository.
fn pages() -> BTreeMap<PathBuf, Page> {
    let root = repo_root();
    let mut paths = vec![PathBuf::from("README.md")];
    for entry in std::fs::read_dir(root.join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            paths.push(path.strip_prefix(&root).unwrap().to_owned());
        }
    }
    (paths.into_iter())
        .map(|path| {
            let text = std::fs::read_to_string(root.join(&path))
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            (path, parse(&text))
        })
        .collect()
}

/// `link` from the page at `from`, as a path relative to the repository, with `..` resolved;
/// `None` when it climbs out of the repository.
fn resolve(from: &Path, link: &str) -> Option<PathBuf> {
    let mut resolved = PathBuf::new();
    for part in from.parent().unwrap().join(link).components() {
        match part {
            // Above the repository's root: not in it.
            Component::ParentDir => resolved.pop().then_some(())?,
            Component::Normal(p) => resolved.push(p),
            _ => {}
        }
    }
    Some(resolved)
}

/// Whether a link leaves the repository: a URL with a scheme.
fn is_external(link: &str) -> bool {
    link.split_once(':').is_some_and(|(scheme, _)| {
        !scheme.is_empty()
            && (scheme.chars()).all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
    })
}

#[test]
fn every_relative_link_and_anchor_leads_somewhere() {
    let root = repo_root();
    let pages = pages();
    let mut broken = Vec::new();
    let mut checked = 0;
    for (path, page) in &pages {
        for link in &page.links {
            if is_external(link) || link.is_empty() {
                continue;
            }
            checked += 1;
            let (file, anchor) = match link.split_once('#') {
                Some((file, anchor)) => (file, Some(anchor)),
                None => (link.as_str(), None),
            };
            let target = if file.is_empty() {
                path.clone()
            } else {
                match resolve(path, file) {
                    Some(target) => target,
                    None => {
                        broken.push(format!("{}: {link} leaves the repository", path.display()));
                        continue;
                    }
                }
            };
            // The book holds docs/ alone: a link of its pages out of it is broken there.
            if path.starts_with("docs") && !target.starts_with("docs") {
                broken.push(format!(
                    "{}: {link} leaves the book: name the file in a code span instead",
                    path.display()
                ));
                continue;
            }
            if !root.join(&target).exists() {
                broken.push(format!("{}: {link}: no such file", path.display()));
                continue;
            }
            let Some(anchor) = anchor else { continue };
            let anchors = match pages.get(&target) {
                Some(page) => &page.anchors,
                // A Markdown file outside the book (CHANGELOG.md, a crate's README).
                None if target.extension().is_some_and(|e| e == "md") => {
                    let text = std::fs::read_to_string(root.join(&target)).unwrap();
                    &parse(&text).anchors
                }
                None => {
                    broken.push(format!(
                        "{}: {link}: an anchor into a file that is not Markdown",
                        path.display()
                    ));
                    continue;
                }
            };
            if !anchors.contains(anchor) {
                broken.push(format!(
                    "{}: {link}: {} has no heading `#{anchor}`",
                    path.display(),
                    target.display()
                ));
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
    assert!(checked > 100, "only {checked} relative links found");
}

#[test]
fn every_page_of_the_book_is_in_its_summary() {
    let pages = pages();
    let summary = &pages[Path::new("docs/SUMMARY.md")];
    let listed: BTreeSet<PathBuf> = (summary.links.iter())
        .map(|link| resolve(Path::new("docs/SUMMARY.md"), link).unwrap())
        .collect();
    for path in pages.keys() {
        let in_book = path.starts_with("docs") && path != Path::new("docs/SUMMARY.md");
        assert!(
            !in_book || listed.contains(path),
            "{} is not in docs/SUMMARY.md: add it there, or readers of the book never find it",
            path.display()
        );
    }
    for link in &summary.links {
        assert!(
            !is_external(link) && !link.contains('#'),
            "docs/SUMMARY.md lists {link}: the summary lists pages of the book"
        );
    }
    // Each page has one title, which mdbook shows as the page's name.
    for (path, page) in &pages {
        let titles = (page.headings.iter())
            .filter(|(level, _)| *level == HeadingLevel::H1)
            .count();
        let summary = path == Path::new("docs/SUMMARY.md");
        assert!(
            summary || titles == 1,
            "{} has {titles} top-level headings; a page has one, its title",
            path.display()
        );
    }
}

#[test]
fn the_readme_is_a_first_read_with_the_quick_start() {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(
        lines < 200,
        "README.md has {lines} lines: it is what a newcomer reads first; move reference \
         material into the book (docs/)"
    );
    for command in [
        "scripts/demo   # installs the wasm32-wasip2 target, builds plinth, runs examples/hello: up, then destroy",
        "scripts/test   # the whole test suite (what CI runs); scripts/setup installs the pinned",
    ] {
        assert!(
            readme.lines().any(|l| l == command),
            "the README's quick start lost `{command}`"
        );
    }
    assert!(
        readme.contains("](docs/SUMMARY.md)"),
        "the README links the book"
    );
}

#[test]
fn the_cli_reference_is_what_plinth_prints() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_plinth"))
        .arg("cli-reference")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed = String::from_utf8(out.stdout).unwrap();
    let committed =
        std::fs::read_to_string(repo_root().join("docs/cli-reference.md")).unwrap_or_default();
    assert!(
        printed == committed,
        "docs/cli-reference.md is not what plinth's command definitions make: refresh it with \
         `cargo run --bin plinth -- cli-reference > docs/cli-reference.md`"
    );
    // Every visible command is in it, with its flags.
    for needle in [
        "## plinth new",
        "### plinth stack init",
        "#### plinth plugin key create",
        "`-s, --stack <STACK>`",
        "Environment: `PLINTH_STACK`",
    ] {
        assert!(printed.contains(needle), "{needle} is not in the reference");
    }
    assert!(
        !printed.contains("plinth cli-reference\n"),
        "a hidden command is shown"
    );
}

#[test]
fn links_resolve_as_the_checker_means() {
    assert_eq!(slug("Exit codes"), "exit-codes");
    assert_eq!(slug("`plinth new`: templates"), "plinth-new-templates");
    assert_eq!(
        resolve(Path::new("docs/ci.md"), "../README.md"),
        Some(PathBuf::from("README.md"))
    );
    assert_eq!(resolve(Path::new("docs/ci.md"), "../../x.md"), None);
    assert!(is_external("https://example.com/x.md"));
    assert!(!is_external("concepts.md#json-events"));
    let page = parse("# A\n## B\n## B\n[x](#b-1) ![i](images/i.png)\n");
    assert_eq!(
        page.anchors,
        BTreeSet::from(["a".into(), "b".into(), "b-1".into()])
    );
    assert_eq!(page.links, ["#b-1", "images/i.png"]);
}

//! Paths inside the root, as the user writes them: relative, never leaving the root, and kept in
//! one normal form so that `./a//b.txt` and `a/b.txt` are the same resource.

use std::fmt;

/// A normalized path relative to the root: `/`-separated names, none of them empty, `.` or `..`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RelPath(String);

impl RelPath {
    /// Validates and normalizes `path`; the error says what is wrong with it and what to write.
    pub(crate) fn parse(path: &str) -> Result<RelPath, String> {
        if path.trim().is_empty() {
            return Err(
                "must not be empty: give a path relative to the root, like `index.html`".into(),
            );
        }
        if path.contains('\0') {
            return Err("must not contain a NUL character".into());
        }
        if path.starts_with('/') {
            return Err(format!(
                "`{path}` is absolute: give a path relative to the root, like `site/index.html`"
            ));
        }
        if path.contains('\\') {
            return Err(format!(
                "`{path}` contains `\\`: separate directories with `/`"
            ));
        }
        let names: Vec<&str> = path
            .split('/')
            .filter(|name| !name.is_empty() && *name != ".")
            .collect();
        if names.contains(&"..") {
            return Err(format!(
                "`{path}` contains `..`: a path must stay inside the root"
            ));
        }
        if names.is_empty() {
            return Err(format!(
                "`{path}` names the root itself: give a file or directory inside it"
            ));
        }
        Ok(RelPath(names.join("/")))
    }

    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }

    /// The directory holding this path, unless it is directly in the root.
    pub(crate) fn parent(&self) -> Option<&str> {
        self.0.rsplit_once('/').map(|(parent, _)| parent)
    }
}

impl fmt::Display for RelPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(path: &str) -> String {
        RelPath::parse(path).unwrap().to_string()
    }

    fn err(path: &str) -> String {
        RelPath::parse(path).unwrap_err()
    }

    #[test]
    fn normalizes_dots_and_repeated_separators() {
        assert_eq!(ok("index.html"), "index.html");
        assert_eq!(ok("./site//css/./main.css"), "site/css/main.css");
        assert_eq!(ok("docs/"), "docs");
        assert_eq!(ok("..hidden/a..b"), "..hidden/a..b");
    }

    #[test]
    fn refuses_paths_that_leave_the_root() {
        assert!(err("/etc/passwd").contains("is absolute"));
        assert!(err("../outside").contains("contains `..`"));
        assert!(err("a/../../b").contains("contains `..`"));
        assert!(err("a/..").contains("contains `..`"));
    }

    #[test]
    fn refuses_empty_and_odd_paths() {
        assert!(err("").contains("must not be empty"));
        assert!(err("  ").contains("must not be empty"));
        assert!(err(".").contains("names the root itself"));
        assert!(err("./").contains("names the root itself"));
        assert!(err("a\\b").contains("separate directories with `/`"));
        assert!(err("a\0b").contains("NUL"));
    }

    #[test]
    fn parent_is_the_directory_part() {
        assert_eq!(RelPath::parse("a/b/c.txt").unwrap().parent(), Some("a/b"));
        assert_eq!(RelPath::parse("c.txt").unwrap().parent(), None);
    }
}

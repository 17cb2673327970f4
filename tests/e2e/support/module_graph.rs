//! The module graph of a crate, read from its sources: which module names which through
//! `use` and paths (`crate::…`, `super::…`, `self::…`, a child's name), a name re-exported by a
//! module followed to the module that defines it. Test modules (`#[cfg(test)]`) are left out.
//! Enough to find the circles between a crate's modules, not a Rust parser.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

/// A module, by its path from the crate root (the root is empty).
pub type Module = Vec<String>;

/// What one module names.
#[derive(Default)]
struct Names {
    /// The names its `use` declarations bring in, each with the absolute path it stands for.
    imports: HashMap<String, Module>,
    /// Every absolute path it names.
    paths: Vec<Module>,
}

/// The modules of the crate whose sources are in `src`, each with the modules it names.
pub fn graph(src: &Path) -> BTreeMap<Module, BTreeSet<Module>> {
    let mut sources = BTreeMap::new();
    collect(src, src, &mut sources);
    let modules: BTreeSet<Module> = sources.keys().cloned().collect();
    let names: BTreeMap<Module, Names> = (sources.iter())
        .map(|(module, text)| (module.clone(), names(module, &code_of(text), &modules)))
        .collect();
    (names.iter())
        .map(|(module, n)| {
            let named = (n.paths.iter())
                .filter_map(|path| resolve(path, &modules, &names, 0))
                .filter(|m| m != module && !m.is_empty())
                .collect();
            (module.clone(), named)
        })
        .collect()
}

/// The circles of `graph`: each set of two or more modules that all reach one another.
pub fn circles(graph: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<BTreeSet<Module>> {
    let reach = |from: &Module| {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.clone()];
        while let Some(m) = todo.pop() {
            for next in graph.get(&m).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    todo.push(next.clone());
                }
            }
        }
        seen
    };
    let reached: BTreeMap<&Module, BTreeSet<Module>> =
        graph.keys().map(|m| (m, reach(m))).collect();
    let mut circles: Vec<BTreeSet<Module>> = Vec::new();
    for (module, from) in &reached {
        let circle: BTreeSet<Module> = (from.iter())
            .filter(|other| reached[other].contains(*module))
            .cloned()
            .collect();
        if circle.len() > 1 && !circles.contains(&circle) {
            circles.push(circle);
        }
    }
    circles
}

/// The `.rs` files under `dir`, by module path: `lib.rs`/`main.rs` the root, `a/mod.rs` and
/// `a.rs` the module `a`.
fn collect(src: &Path, dir: &Path, out: &mut BTreeMap<Module, String>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            collect(src, &path, out);
            continue;
        }
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let relative = path.strip_prefix(src).unwrap().with_extension("");
        let mut module: Module = (relative.components())
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if matches!(
            module.last().map(String::as_str),
            Some("mod" | "lib" | "main")
        ) {
            module.pop();
        }
        out.insert(module, std::fs::read_to_string(&path).unwrap());
    }
}

/// `text` without comments, string and character literals, and test modules.
fn code_of(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut code = String::new();
    let mut i = 0;
    let at = |i: usize, s: &str| chars[i..].iter().take(s.len()).copied().eq(s.chars());
    while i < chars.len() {
        if at(i, "//") {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if at(i, "/*") {
            i += 2;
            while i < chars.len() && !at(i, "*/") {
                i += 1;
            }
            i += 2;
        } else if chars[i] == 'r' && (at(i + 1, "\"") || at(i + 1, "#\"") || at(i + 1, "##\"")) {
            let hashes = chars[i + 1..].iter().take_while(|c| **c == '#').count();
            let end = format!("\"{}", "#".repeat(hashes));
            i += 2 + hashes;
            while i < chars.len() && !at(i, &end) {
                i += 1;
            }
            i += end.len();
            code.push_str("\"\"");
        } else if chars[i] == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            code.push_str("\"\"");
        } else if chars[i] == '\'' && at(i + 1, "\\") {
            // An escaped character literal ('\'', '\\', '\u{7f}').
            i += 1;
            while i < chars.len() && chars[i] != '\'' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
        } else if chars[i] == '\'' && at(i + 2, "'") {
            // A character literal ('"'), not a lifetime ('a).
            i += 3;
        } else {
            code.push(chars[i]);
            i += 1;
        }
    }
    without_test_modules(&code)
}

/// `code` without the `#[cfg(test)]` modules, inline or in files of their own.
fn without_test_modules(code: &str) -> String {
    let mut out = String::new();
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let after = rest[at + "#[cfg(test)]".len()..].trim_start();
        let Some(module) = after.strip_prefix("mod ") else {
            rest = &rest[at + 1..];
            out.push('#');
            continue;
        };
        let open = module.find(['{', ';']).expect("a module declaration ends");
        if module.as_bytes()[open] == b';' {
            rest = &module[open + 1..];
            continue;
        }
        let mut depth = 0;
        let end = (module[open..].char_indices())
            .find(|&(_, c)| {
                depth += match c {
                    '{' => 1,
                    '}' => -1,
                    _ => 0,
                };
                depth == 0
            })
            .map_or(module.len(), |(i, _)| open + i + 1);
        rest = &module[end..];
    }
    out + rest
}

/// The names `module`'s `code` uses and imports, as absolute paths.
fn names(module: &Module, code: &str, modules: &BTreeSet<Module>) -> Names {
    let mut names = Names::default();
    let words: Vec<(usize, &str)> = words(code);
    // Where the `use` declaration being read ends: its paths are read as a tree, not one by one.
    let mut use_end = 0;
    for (i, &(at, word)) in words.iter().enumerate() {
        let starts_path = i == 0 || !code[..at].trim_end().ends_with("::");
        if at < use_end {
            continue;
        }
        if word == "use" && starts_path {
            let end = code[at..].find(';').map_or(code.len(), |e| at + e);
            use_end = end;
            for (name, path) in use_tree(&code[at + 3..end]) {
                if let Some(path) = absolute(module, &path, modules) {
                    names.paths.push(path.clone());
                    names.imports.insert(name, path);
                }
            }
        } else if starts_path && code[at + word.len()..].starts_with("::") {
            let path = path_at(&code[at..]);
            if let Some(path) = absolute(module, &path, modules) {
                names.paths.push(path);
            }
        }
    }
    names
}

/// The identifiers of `code` with their offsets.
fn words(code: &str) -> Vec<(usize, &str)> {
    let mut words = Vec::new();
    let mut start = None;
    for (i, c) in code.char_indices().chain([(code.len(), ' ')]) {
        match (start, c.is_alphanumeric() || c == '_') {
            (None, true) => start = Some(i),
            (Some(s), false) => {
                words.push((s, &code[s..i]));
                start = None;
            }
            _ => {}
        }
    }
    words
}

/// The path `a::b::c` at the start of `code`.
fn path_at(code: &str) -> Vec<String> {
    let mut path = Vec::new();
    let mut rest = code;
    loop {
        let len = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        path.push(rest[..len].to_owned());
        match rest[len..].strip_prefix("::") {
            Some(next) if next.starts_with(|c: char| c.is_alphanumeric() || c == '_') => {
                rest = next;
            }
            _ => return path,
        }
    }
}

/// The `(name, path)` pairs a use tree (`a::{b, c::d as e}`) brings in; globs bring none.
fn use_tree(tree: &str) -> Vec<(String, Vec<String>)> {
    let tree: String = tree.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut out = Vec::new();
    expand(&tree, Vec::new(), &mut out);
    out
}

fn expand(tree: &str, prefix: Vec<String>, out: &mut Vec<(String, Vec<String>)>) {
    let tree = tree.trim();
    if let Some(open) = tree.find('{') {
        let mut prefix = prefix;
        prefix.extend(segments(&tree[..open]));
        let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
        let mut depth = 0;
        let mut start = 0;
        for (i, c) in inner.char_indices().chain([(inner.len(), ',')]) {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    expand(&inner[start..i], prefix.clone(), out);
                    start = i + 1;
                }
                _ => {}
            }
        }
        return;
    }
    let (path, alias) = match tree.split_once(" as ") {
        Some((path, alias)) => (path, Some(alias.trim())),
        None => (tree, None),
    };
    let mut full = prefix;
    let own = segments(path);
    if own.is_empty() || own.last().is_some_and(|s| s == "*") {
        return;
    }
    if own != ["self"] {
        full.extend(own);
    }
    let name = alias.map_or_else(|| full.last().cloned().unwrap_or_default(), str::to_owned);
    out.push((name, full));
}

fn segments(path: &str) -> Vec<String> {
    (path.split("::"))
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// `path` as named in `module`, from the crate root; none for a path outside the crate.
fn absolute(module: &Module, path: &[String], modules: &BTreeSet<Module>) -> Option<Module> {
    let (first, rest) = path.split_first()?;
    let mut base = match first.as_str() {
        "crate" => Vec::new(),
        "self" => module.clone(),
        "super" => module[..module.len().checked_sub(1)?].to_vec(),
        child => {
            let mut child_path = module.clone();
            child_path.push(child.to_owned());
            if !modules.contains(&child_path) {
                return None;
            }
            return Some(child_path.into_iter().chain(rest.iter().cloned()).collect());
        }
    };
    let mut rest = rest;
    while let Some(("super", next)) = rest.split_first().map(|(s, n)| (s.as_str(), n)) {
        base.pop();
        rest = next;
    }
    base.extend(rest.iter().cloned());
    Some(base)
}

/// The module that defines what `path` names: its longest prefix that is a module, followed
/// through that module's imports when it names one of them.
fn resolve(
    path: &[String],
    modules: &BTreeSet<Module>,
    names: &BTreeMap<Module, Names>,
    depth: usize,
) -> Option<Module> {
    let n = (0..=path.len())
        .rev()
        .find(|n| modules.contains(&path[..*n]))?;
    let module = path[..n].to_vec();
    if let Some(next) = path.get(n)
        && let Some(imported) = names[&module].imports.get(next)
        && depth < 16
    {
        let mut through = imported.clone();
        through.extend(path[n + 1..].iter().cloned());
        return resolve(&through, modules, names, depth + 1).or(Some(module));
    }
    Some(module)
}

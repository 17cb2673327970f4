//! `plinth stack graph`: the stack's resources as a Graphviz DOT graph, an edge from each
//! dependency to what depends on it and a dashed one from each parent to its children.
//! Names come from the state: each is quoted and escaped so that no name can end its string
//! or add to the graph.

use std::fmt::Write;

use plinth_engine::resource::ResourceState;
use plinth_engine::shown::escape_controls;

/// The DOT text of `resources` (of stack `stack`).
pub fn dot(stack: &str, resources: &[ResourceState]) -> String {
    let mut out = format!("strict digraph {} {{\n", quoted(stack));
    out.push_str("  node [shape=box];\n");
    for r in resources {
        let label = format!("{}\n{}", r.ty, r.urn.name());
        let _ = writeln!(
            out,
            "  {} [label={}];",
            quoted(r.urn.as_str()),
            quoted(&label)
        );
    }
    for r in resources {
        for dependency in &r.dependencies {
            let _ = writeln!(
                out,
                "  {} -> {};",
                quoted(dependency.as_str()),
                quoted(r.urn.as_str())
            );
        }
        if let Some(parent) = &r.parent {
            let _ = writeln!(
                out,
                "  {} -> {} [style=dashed, color=gray];",
                quoted(parent.as_str()),
                quoted(r.urn.as_str())
            );
        }
    }
    out.push_str("}\n");
    out
}

/// `text` as a DOT double-quoted string: control characters shown as `\u{…}` text, newlines
/// as DOT's `\n`, and `\` and `"` escaped so that the string ends only where it should.
fn quoted(text: &str) -> String {
    let mut out = String::from("\"");
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push_str("\\n");
        }
        for c in escape_controls(line).chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                c => out.push(c),
            }
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_keeps_every_name_inside_its_string() {
        assert_eq!(quoted("a"), "\"a\"");
        assert_eq!(quoted("a\"]; x -> y; \""), "\"a\\\"]; x -> y; \\\"\"");
        assert_eq!(quoted("end\\"), "\"end\\\\\"");
        assert_eq!(quoted("t\nname"), "\"t\\nname\"");
        assert!(!quoted("a\u{1b}[2J").contains('\u{1b}'));
    }
}

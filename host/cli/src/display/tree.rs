//! The tree layout: steps collected as they finish, then printed under their parents — the
//! stack's root, its components, their children — siblings in type and name order so that the
//! same plan always reads the same.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use plinth_engine::events::StepInfo;
use plinth_engine::urn::Urn;

use super::step_line::step_line_in_tree;

/// One resource of the tree.
struct Node {
    step: StepInfo,
    duration: Option<Duration>,
    /// Lines shown under the resource's own: inputs, changes, outputs.
    details: Vec<String>,
    /// The output lines of a component that registered outputs.
    outputs: Vec<String>,
    /// Those outputs differ from the ones recorded before.
    outputs_changed: bool,
}

/// The steps of one phase, arranged by parent.
#[derive(Default)]
pub struct Tree {
    nodes: HashMap<Urn, Node>,
    /// Outputs registered by a component whose step has not been seen (yet).
    orphan_outputs: HashMap<Urn, (Vec<String>, bool)>,
}

impl Tree {
    pub fn step(&mut self, step: StepInfo, duration: Option<Duration>, details: Vec<String>) {
        let urn = step.urn.clone();
        let (outputs, outputs_changed) = self.orphan_outputs.remove(&urn).unwrap_or_default();
        // A replaced resource's delete comes after its create: the tree keeps the create.
        if self.nodes.get(&urn).is_some_and(|n| n.step.op.is_change()) {
            return;
        }
        let node = Node {
            step,
            duration,
            details,
            outputs,
            outputs_changed,
        };
        self.nodes.insert(urn, node);
    }

    /// The outputs a component registered, as lines, and whether they changed.
    pub fn outputs(&mut self, urn: Urn, lines: Vec<String>, changed: bool) {
        match self.nodes.get_mut(&urn) {
            Some(node) => (node.outputs, node.outputs_changed) = (lines, changed),
            None => {
                self.orphan_outputs.insert(urn, (lines, changed));
            }
        }
    }

    /// The tree's lines: every resource that changes (or, with `show_sames`, every resource),
    /// under the ancestors that lead to it.
    pub fn lines(&self, show_sames: bool) -> Vec<String> {
        let mut children: BTreeMap<Option<&Urn>, Vec<&Urn>> = BTreeMap::new();
        for (urn, node) in &self.nodes {
            // A parent the phase never reached (not targeted, say) leaves its child on top.
            let parent = (node.step.parent.as_ref()).filter(|p| self.nodes.contains_key(*p));
            children.entry(parent).or_default().push(urn);
        }
        for list in children.values_mut() {
            list.sort_by(|a, b| (a.ty(), a.name()).cmp(&(b.ty(), b.name())));
        }
        let mut visible = HashMap::new();
        let tops = children.get(&None).cloned().unwrap_or_default();
        for top in &tops {
            self.mark_visible(top, &children, show_sames, &mut visible);
        }
        let tops: Vec<&Urn> = tops.into_iter().filter(|u| visible[*u]).collect();
        let width = (tops.iter())
            .map(|top| type_width(top, 0, &children, &visible))
            .max()
            .unwrap_or(0)
            .max(28);
        let mut lines = Vec::new();
        for top in tops {
            self.push_lines(top, "", None, &children, &visible, width, &mut lines);
        }
        lines
    }

    /// Whether `urn` is shown: it changes, its outputs do, or something under it is shown.
    fn mark_visible<'a>(
        &self,
        urn: &'a Urn,
        children: &BTreeMap<Option<&'a Urn>, Vec<&'a Urn>>,
        show_sames: bool,
        visible: &mut HashMap<&'a Urn, bool>,
    ) -> bool {
        let node = &self.nodes[urn];
        let mut shown = show_sames || node.step.op.is_change() || node.outputs_changed;
        for child in children.get(&Some(urn)).into_iter().flatten() {
            shown |= self.mark_visible(child, children, show_sames, visible);
        }
        visible.insert(urn, shown);
        shown
    }

    #[allow(clippy::too_many_arguments)]
    fn push_lines(
        &self,
        urn: &Urn,
        indent: &str,
        last: Option<bool>,
        children: &BTreeMap<Option<&Urn>, Vec<&Urn>>,
        visible: &HashMap<&Urn, bool>,
        width: usize,
        lines: &mut Vec<String>,
    ) {
        let node = &self.nodes[urn];
        let (branch, below) = match last {
            None => (String::new(), String::new()),
            Some(true) => (format!("{indent}└─ "), format!("{indent}   ")),
            Some(false) => (format!("{indent}├─ "), format!("{indent}│  ")),
        };
        lines.push(step_line_in_tree(&node.step, node.duration, &branch, width));
        let shown: Vec<&Urn> = (children.get(&Some(urn)).into_iter().flatten())
            .filter(|u| visible[*u])
            .copied()
            .collect();
        // Details line up under the resource's type, behind the tree's continuing lines.
        let rail = if shown.is_empty() {
            below.clone()
        } else {
            format!("{below}│  ")
        };
        for line in node.details.iter().chain(&node.outputs) {
            lines.push(format!("     {rail}{}", line.trim_start()));
        }
        for (i, child) in shown.iter().enumerate() {
            let last = i + 1 == shown.len();
            self.push_lines(child, &below, Some(last), children, visible, width, lines);
        }
    }
}

/// The width the type column needs for `urn` at `depth` and what is shown under it: three
/// columns of tree branches per level, then the type.
fn type_width(
    urn: &Urn,
    depth: usize,
    children: &BTreeMap<Option<&Urn>, Vec<&Urn>>,
    visible: &HashMap<&Urn, bool>,
) -> usize {
    let own = depth * 3 + urn.ty().chars().count();
    (children.get(&Some(urn)).into_iter().flatten())
        .filter(|u| visible[*u])
        .map(|child| type_width(child, depth + 1, children, visible))
        .fold(own, usize::max)
}

#[cfg(test)]
mod tests {
    use plinth_engine::events::StepOp;
    use plinth_engine::urn::stack_urn;

    use super::*;

    fn step(op: StepOp, parent: Option<&Urn>, ty: &str, name: &str) -> StepInfo {
        let parent_type = parent.and_then(|p| p.type_for_children());
        StepInfo {
            op,
            urn: Urn::new("dev", "p", parent_type, ty, name),
            parent: parent.cloned(),
            custom: true,
            old_inputs: None,
            new_inputs: None,
            changed: Vec::new(),
            replaces: Vec::new(),
            write_only: Vec::new(),
        }
    }

    #[test]
    fn children_are_listed_under_their_parents_and_sames_only_as_ancestors() {
        console::set_colors_enabled(false);
        let root = stack_urn("p", "dev");
        let mut tree = Tree::default();
        let group = step(StepOp::Same, Some(&root), "my:Group", "g");
        let group_urn = group.urn.clone();
        // Finishing order is not display order.
        tree.step(
            step(StepOp::Create, Some(&group_urn), "t:Echo", "b"),
            None,
            vec![],
        );
        tree.step(
            step(StepOp::Same, None, "plinth:providers:t", "default"),
            None,
            vec![],
        );
        tree.step(
            step(StepOp::Create, Some(&root), "t:Echo", "top"),
            None,
            vec![],
        );
        tree.step(
            step(StepOp::Update, Some(&group_urn), "t:Echo", "a"),
            None,
            vec!["       value: \"1\" => \"2\"".into()],
        );
        tree.step(group, None, vec![]);
        tree.step(
            step(StepOp::Same, Some(&root), "t:Echo", "quiet"),
            None,
            vec![],
        );
        tree.step(
            step(StepOp::Same, None, "plinth:plinth:Stack", "p-dev"),
            None,
            vec![],
        );
        let lines: Vec<String> = (tree.lines(false).iter())
            .map(|l| l.trim_end().to_owned())
            .collect();
        let expected = [
            "     plinth:plinth:Stack          p-dev                same",
            "     ├─ my:Group                  g                    same",
            "  ~  │  ├─ t:Echo                 a                    update",
            "     │  │  value: \"1\" => \"2\"",
            "  +  │  └─ t:Echo                 b                    create",
            "  +  └─ t:Echo                    top                  create",
        ];
        assert_eq!(lines, expected, "{}", lines.join("\n"));
        // With --show-sames, everything.
        let all = tree.lines(true);
        assert!(
            all.iter().any(|l| l.contains("quiet")) && all.iter().any(|l| l.contains("default"))
        );
    }

    #[test]
    fn nothing_changing_shows_nothing() {
        let mut tree = Tree::default();
        tree.step(
            step(StepOp::Same, None, "plinth:plinth:Stack", "p-dev"),
            None,
            vec![],
        );
        assert!(tree.lines(false).is_empty());
    }
}

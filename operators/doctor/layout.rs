//! Where the picture puts each operator: scopes nested as boxes, and in
//! each scope its children in columns by their longest path from the
//! scope's sources (a loop's edge back is left out of the columns), so
//! that records flow left to right.

use std::collections::{BTreeMap, BTreeSet};

/// A box of the picture, in pixels from the picture's top left.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Placed {
    pub(crate) x: f64,
    pub(crate) y: f64,
    pub(crate) width: f64,
    pub(crate) height: f64,
}

/// An operator's box.
pub(crate) const NODE: (f64, f64) = (190.0, 46.0);
/// Space between columns and between boxes of a column.
const GAP: (f64, f64) = (46.0, 14.0);
/// Space inside a scope's box: around its children, and above for its name.
const PAD: f64 = 12.0;
const TITLE: f64 = 18.0;

/// Every operator and scope's box, by address: `nodes` are the addresses
/// (operators and scopes alike), `edges` the channels' source and target
/// addresses. Dataflows go one under another.
pub(crate) fn place(nodes: &BTreeSet<Vec<usize>>, edges: &[(Vec<usize>, Vec<usize>)]) -> BTreeMap<Vec<usize>, Placed> {
    let mut placed = BTreeMap::new();
    let roots: Vec<Vec<usize>> = nodes.iter().filter(|a| a.len() == 1).cloned().collect();
    let mut y = 0.0;
    for root in roots {
        let (width, height) = size(&root, nodes, edges, &mut placed);
        shift(&root, 0.0, y, &mut placed);
        placed.insert(
            root.clone(),
            Placed {
                x: 0.0,
                y,
                width,
                height,
            },
        );
        y += height + GAP.1;
    }
    placed
}

/// Lays out the children of `scope` (their boxes relative to the scope's
/// top left, in `placed`) and returns the scope's size.
fn size(
    scope: &[usize],
    nodes: &BTreeSet<Vec<usize>>,
    edges: &[(Vec<usize>, Vec<usize>)],
    placed: &mut BTreeMap<Vec<usize>, Placed>,
) -> (f64, f64) {
    let children: Vec<Vec<usize>> = nodes
        .iter()
        .filter(|a| a.len() == scope.len() + 1 && a.starts_with(scope))
        .cloned()
        .collect();
    if children.is_empty() {
        return NODE;
    }
    let sizes: Vec<(f64, f64)> = children.iter().map(|child| size(child, nodes, edges, placed)).collect();
    let columns = columns(scope, &children, edges);
    let mut x = PAD;
    let mut height: f64 = 0.0;
    for column in 0..=columns.iter().copied().max().unwrap_or(0) {
        let mut y = PAD + TITLE;
        let mut width: f64 = 0.0;
        for (index, child) in children
            .iter()
            .enumerate()
            .filter(|&(index, _)| columns[index] == column)
        {
            let (w, h) = sizes[index];
            shift(child, x, y, placed);
            placed.insert(
                child.clone(),
                Placed {
                    x,
                    y,
                    width: w,
                    height: h,
                },
            );
            y += h + GAP.1;
            width = width.max(w);
        }
        height = height.max(y - GAP.1);
        x += width + GAP.0;
    }
    (x - GAP.0 + PAD, height + PAD)
}

/// Each child's column: its longest path from the scope's sources, over
/// the edges between children (those leading back in a depth-first walk
/// left out).
fn columns(scope: &[usize], children: &[Vec<usize>], edges: &[(Vec<usize>, Vec<usize>)]) -> Vec<usize> {
    let depth = scope.len() + 1;
    let index_of = |address: &Vec<usize>| -> Option<usize> {
        if address.len() < depth || !address.starts_with(scope) {
            return None;
        }
        children.iter().position(|child| child[..] == address[..depth])
    };
    let mut next: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); children.len()];
    for (source, target) in edges {
        if let (Some(from), Some(to)) = (index_of(source), index_of(target))
            && from != to
        {
            next[from].insert(to);
        }
    }
    // Depth-first, in address order: an edge to a child still on the path
    // leads back.
    let (mut state, mut forward) = (vec![0u8; children.len()], vec![Vec::new(); children.len()]);
    for start in 0..children.len() {
        if state[start] != 0 {
            continue;
        }
        state[start] = 1;
        let mut stack = vec![(start, next[start].iter().copied().collect::<Vec<_>>())];
        while let Some((node, pending)) = stack.last_mut() {
            let node = *node;
            match pending.pop() {
                Some(to) if state[to] == 0 => {
                    forward[node].push(to);
                    state[to] = 1;
                    stack.push((to, next[to].iter().copied().collect()));
                }
                Some(to) if state[to] == 2 => forward[node].push(to),
                Some(_) => {}
                None => {
                    state[node] = 2;
                    stack.pop();
                }
            }
        }
    }
    // Longest path over the forward edges, in a topological order (the
    // reverse of finishing, recomputed simply by relaxing until stable:
    // the graphs are small).
    let mut column = vec![0usize; children.len()];
    let mut changed = true;
    while changed {
        changed = false;
        for from in 0..children.len() {
            for &to in &forward[from] {
                if column[to] < column[from] + 1 {
                    column[to] = column[from] + 1;
                    changed = true;
                }
            }
        }
    }
    column
}

/// Moves every box inside `scope` by (`x`, `y`).
fn shift(scope: &[usize], x: f64, y: f64, placed: &mut BTreeMap<Vec<usize>, Placed>) {
    for (_, inside) in placed
        .iter_mut()
        .filter(|(address, _)| address.len() > scope.len() && address.starts_with(scope))
    {
        inside.x += x;
        inside.y += y;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chain_runs_left_to_right_and_a_loop_nests_without_overlap() {
        // Dataflow 0: 1 -> 2 (a loop scope of 1 -> 2 -> back to 1) -> 3.
        let nodes: BTreeSet<Vec<usize>> = [
            vec![0],
            vec![0, 1],
            vec![0, 2],
            vec![0, 2, 1],
            vec![0, 2, 2],
            vec![0, 3],
        ]
        .into_iter()
        .collect();
        let edges = vec![
            (vec![0, 1], vec![0, 2]),
            (vec![0, 2], vec![0, 3]),
            (vec![0, 2, 1], vec![0, 2, 2]),
            (vec![0, 2, 2], vec![0, 2, 1]),
        ];
        let placed = place(&nodes, &edges);
        let at = |address: &[usize]| placed[&address.to_vec()];
        assert!(at(&[0, 1]).x < at(&[0, 2]).x && at(&[0, 2]).x < at(&[0, 3]).x);
        // The loop's operators sit inside its box, one after the other.
        let (scope, first, second) = (at(&[0, 2]), at(&[0, 2, 1]), at(&[0, 2, 2]));
        for inner in [first, second] {
            assert!(inner.x > scope.x && inner.x + inner.width < scope.x + scope.width);
            assert!(inner.y > scope.y && inner.y + inner.height < scope.y + scope.height);
        }
        assert!(first.x < second.x);
        // Nothing overlaps the scope's neighbours.
        assert!(at(&[0, 1]).x + at(&[0, 1]).width < scope.x);
        assert!(scope.x + scope.width < at(&[0, 3]).x);
    }
}

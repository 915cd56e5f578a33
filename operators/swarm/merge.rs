//! Merging a worker's adjacent partitions whose union is a rectangle.

use std::collections::{BTreeMap, HashMap};

use super::geometry::CellRect;
use super::ids::{IdMint, PartitionId};
use super::index::PlanChange;

/// The merges of `owner`'s partitions whose union is a rectangle, until no
/// pair is left that `join` accepts; new ids come from `mint`. Each
/// partition carries a weight `W`; `join` returns the merged partition's
/// weight, or `None` to refuse the merge (`|_, _| Some(())` merges
/// everything it can). Only partitions of `owner` are considered.
///
/// Two partitions form a rectangle exactly when one's right (or bottom) edge
/// is the other's left (or top) edge, whole: partitions are found by their
/// edges, so a pass costs O(P log P) and passes repeat only while merges
/// open new pairs.
pub fn plan_merges<W>(
    partitions: impl IntoIterator<Item = (PartitionId, CellRect, usize, W)>,
    owner: usize,
    mint: &mut IdMint,
    mut join: impl FnMut(&W, &W) -> Option<W>,
) -> Vec<PlanChange> {
    let mut mine: BTreeMap<PartitionId, (CellRect, W)> = BTreeMap::new();
    let mut edges = Edges::default();
    for (id, rect, o, weight) in partitions {
        if o == owner {
            edges.insert(id, &rect);
            mine.insert(id, (rect, weight));
        }
    }
    let mut changes = Vec::new();
    loop {
        let before = changes.len();
        let mut cursor = 0;
        while let Some((&first, (rect, weight))) = mine.range(cursor..).next() {
            cursor = first + 1;
            let found = edges.neighbours(rect).into_iter().flatten().find_map(|second| {
                let (other, other_weight) = &mine[&second];
                let union = rect.union_if_rectangle(other)?;
                join(weight, other_weight).map(|merged| (second, union, merged))
            });
            let Some((second, union, merged)) = found else { continue };
            let into = mint.mint();
            for id in [first, second] {
                let (rect, _) = mine.remove(&id).expect("listed");
                edges.remove(&rect);
            }
            edges.insert(into, &union);
            mine.insert(into, (union, merged));
            changes.push(PlanChange::Merge { first, second, into });
        }
        if changes.len() == before {
            return changes;
        }
    }
}

/// Partitions by their left edge (rows, first column) and their top edge
/// (columns, first row).
#[derive(Default)]
struct Edges {
    left: HashMap<(u32, u32, u32), PartitionId>,
    top: HashMap<(u32, u32, u32), PartitionId>,
}

impl Edges {
    fn insert(&mut self, id: PartitionId, rect: &CellRect) {
        self.left.insert((rect.row0, rect.row1, rect.col0), id);
        self.top.insert((rect.col0, rect.col1, rect.row0), id);
    }

    fn remove(&mut self, rect: &CellRect) {
        self.left.remove(&(rect.row0, rect.row1, rect.col0));
        self.top.remove(&(rect.col0, rect.col1, rect.row0));
    }

    /// The partitions whose left edge is `rect`'s right one, and whose top
    /// edge is its bottom one.
    fn neighbours(&self, rect: &CellRect) -> [Option<PartitionId>; 2] {
        [
            self.left.get(&(rect.row0, rect.row1, rect.col1 + 1)).copied(),
            self.top.get(&(rect.col0, rect.col1, rect.row1 + 1)).copied(),
        ]
    }
}

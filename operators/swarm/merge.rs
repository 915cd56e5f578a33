//! Merging a worker's adjacent partitions whose union is a rectangle.

use std::collections::BTreeMap;

use super::geometry::CellRect;
use super::ids::{IdMint, PartitionId};
use super::index::PlanChange;

/// The merges that leave `owner` with no two partitions whose union is a
/// rectangle, applied greedily in id order; new ids come from `mint`. Only
/// partitions of `owner` are considered.
pub fn plan_merges(
    partitions: impl IntoIterator<Item = (PartitionId, CellRect, usize)>,
    owner: usize,
    mint: &mut IdMint,
) -> Vec<PlanChange> {
    let mut mine: BTreeMap<PartitionId, CellRect> = partitions
        .into_iter()
        .filter(|&(_, _, o)| o == owner)
        .map(|(id, rect, _)| (id, rect))
        .collect();
    let mut changes = Vec::new();
    loop {
        let pair = mine.iter().find_map(|(&a, ra)| {
            mine.range(a + 1..)
                .find_map(|(&b, rb)| ra.union_if_rectangle(rb).map(|union| (a, b, union)))
        });
        let Some((first, second, union)) = pair else { break };
        let into = mint.mint();
        mine.remove(&first);
        mine.remove(&second);
        mine.insert(into, union);
        changes.push(PlanChange::Merge { first, second, into });
    }
    changes
}

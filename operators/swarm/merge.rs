//! Merging a worker's adjacent partitions whose union is a rectangle.

use std::collections::BTreeMap;

use super::geometry::CellRect;
use super::ids::{IdMint, PartitionId};
use super::index::PlanChange;

/// The merges of `owner`'s partitions whose union is a rectangle, applied
/// greedily in id order until no pair is left that `join` accepts; new ids
/// come from `mint`. Each partition carries a weight `W`; `join` returns the
/// merged partition's weight, or `None` to refuse the merge (`|_, _|
/// Some(())` merges everything it can). Only partitions of `owner` are
/// considered.
pub fn plan_merges<W>(
    partitions: impl IntoIterator<Item = (PartitionId, CellRect, usize, W)>,
    owner: usize,
    mint: &mut IdMint,
    mut join: impl FnMut(&W, &W) -> Option<W>,
) -> Vec<PlanChange> {
    let mut mine: BTreeMap<PartitionId, (CellRect, W)> = partitions
        .into_iter()
        .filter(|&(_, _, o, _)| o == owner)
        .map(|(id, rect, _, weight)| (id, (rect, weight)))
        .collect();
    let mut changes = Vec::new();
    loop {
        let pair = mine.iter().find_map(|(&a, (ra, wa))| {
            mine.range(a + 1..).find_map(|(&b, (rb, wb))| {
                let union = ra.union_if_rectangle(rb)?;
                join(wa, wb).map(|weight| (a, b, union, weight))
            })
        });
        let Some((first, second, union, weight)) = pair else {
            break;
        };
        let into = mint.mint();
        mine.remove(&first);
        mine.remove(&second);
        mine.insert(into, (union, weight));
        changes.push(PlanChange::Merge { first, second, into });
    }
    changes
}

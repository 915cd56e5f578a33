//! The opening plan (ours): epoch 0 planned from its own records. Before
//! any round has been measured the coordinator knows only what the
//! workers counted of epoch 0, cell by cell; a partition heavier than a
//! worker's fair share is shared over as many workers as it needs, and a
//! worker the initial plan still loads beyond the tolerance hands whole
//! partitions to the least loaded. No partition holds state yet, so the
//! changes migrate nothing.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::cost::CostModel;
use super::geometry::Cell;
use super::ids::PartitionId;
use super::index::{GlobalIndex, PlanChange, SHARE_WEIGHT};
use super::stats::Totals;

/// The most loaded worker the opening plan leaves alone, as a multiple
/// of the mean: the balance SWARM's rounds hold at 16–64 workers.
pub const OPENING_TOLERANCE: f64 = 1.1;

/// What one cell received in epoch 0, over every worker.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CellCount {
    /// Points in the cell.
    pub points: u64,
    /// Queries registered over the cell.
    pub queries: u64,
}

impl CellCount {
    /// The work `model` expects of the cell: each point checked against
    /// each query over it, and each object handled once.
    pub fn work(&self, model: &dyn CostModel) -> f64 {
        let (points, queries) = (self.points as f64, self.queries as f64);
        model.work(&Totals {
            n: points,
            q: queries,
            rn: points,
            rq: queries,
            c: points * queries,
            rc: points * queries,
        })
    }
}

/// The changes that balance `index` (an initial plan: no partition shared)
/// over `workers` for the cells' expected `work`: each partition heavier
/// than the mean shared evenly over ⌈work ÷ mean⌉ holders (the owner and
/// the least loaded), then, while a worker carries more than `tolerance`
/// × the mean, the whole partition of it that best evens it with the
/// least loaded worker moved there. Nothing when there is no work.
///
/// ```
/// use std::collections::BTreeMap;
/// use equipoise::swarm::plan::{plan_opening, Cell, GlobalIndex, PlanChange};
/// use equipoise::swarm::{Grid, Rect};
///
/// let grid = Grid::new(Rect::new(0.0, 0.0, 4.0, 4.0)?, 4, 4)?;
/// let (index, _) = GlobalIndex::fine(grid, 4)?;
/// // One cell carries 20 units of work, the other fifteen 1 each.
/// let mut work = BTreeMap::new();
/// for row in 0..4 {
///     for col in 0..4 {
///         work.insert(Cell { row, col }, if (row, col) == (0, 0) { 20.0 } else { 1.0 });
///     }
/// }
/// let changes = plan_opening(&index, &work, 4, 1.1);
/// let hot = index.at(Cell { row: 0, col: 0 }).0;
/// let shares = changes.iter().filter(|c| matches!(c, PlanChange::Share { id, .. } if *id == hot));
/// assert_eq!(shares.count(), 2); // 20 of 35 over a mean of 8.75: three holders
/// # Ok::<(), equipoise::common::Error>(())
/// ```
pub fn plan_opening(
    index: &GlobalIndex,
    work: &BTreeMap<Cell, f64>,
    workers: usize,
    tolerance: f64,
) -> Vec<PlanChange> {
    let mut partitions: BTreeMap<PartitionId, f64> = BTreeMap::new();
    for (&cell, &w) in work {
        *partitions.entry(index.at(cell).0).or_default() += w;
    }
    let mut loads = vec![0.0; workers];
    for (&id, &w) in &partitions {
        if let Some(info) = index.info(id).filter(|info| info.owner < workers) {
            loads[info.owner] += w;
        }
    }
    let total: f64 = loads.iter().sum();
    if workers < 2 || total <= 0.0 {
        return Vec::new();
    }
    let mean = total / workers as f64;
    let mut changes = share_heavy(index, &partitions, &mut loads, mean);
    changes.extend(move_from_loaded(index, &partitions, &mut loads, mean * tolerance));
    changes
}

/// Shares each partition heavier than `mean` over as many holders as
/// bring each one's part within it, the heaviest partition first, with the
/// least loaded workers.
fn share_heavy(
    index: &GlobalIndex,
    partitions: &BTreeMap<PartitionId, f64>,
    loads: &mut [f64],
    mean: f64,
) -> Vec<PlanChange> {
    let workers = loads.len();
    let mut heavy: Vec<(PartitionId, f64)> = partitions
        .iter()
        .filter(|&(&id, &w)| w > mean && index.replicas(id).is_empty() && index.info(id).is_some())
        .map(|(&id, &w)| (id, w))
        .collect();
    heavy.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut changes = Vec::new();
    for (id, w) in heavy {
        let owner = index.info(id).expect("filtered").owner;
        let holders = ((w / mean).ceil() as usize).clamp(2, workers);
        let part = w / holders as f64;
        let weight = SHARE_WEIGHT / holders as u32;
        let mut others: Vec<usize> = (0..workers).filter(|&worker| worker != owner).collect();
        others.sort_by(|&a, &b| loads[a].total_cmp(&loads[b]).then(a.cmp(&b)));
        for &with in others.iter().take(holders - 1) {
            changes.push(PlanChange::Share {
                id,
                with,
                from: owner,
                weight,
            });
            loads[with] += part;
            loads[owner] -= part;
        }
    }
    changes
}

/// While some worker carries more than `limit`, moves the whole partition
/// of it that best evens it with the least loaded worker (the pair's
/// larger load after the move the least), if that lowers it; a worker
/// that cannot shed so is left as it is.
fn move_from_loaded(
    index: &GlobalIndex,
    partitions: &BTreeMap<PartitionId, f64>,
    loads: &mut [f64],
    limit: f64,
) -> Vec<PlanChange> {
    let mut held: Vec<Vec<(PartitionId, f64)>> = vec![Vec::new(); loads.len()];
    for (&id, &w) in partitions {
        let info = index.info(id).filter(|_| index.replicas(id).is_empty() && w > 0.0);
        if let Some(info) = info.filter(|info| info.owner < loads.len()) {
            held[info.owner].push((id, w));
        }
    }
    let mut stuck = vec![false; loads.len()];
    let mut changes = Vec::new();
    // A partition moves at most once: at most one move per partition.
    for _ in 0..partitions.len() {
        let by_load = |a: &usize, b: &usize| loads[*a].total_cmp(&loads[*b]).then(b.cmp(a));
        let Some(high) = (0..loads.len()).filter(|&w| !stuck[w]).max_by(by_load) else {
            break;
        };
        let low = (0..loads.len()).min_by(by_load).expect("workers");
        if loads[high] <= limit {
            break;
        }
        let after = |w: f64| (loads[high] - w).max(loads[low] + w);
        let best = (held[high].iter().enumerate())
            .filter(|&(_, &(_, w))| after(w) < loads[high])
            .min_by(|(_, a), (_, b)| after(a.1).total_cmp(&after(b.1)).then(a.0.cmp(&b.0)));
        let Some((position, _)) = best else {
            stuck[high] = true;
            continue;
        };
        let (id, w) = held[high].swap_remove(position);
        changes.push(PlanChange::Move { id, to: low });
        loads[high] -= w;
        loads[low] += w;
    }
    changes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::swarm::geometry::{Grid, Rect};
    use proptest::prelude::*;

    fn fine(cells: u32, workers: usize) -> GlobalIndex {
        let side = f64::from(cells);
        let grid = Grid::new(Rect::new(0.0, 0.0, side, side).unwrap(), cells, cells).unwrap();
        GlobalIndex::fine(grid, workers).unwrap().0
    }

    /// Each worker's expected work under `index`, shares by weight.
    fn loads(index: &GlobalIndex, work: &BTreeMap<Cell, f64>, workers: usize) -> Vec<f64> {
        let mut loads = vec![0.0; workers];
        for (&cell, &w) in work {
            let id = index.at(cell).0;
            for (holder, &weight) in index.holders(id).zip(index.weights(id)) {
                loads[holder] += w * f64::from(weight) / f64::from(SHARE_WEIGHT);
            }
        }
        loads
    }

    proptest! {
        /// On any load the changes apply, and the busiest worker ends no
        /// worse than it began, and within the tolerance or its one
        /// heaviest part of the mean (a brute-force reading of the plan).
        #[test]
        fn the_opening_applies_and_balances(
            workers in 2usize..20,
            weights in proptest::collection::vec(0u32..1000, 64),
            hot in 0usize..64,
            heat in 0u32..100_000,
        ) {
            let index = fine(8, workers);
            let work: BTreeMap<Cell, f64> = (0..64)
                .map(|i| {
                    let cell = Cell { row: (i / 8) as u32, col: (i % 8) as u32 };
                    let w = f64::from(weights[i]) + if i == hot { f64::from(heat) } else { 0.0 };
                    (cell, w)
                })
                .collect();
            let before = loads(&index, &work, workers);
            let mut planned = index.clone();
            for change in plan_opening(&index, &work, workers, OPENING_TOLERANCE) {
                planned.apply(&change).unwrap();
            }
            planned.check_covering().unwrap();
            let after = loads(&planned, &work, workers);
            let total: f64 = work.values().sum();
            let mean = total / workers as f64;
            let (max_before, max_after) = (before.iter().copied().fold(0.0, f64::max), after.iter().copied().fold(0.0, f64::max));
            prop_assert!(max_after <= max_before * (1.0 + 1e-9), "{max_after} > {max_before}");
            let heaviest = work.values().copied().filter(|&w| w <= mean).fold(0.0, f64::max);
            prop_assert!(
                max_after <= (mean * OPENING_TOLERANCE).max(mean + heaviest) * (1.0 + 1e-9),
                "busiest {max_after}, mean {mean}, heaviest part {heaviest}"
            );
        }
    }

    #[test]
    fn no_work_or_one_worker_changes_nothing() {
        let index = fine(4, 4);
        assert!(plan_opening(&index, &BTreeMap::new(), 4, OPENING_TOLERANCE).is_empty());
        let work = BTreeMap::from([(Cell { row: 0, col: 0 }, 5.0)]);
        assert!(plan_opening(&fine(4, 1), &work, 1, OPENING_TOLERANCE).is_empty());
    }
}

//! Choosing the size of partitions (ours; see `bench/results/swarm.md`, "What is ours"). A cost model
//! that predicts work from the statistics (say RN·Q + α(RN + RQ), for an
//! application that checks every point against every query of its
//! partition) says when a partition is too coarse: a split lowers Q for the
//! points of each part, at the price of the queries that span both parts,
//! and the split arithmetic gives both parts' figures from the statistics
//! alone. So a worker splits its own partitions where a split cuts the work,
//! and merges neighbours where a merge adds little, whatever the balance.
//! Under the default, measured cost (the checks the application reported)
//! no split cuts work and every merge adds none: nothing splits here, and
//! every mergeable pair merges.

use super::cost::CostModel;
use super::index::{Axis, SplitLine};
use super::stats::{PartitionStats, Totals};

/// The figures with the points and checks of a round smoothed: N and C
/// decay by half each round, so N/2 and C/2 are the means of the recent
/// rounds' RN and RC. A single round's figures are too noisy to size
/// partitions by: a partition that saw no point in one round would merge,
/// and split again in the next.
pub(crate) fn smoothed(t: Totals) -> Totals {
    Totals {
        rn: t.n / 2.0,
        rc: t.c / 2.0,
        ..t
    }
}

/// The split of a partition with statistics `stats` that cuts its work the
/// most, and the work it saves, if that, less the upkeep of one more
/// partition, is at least `gain` × max(its work, `floor`). `floor` (the
/// worker's mean partition work) keeps cold partitions whole.
pub fn best_split(model: &dyn CostModel, stats: &PartitionStats, floor: f64, gain: f64) -> Option<(SplitLine, f64)> {
    let whole = model.work(&smoothed(stats.totals()));
    let needed = gain * whole.max(floor) + model.upkeep();
    if whole < needed {
        // No split saves more than the whole.
        return None;
    }
    let mut best: Option<(SplitLine, f64)> = None;
    for axis in [Axis::Rows, Axis::Columns] {
        let lines = match axis {
            Axis::Rows => stats.rows().len(),
            Axis::Columns => stats.cols().len(),
        } as u32;
        for after in 0..lines.saturating_sub(1) {
            let (a, b) = stats.split_totals(axis, after);
            let saved = whole - model.work(&smoothed(a)) - model.work(&smoothed(b));
            if best.is_none_or(|(_, most)| saved > most) {
                best = Some((SplitLine { axis, after }, saved));
            }
        }
    }
    best.filter(|&(_, saved)| saved > 0.0 && saved >= needed)
}

/// The figures of two neighbours merged, if the merge adds, less the upkeep
/// of the partition it saves, at most `gain / 2` × max(their work, `floor`)
/// (half the split threshold, so that a merge never undoes a split that
/// paid). Under a predicting model the merged query counts assume no query
/// is shared, which overstates the merged work: merges err on the side of
/// staying apart.
pub(crate) fn cheap_merge(model: &dyn CostModel, a: &Totals, b: &Totals, floor: f64, gain: f64) -> Option<Totals> {
    let merged = *a + *b;
    let apart = model.work(&smoothed(*a)) + model.work(&smoothed(*b));
    let added = model.work(&smoothed(merged)) - apart;
    (added - model.upkeep() <= gain / 2.0 * apart.max(floor)).then_some(merged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::swarm::cost::RangeQueryCost;
    use crate::swarm::geometry::{Cell, CellRect};

    /// An application that checks each point against every query of its
    /// partition: splits cut its work.
    struct ScanCost;

    impl CostModel for ScanCost {
        fn work(&self, t: &Totals) -> f64 {
            t.rn * t.q + t.rn + t.rq
        }
        fn upkeep(&self) -> f64 {
            32.0
        }
    }

    /// A 1 × 8 strip with a query per column: points in the left half but
    /// `points_right` per 100 on the right, each checked against its own
    /// column's query (as the cell index does).
    fn strip(points_right: u32) -> PartitionStats {
        let mut stats = PartitionStats::new(1, 8);
        for col in 0..8 {
            stats.record_query(&CellRect {
                row0: 0,
                col0: col,
                row1: 0,
                col1: col,
            });
        }
        for i in 0..400 {
            let col = if i % 100 < points_right { 4 + i % 4 } else { i % 4 };
            stats.record_point(Cell { row: 0, col });
            stats.record_checks(Cell { row: 0, col }, 1);
        }
        stats.end_round();
        stats
    }

    #[test]
    fn a_split_where_it_cuts_the_work_and_none_where_it_cannot() {
        // Points on the left, queries everywhere: cutting off the right half
        // halves the queries each point meets.
        let (line, saved) = best_split(&ScanCost, &strip(0), 0.0, 0.2).expect("a split pays");
        assert_eq!(line.axis, Axis::Columns);
        let whole = ScanCost.work(&strip(0).totals());
        assert!(saved >= 0.2 * whole, "{saved} of {whole}");
        // With the cell index a split saves no check: it never pays.
        assert_eq!(best_split(&RangeQueryCost::default(), &strip(0), 0.0, 0.2), None);
        // A single cell has no line.
        let mut cell = PartitionStats::new(1, 1);
        cell.record_point(Cell { row: 0, col: 0 });
        cell.end_round();
        assert_eq!(best_split(&ScanCost, &cell, 0.0, 0.2), None);
        // A cold partition stays whole under a high floor.
        assert_eq!(best_split(&ScanCost, &strip(0), 1e12, 0.2), None);
    }

    #[test]
    fn merges_join_cold_neighbours_but_not_hot_ones() {
        let cold = Totals {
            n: 1.0,
            q: 3.0,
            ..Totals::default()
        };
        assert!(cheap_merge(&ScanCost, &cold, &cold, 100.0, 0.2).is_some());
        let hot = Totals {
            n: 500.0,
            q: 40.0,
            rn: 500.0,
            rq: 10.0,
            ..Totals::default()
        };
        assert_eq!(cheap_merge(&ScanCost, &hot, &hot, 100.0, 0.2), None);
    }
}

//! Per-partition statistics by row and column (Section 4.2 of the paper),
//! their collectors, the round-end update (Algorithm 2) and the arithmetic
//! for splitting and merging.
//!
//! Cumulative statistics of row `i` count from row 0 to row `i` (columns
//! likewise); see `bench/results/swarm.md`, "What is ours", for the definitions. N-type
//! statistics (points) are `f64` because N decays: it is halved at every
//! round end before the round's new points are added.

use serde::{Deserialize, Serialize};

use super::geometry::{Cell, CellRect};
use super::index::Axis;

/// The statistics and collectors of one row (or column).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LineStats {
    /// N: decayed points in lines `0..=i` (cumulative).
    pub n: f64,
    /// Q: registered queries whose first line is `≤ i` (cumulative).
    pub q: i64,
    /// RN: points received during the last round in lines `0..=i` (cumulative).
    pub rn: f64,
    /// RQ: queries received during the last round whose first line is `≤ i` (cumulative).
    pub rq: i64,
    /// spanQ: registered queries overlapping both line `i − 1` and line `i`.
    pub span_q: i64,
    /// preSpanQ: the same, among the queries received during the last round.
    pub pre_span_q: i64,
    /// Collector N′: points received this round in this line.
    pub new_n: f64,
    /// C: decayed point–query checks in lines `0..=i` (cumulative; halved
    /// each round like N): the work the application reported.
    pub c: f64,
    /// RC: checks made during the last round in lines `0..=i` (cumulative).
    pub rc: f64,
    /// Collector C′: checks made this round in this line.
    pub new_c: f64,
    /// Collector Qa′: queries added this round whose first line is this one.
    pub added: i64,
    /// Collector Qr′: queries removed this round whose first line is this one.
    pub removed: i64,
    /// Collector Sa′: queries added this round overlapping this line but not starting in it.
    pub span_added: i64,
    /// Collector Sr′: queries removed this round overlapping this line but not starting in it.
    pub span_removed: i64,
}

/// The figures the cost model needs, for a partition or part of one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Totals {
    /// Decayed points.
    pub n: f64,
    /// Registered queries.
    pub q: f64,
    /// Points received during the last round.
    pub rn: f64,
    /// Queries received during the last round.
    pub rq: f64,
    /// Decayed point–query checks (halved each round before the round's are added).
    pub c: f64,
    /// Point–query checks made during the last round.
    pub rc: f64,
}

impl std::ops::Add for Totals {
    type Output = Totals;

    /// The figures of two partitions together, counting a query held by
    /// both twice.
    fn add(self, other: Totals) -> Totals {
        Totals {
            n: self.n + other.n,
            q: self.q + other.q,
            rn: self.rn + other.rn,
            rq: self.rq + other.rq,
            c: self.c + other.c,
            rc: self.rc + other.rc,
        }
    }
}

/// When a stored query arrived, relative to the round-end updates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum QueryAge {
    /// Before the last round.
    Earlier,
    /// During the last (completed) round.
    LastRound,
    /// During the current round (still in the collectors).
    ThisRound,
}

/// Statistics of one partition: one [`LineStats`] per row and per column.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartitionStats {
    rows: Vec<LineStats>,
    cols: Vec<LineStats>,
}

impl PartitionStats {
    /// Empty statistics for a partition of `rows × cols` cells.
    ///
    /// # Panics
    ///
    /// If `rows` or `cols` is 0: a partition has at least one cell (every
    /// partition of a [`GlobalIndex`](super::plan::GlobalIndex) does).
    pub fn new(rows: u32, cols: u32) -> Self {
        assert!(rows > 0 && cols > 0, "a partition has at least one cell");
        PartitionStats {
            rows: vec![LineStats::default(); rows as usize],
            cols: vec![LineStats::default(); cols as usize],
        }
    }

    /// Per-row statistics, from the first row.
    pub fn rows(&self) -> &[LineStats] {
        &self.rows
    }

    /// Per-column statistics, from the first column.
    pub fn cols(&self) -> &[LineStats] {
        &self.cols
    }

    fn axis(&self, axis: Axis) -> &[LineStats] {
        match axis {
            Axis::Rows => &self.rows,
            Axis::Columns => &self.cols,
        }
    }

    /// Records a new point in `cell` (relative to the partition).
    #[inline]
    pub fn record_point(&mut self, cell: Cell) {
        self.rows[cell.row as usize].new_n += 1.0;
        self.cols[cell.col as usize].new_n += 1.0;
    }

    /// Records `checks` point–query checks made for a point in `cell`
    /// (relative to the partition).
    #[inline]
    pub fn record_checks(&mut self, cell: Cell, checks: u64) {
        self.rows[cell.row as usize].new_c += checks as f64;
        self.cols[cell.col as usize].new_c += checks as f64;
    }

    /// Records a new query overlapping `range` (relative to the partition,
    /// clipped to it).
    pub fn record_query(&mut self, range: &CellRect) {
        self.count_query(range, |line| &mut line.added, |line| &mut line.span_added);
    }

    /// Records the removal of a query that overlapped `range`.
    pub fn record_removal(&mut self, range: &CellRect) {
        self.count_query(range, |line| &mut line.removed, |line| &mut line.span_removed);
    }

    /// Counts a query in the `start` collector of its first row and column
    /// and in the `span` collector of every later row and column it overlaps.
    fn count_query(
        &mut self,
        range: &CellRect,
        start: fn(&mut LineStats) -> &mut i64,
        span: fn(&mut LineStats) -> &mut i64,
    ) {
        for (lines, first, last) in [
            (&mut self.rows, range.row0, range.row1),
            (&mut self.cols, range.col0, range.col1),
        ] {
            *start(&mut lines[first as usize]) += 1;
            for line in &mut lines[first as usize + 1..=last as usize] {
                *span(line) += 1;
            }
        }
    }

    /// Ends a round (Algorithm 2): folds the collectors into the statistics
    /// in one pass over the rows and one over the columns, halving N, and
    /// resets the collectors.
    pub fn end_round(&mut self) {
        end_round(&mut self.rows);
        end_round(&mut self.cols);
    }

    /// The partition's figures (those of its last row).
    pub fn totals(&self) -> Totals {
        let last = self.rows.last().expect("at least one row");
        Totals {
            n: last.n,
            q: last.q as f64,
            rn: last.rn,
            rq: last.rq as f64,
            c: last.c,
            rc: last.rc,
        }
    }

    /// The figures of the two parts a line cuts the partition into, from the
    /// statistics alone.
    pub fn split_totals(&self, axis: Axis, after: u32) -> (Totals, Totals) {
        let lines = self.axis(axis);
        let (cut, last, next) = (
            &lines[after as usize],
            &lines[lines.len() - 1],
            &lines[after as usize + 1],
        );
        let first = Totals {
            n: cut.n,
            q: cut.q as f64,
            rn: cut.rn,
            rq: cut.rq as f64,
            c: cut.c,
            rc: cut.rc,
        };
        // Queries that start in the first part and reach into the second
        // belong to both: they are the second part's spanQ at the cut.
        let second = Totals {
            n: last.n - cut.n,
            q: (last.q - cut.q + next.span_q) as f64,
            rn: last.rn - cut.rn,
            rq: (last.rq - cut.rq + next.pre_span_q) as f64,
            c: last.c - cut.c,
            rc: last.rc - cut.rc,
        };
        (first, second)
    }

    /// The statistics of one part of a split. Along the split axis the point
    /// statistics come from this partition's lines; across it they are
    /// apportioned by the part's share of the points (the marginals do not
    /// determine them; ours). Query statistics are recounted from `queries`,
    /// the part's stored queries (clipped to the part, relative to it).
    pub fn split_part(&self, axis: Axis, after: u32, second: bool, queries: &[(CellRect, QueryAge)]) -> PartitionStats {
        let along = self.axis(axis);
        let cut = after as usize;
        let points: Vec<LineStats> = if second {
            let base = along[cut];
            along[cut + 1..]
                .iter()
                .map(|line| points_only(line, &base, -1.0))
                .collect()
        } else {
            along[..=cut]
                .iter()
                .map(|line| points_only(line, &LineStats::default(), 1.0))
                .collect()
        };
        let sum = |lines: &[LineStats], field: fn(&LineStats) -> f64| lines.iter().map(field).sum::<f64>();
        let last = |lines: &[LineStats]| *lines.last().expect("at least one line");
        let (part_last, whole_last) = (last(&points), last(along));
        let share = |part: f64, whole: f64| if whole > 0.0 { part / whole } else { 0.0 };
        let n_share = share(part_last.n, whole_last.n);
        let rn_share = share(part_last.rn, whole_last.rn);
        let new_share = share(sum(&points, |l| l.new_n), sum(along, |l| l.new_n));
        let c_share = share(part_last.c, whole_last.c);
        let rc_share = share(part_last.rc, whole_last.rc);
        let new_c_share = share(sum(&points, |l| l.new_c), sum(along, |l| l.new_c));
        let across: Vec<LineStats> = self
            .axis(other(axis))
            .iter()
            .map(|line| LineStats {
                n: line.n * n_share,
                rn: line.rn * rn_share,
                new_n: line.new_n * new_share,
                c: line.c * c_share,
                rc: line.rc * rc_share,
                new_c: line.new_c * new_c_share,
                ..LineStats::default()
            })
            .collect();
        let mut part = match axis {
            Axis::Rows => PartitionStats {
                rows: points,
                cols: across,
            },
            Axis::Columns => PartitionStats {
                rows: across,
                cols: points,
            },
        };
        part.recount_queries(queries);
        part
    }

    /// The statistics of the union of two partitions `a` (at `a_rect`) and
    /// `b` (at `b_rect`) that form a rectangle: point statistics combine
    /// arithmetically (the points are disjoint), query statistics are
    /// recounted from `queries`, the union's stored queries (each once,
    /// relative to the union).
    pub fn merged(
        a: &PartitionStats,
        a_rect: &CellRect,
        b: &PartitionStats,
        b_rect: &CellRect,
        queries: &[(CellRect, QueryAge)],
    ) -> PartitionStats {
        // Order the two so that `first` holds the smaller rows/columns.
        let (first, second) = if (a_rect.row0, a_rect.col0) <= (b_rect.row0, b_rect.col0) {
            (a, b)
        } else {
            (b, a)
        };
        let side_by_side = a_rect.row0 == b_rect.row0 && a_rect.row1 == b_rect.row1 && a_rect.col0 != b_rect.col0;
        let concat = |x: &[LineStats], y: &[LineStats]| -> Vec<LineStats> {
            let base = *x.last().expect("at least one line");
            x.iter()
                .map(|line| points_only(line, &LineStats::default(), 1.0))
                .chain(y.iter().map(|line| points_only(line, &base, 1.0)))
                .collect()
        };
        let add = |x: &[LineStats], y: &[LineStats]| -> Vec<LineStats> {
            x.iter()
                .zip(y)
                .map(|(p, q)| {
                    let mut sum = points_only(p, q, 1.0);
                    sum.new_n += q.new_n;
                    sum.new_c += q.new_c;
                    sum
                })
                .collect()
        };
        let mut union = if side_by_side {
            PartitionStats {
                rows: add(&first.rows, &second.rows),
                cols: concat(&first.cols, &second.cols),
            }
        } else {
            PartitionStats {
                rows: concat(&first.rows, &second.rows),
                cols: add(&first.cols, &second.cols),
            }
        };
        union.recount_queries(queries);
        union
    }

    /// Scales the point and check statistics (and their collectors) by
    /// `factor`, the queries' unchanged: a shared partition's holder
    /// expects that share of its points once the points are dealt among
    /// more (or fewer) holders.
    pub fn scale_points(&mut self, factor: f64) {
        for line in self.rows.iter_mut().chain(self.cols.iter_mut()) {
            line.n *= factor;
            line.rn *= factor;
            line.new_n *= factor;
            line.c *= factor;
            line.rc *= factor;
            line.new_c *= factor;
        }
    }

    /// Sets every query statistic and collector from the stored queries
    /// (relative to the partition, clipped to it). Removals are reflected by
    /// the absence of the removed queries.
    pub fn recount_queries(&mut self, queries: &[(CellRect, QueryAge)]) {
        for lines in [&mut self.rows, &mut self.cols] {
            for line in lines.iter_mut() {
                *line = points_only(line, &LineStats::default(), 1.0);
            }
        }
        for &(range, age) in queries {
            if age == QueryAge::ThisRound {
                self.count_query(&range, |line| &mut line.added, |line| &mut line.span_added);
                continue;
            }
            let recent = i64::from(age == QueryAge::LastRound);
            for (lines, first, last) in [
                (&mut self.rows, range.row0, range.row1),
                (&mut self.cols, range.col0, range.col1),
            ] {
                for line in &mut lines[first as usize..] {
                    line.q += 1;
                    line.rq += recent;
                }
                for line in &mut lines[first as usize + 1..=last as usize] {
                    line.span_q += 1;
                    line.pre_span_q += recent;
                }
            }
        }
    }
}

fn other(axis: Axis) -> Axis {
    match axis {
        Axis::Rows => Axis::Columns,
        Axis::Columns => Axis::Rows,
    }
}

/// A line's point and check statistics, the cumulative ones plus `sign` ×
/// those of `base` (to shift or rebase them), with the query statistics
/// cleared.
fn points_only(line: &LineStats, base: &LineStats, sign: f64) -> LineStats {
    LineStats {
        n: line.n + sign * base.n,
        rn: line.rn + sign * base.rn,
        new_n: line.new_n,
        c: line.c + sign * base.c,
        rc: line.rc + sign * base.rc,
        new_c: line.new_c,
        ..LineStats::default()
    }
}

/// Algorithm 2 on one axis.
fn end_round(lines: &mut [LineStats]) {
    let (mut new_points, mut new_checks, mut arrived, mut net) = (0.0, 0.0, 0i64, 0i64);
    for line in lines {
        new_points += line.new_n;
        new_checks += line.new_c;
        line.c = line.c / 2.0 + new_checks;
        line.rc = new_checks;
        line.new_c = 0.0;
        arrived += line.added;
        net += line.added - line.removed;
        line.n = line.n / 2.0 + new_points;
        line.q += net;
        line.rn = new_points;
        line.rq = arrived;
        line.span_q += line.span_added - line.span_removed;
        line.pre_span_q = line.span_added;
        line.new_n = 0.0;
        line.added = 0;
        line.removed = 0;
        line.span_added = 0;
        line.span_removed = 0;
    }
}

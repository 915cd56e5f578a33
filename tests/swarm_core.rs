//! SWARM's pure algorithms against brute force on random grids, plans and
//! workloads.

use std::collections::BTreeSet;

use equipoise::swarm::cost::{CostModel, RangeQueryCost};
use equipoise::swarm::decision::{Decision, DecisionPolicy, FiveStage, RoundSummary, Stage, Threshold};
use equipoise::swarm::plan::{
    best_line, best_line_exhaustive, best_split, normalized, plan_merges, plan_reduction, random_change, Candidate,
    GlobalIndex, IdMint, PartitionStats, Reduction, ReductionRequest,
};
use equipoise::swarm::plan::{Axis, PlanChange, SplitLine};
use equipoise::swarm::plan::{Cell, CellRect};
use equipoise::swarm::plan::{QueryAge, Totals};
use equipoise::swarm::{Grid, Rect};
use proptest::prelude::*;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

fn grid(columns: u32, rows: u32) -> Grid {
    Grid::new(
        Rect::new(0.0, 0.0, f64::from(columns), f64::from(rows)).unwrap(),
        columns,
        rows,
    )
    .unwrap()
}

fn random_range(rng: &mut SmallRng, rows: u32, cols: u32) -> CellRect {
    let (r0, r1) = (rng.random_range(0..rows), rng.random_range(0..rows));
    let (c0, c1) = (rng.random_range(0..cols), rng.random_range(0..cols));
    CellRect {
        row0: r0.min(r1),
        col0: c0.min(c1),
        row1: r0.max(r1),
        col1: c0.max(c1),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn algorithm_1_finds_exactly_what_a_cell_scan_finds(
        seed in any::<u64>(), columns in 1u32..14, rows in 1u32..14, workers in 1usize..7, changes in 0usize..25
    ) {
        let mut rng = SmallRng::seed_from_u64(seed);
        let (mut index, base) = GlobalIndex::initial(grid(columns, rows), workers).unwrap();
        let mut mint = IdMint::new(base, 0, 1);
        for _ in 0..changes {
            if let Some(change) = random_change(&mut rng, &index, workers, &mut mint) {
                index.apply(&change).unwrap();
                prop_assert!(index.check_covering().is_ok(), "{:?}", index.check_covering());
            }
            for _ in 0..8 {
                let range = random_range(&mut rng, rows, columns);
                prop_assert_eq!(index.partitions_overlapping(&range), index.partitions_overlapping_by_scan(&range));
            }
            // The whole space and its border rows and columns.
            for range in [
                grid(columns, rows).all(),
                CellRect { row0: 0, col0: 0, row1: 0, col1: columns - 1 },
                CellRect { row0: rows - 1, col0: 0, row1: rows - 1, col1: columns - 1 },
                CellRect { row0: 0, col0: columns - 1, row1: rows - 1, col1: columns - 1 },
            ] {
                prop_assert_eq!(index.partitions_overlapping(&range), index.partitions_overlapping_by_scan(&range));
            }
        }
    }

    #[test]
    fn initial_plan_covers_every_cell_once_with_one_partition_per_worker(
        columns in 1u32..40, rows in 1u32..40, workers in 1usize..40
    ) {
        let (index, base) = GlobalIndex::initial(grid(columns, rows), workers).unwrap();
        prop_assert!(index.check_covering().is_ok());
        let cells = (columns * rows) as usize;
        prop_assert_eq!(index.partitions().len(), workers.min(cells));
        let owners: BTreeSet<usize> = index.partitions().values().map(|p| p.owner).collect();
        prop_assert_eq!(owners.len(), workers.min(cells));
        prop_assert!(index.partitions().keys().all(|&id| id < base));
    }

    #[test]
    fn invalid_changes_are_refused_and_leave_the_index_unchanged(seed in any::<u64>()) {
        let mut rng = SmallRng::seed_from_u64(seed);
        let (mut index, base) = GlobalIndex::initial(grid(6, 5), 4).unwrap();
        let before = index.clone();
        let ids: Vec<_> = index.partitions().keys().copied().collect();
        let (a, b) = (ids[0], ids[rng.random_range(1..ids.len())]);
        let bad = [
            PlanChange::Move { id: base + 99, to: 0 },
            PlanChange::Split { id: a, line: SplitLine { axis: Axis::Rows, after: 40 }, first: (base, 0), second: (base + 1, 0) },
            PlanChange::Split { id: a, line: SplitLine { axis: Axis::Rows, after: 0 }, first: (b, 0), second: (base + 1, 0) },
            PlanChange::Merge { first: a, second: a, into: base },
            PlanChange::Merge { first: a, second: b, into: base },
        ];
        for change in bad {
            // Merging a with b is refused for different owners or a non-rectangle union.
            prop_assert!(index.apply(&change).is_err(), "{:?}", change);
            prop_assert_eq!(&index, &before);
        }
    }
}

/// A workload in one partition, with its brute-force recount.
struct Model {
    rows: u32,
    cols: u32,
    round: u32,
    // cell, round, checks made for it
    points: Vec<(Cell, u32, u64)>,
    // range, round added, round removed
    queries: Vec<(CellRect, u32, Option<u32>)>,
}

impl Model {
    fn registered(&self, q: &(CellRect, u32, Option<u32>)) -> bool {
        // As of the last round end (round `self.round - 1` ended).
        q.1 < self.round && q.2.is_none_or(|removed| removed >= self.round)
    }
    fn last_round(&self, q: &(CellRect, u32, Option<u32>)) -> bool {
        q.1 + 1 == self.round
    }
    /// Totals of the sub-rectangle `part` (relative cells), by brute force.
    fn totals(&self, part: &CellRect) -> Totals {
        let mut t = Totals::default();
        for &(cell, round, checks) in &self.points {
            if part.contains(cell) {
                let decay = 0.5f64.powi((self.round - 1 - round) as i32);
                t.n += decay;
                t.c += decay * checks as f64;
                if round + 1 == self.round {
                    t.rn += 1.0;
                    t.rc += checks as f64;
                }
            }
        }
        for q in &self.queries {
            if q.0.overlaps(part) {
                if self.registered(q) {
                    t.q += 1.0;
                }
                if self.last_round(q) {
                    t.rq += 1.0;
                }
            }
        }
        t
    }
    fn whole(&self) -> CellRect {
        CellRect {
            row0: 0,
            col0: 0,
            row1: self.rows - 1,
            col1: self.cols - 1,
        }
    }
}

fn run_rounds(seed: u64, rows: u32, cols: u32, rounds: u32, mut check: impl FnMut(&Model, &PartitionStats)) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut stats = PartitionStats::new(rows, cols);
    let mut model = Model {
        rows,
        cols,
        round: 0,
        points: Vec::new(),
        queries: Vec::new(),
    };
    for _ in 0..rounds {
        for _ in 0..rng.random_range(0..30) {
            let cell = Cell {
                row: rng.random_range(0..rows),
                col: rng.random_range(0..cols),
            };
            let checks = rng.random_range(0..5);
            stats.record_point(cell);
            stats.record_checks(cell, checks);
            model.points.push((cell, model.round, checks));
        }
        for _ in 0..rng.random_range(0..6) {
            let range = random_range(&mut rng, rows, cols);
            stats.record_query(&range);
            model.queries.push((range, model.round, None));
        }
        let live: Vec<usize> = (0..model.queries.len())
            .filter(|&i| model.queries[i].2.is_none())
            .collect();
        for _ in 0..rng.random_range(0..3).min(live.len()) {
            let i = live[rng.random_range(0..live.len())];
            if model.queries[i].2.is_none() {
                stats.record_removal(&model.queries[i].0);
                model.queries[i].2 = Some(model.round);
            }
        }
        stats.end_round();
        model.round += 1;
        check(&model, &stats);
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * (1.0 + a.abs().max(b.abs()))
}

fn close_totals(a: &Totals, b: &Totals) -> bool {
    close(a.n, b.n) && close(a.q, b.q) && close(a.rn, b.rn) && close(a.rq, b.rq) && close(a.c, b.c) && close(a.rc, b.rc)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn round_end_update_equals_recomputation(seed in any::<u64>(), rows in 1u32..9, cols in 1u32..9) {
        run_rounds(seed, rows, cols, 6, |model, stats| {
            for (axis, lines, count) in [(Axis::Rows, stats.rows(), rows), (Axis::Columns, stats.cols(), cols)] {
                for i in 0..count {
                    let upto = match axis {
                        Axis::Rows => CellRect { row1: i, ..model.whole() },
                        Axis::Columns => CellRect { col1: i, ..model.whole() },
                    };
                    let line = |j: u32| match axis {
                        Axis::Rows => CellRect { row0: j, row1: j, ..model.whole() },
                        Axis::Columns => CellRect { col0: j, col1: j, ..model.whole() },
                    };
                    let starts_upto = |q: &(CellRect, u32, Option<u32>)| match axis {
                        Axis::Rows => q.0.row0 <= i,
                        Axis::Columns => q.0.col0 <= i,
                    };
                    let t = model.totals(&upto);
                    let l = lines[i as usize];
                    assert!(close(l.n, t.n) && close(l.rn, t.rn), "N/RN {axis:?} {i}");
                    assert!(close(l.c, t.c) && close(l.rc, t.rc), "C/RC {axis:?} {i}");
                    let q = model.queries.iter().filter(|q| model.registered(q) && starts_upto(q)).count();
                    let rq = model.queries.iter().filter(|q| model.last_round(q) && starts_upto(q)).count();
                    assert_eq!(l.q, q as i64, "Q {axis:?} {i}");
                    assert_eq!(l.rq, rq as i64, "RQ {axis:?} {i}");
                    if i > 0 {
                        let spans = |q: &&(CellRect, u32, Option<u32>)| q.0.overlaps(&line(i - 1)) && q.0.overlaps(&line(i));
                        let span = model.queries.iter().filter(|q| model.registered(q)).filter(spans).count();
                        let pre = model.queries.iter().filter(|q| model.last_round(q)).filter(spans).count();
                        assert_eq!(l.span_q, span as i64, "spanQ {axis:?} {i}");
                        assert_eq!(l.pre_span_q, pre as i64, "preSpanQ {axis:?} {i}");
                    }
                }
            }
        });
    }

    #[test]
    fn split_arithmetic_equals_a_recount_for_every_line(seed in any::<u64>(), rows in 1u32..9, cols in 1u32..9) {
        run_rounds(seed, rows, cols, 5, |model, stats| {
            assert!(close_totals(&stats.totals(), &model.totals(&model.whole())));
            for (axis, count) in [(Axis::Rows, rows), (Axis::Columns, cols)] {
                for after in 0..count.saturating_sub(1) {
                    let (first_rect, second_rect) = SplitLine { axis, after }.parts(&model.whole()).unwrap();
                    let (first, second) = stats.split_totals(axis, after);
                    assert!(close_totals(&first, &model.totals(&first_rect)), "{axis:?} {after} first");
                    assert!(close_totals(&second, &model.totals(&second_rect)), "{axis:?} {after} second");
                    // The parts' own statistics, rebuilt from their stored queries.
                    for (second_part, rect, expected) in [(false, first_rect, first), (true, second_rect, second)] {
                        let queries: Vec<(CellRect, QueryAge)> = model
                            .queries
                            .iter()
                            .filter(|q| model.registered(q) && q.0.overlaps(&rect))
                            .map(|q| {
                                let age = if model.last_round(q) { QueryAge::LastRound } else { QueryAge::Earlier };
                                (q.0.intersection(&rect).unwrap().relative_to(&rect), age)
                            })
                            .collect();
                        let part = stats.split_part(axis, after, second_part, &queries);
                        let t = part.totals();
                        assert!(close(t.n, expected.n) && close(t.rn, expected.rn) && t.q == expected.q);
                    }
                }
            }
        });
    }
}

#[test]
fn merging_split_parts_restores_the_point_statistics() {
    run_rounds(7, 5, 4, 4, |model, stats| {
        for (axis, count) in [(Axis::Rows, 5), (Axis::Columns, 4)] {
            for after in 0..count - 1 {
                let (a_rect, b_rect) = SplitLine { axis, after }.parts(&model.whole()).unwrap();
                let a = stats.split_part(axis, after, false, &[]);
                let b = stats.split_part(axis, after, true, &[]);
                let merged = PartitionStats::merged(&b, &b_rect, &a, &a_rect, &[]);
                for (x, y) in merged
                    .rows()
                    .iter()
                    .zip(stats.rows())
                    .chain(merged.cols().iter().zip(stats.cols()))
                {
                    assert!(
                        close(x.n, y.n) && close(x.rn, y.rn) && close(x.c, y.c) && close(x.rc, y.rc),
                        "{axis:?} {after}: {x:?} vs {y:?}"
                    );
                }
            }
        }
    });
}

#[test]
fn five_stage_walk_follows_the_paper() {
    let mut policy = FiveStage::new(20);
    let script = [
        (10.0, Stage::Right1, Decision::DoNothing),
        (5.0, Stage::Start, Decision::DoNothing),
        (4.0, Stage::Left, Decision::DoNothing),
        (3.0, Stage::Start, Decision::Rebalance), // reached Flip: flipped, reset
        (3.0, Stage::Left, Decision::Rebalance),  // not an improvement
        (5.0, Stage::Start, Decision::Rebalance),
        (6.0, Stage::Right1, Decision::Rebalance),
        (7.0, Stage::Right2, Decision::Rebalance),
        (8.0, Stage::Right2, Decision::Rebalance), // saturates
        (1.0, Stage::Right1, Decision::Rebalance),
    ];
    for (round, (throughput, stage, decision)) in script.into_iter().enumerate() {
        let verdict = policy.decide(&RoundSummary { throughput, costs: &[] });
        assert_eq!(
            (policy.stage(), verdict.decision),
            (stage, decision),
            "round {round}: {verdict}"
        );
    }
}

#[test]
fn five_stage_forces_a_flip_after_beta_equal_decisions() {
    let mut policy = FiveStage::new(3);
    let decisions: Vec<Decision> = (1..=8)
        .map(|t| {
            policy
                .decide(&RoundSummary {
                    throughput: f64::from(t),
                    costs: &[],
                })
                .decision
        })
        .collect();
    use Decision::*;
    assert_eq!(
        decisions,
        vec![DoNothing, DoNothing, DoNothing, Rebalance, Rebalance, Rebalance, DoNothing, DoNothing]
    );
    let mut policy = FiveStage::new(3);
    for t in 1..=3 {
        policy.decide(&RoundSummary {
            throughput: f64::from(t),
            costs: &[],
        });
    }
    let forced = policy.decide(&RoundSummary {
        throughput: 4.0,
        costs: &[],
    });
    assert!(forced.reason.contains("forced flip"), "{forced}");
    assert_eq!(policy.stage(), Stage::Start);
}

#[test]
fn threshold_policy_compares_max_over_mean() {
    let mut policy = Threshold::new(1.5);
    assert_eq!(
        policy
            .decide(&RoundSummary {
                throughput: 1.0,
                costs: &[1.0, 1.0, 1.2]
            })
            .decision,
        Decision::DoNothing
    );
    let verdict = policy.decide(&RoundSummary {
        throughput: 1.0,
        costs: &[1.0, 1.0, 4.0],
    });
    assert_eq!(verdict.decision, Decision::Rebalance);
    assert!(verdict.reason.contains("2.000 > tau 1.5"), "{verdict}");
}

#[test]
fn threshold_policy_rebalances_a_drift_half_as_far_above_the_mean_two_rounds_in_a_row() {
    let mut policy = Threshold::new(1.5);
    let decide =
        |policy: &mut Threshold, costs: &[f64]| policy.decide(&RoundSummary { throughput: 1.0, costs }).decision;
    // 1.4 × the mean (above 1.25, under 1.5): once is noise.
    let drifting = [1.0, 1.0, 1.75];
    assert_eq!(decide(&mut policy, &drifting), Decision::DoNothing);
    // The same worker again: a drift.
    assert_eq!(decide(&mut policy, &drifting), Decision::Rebalance);
    // The count starts again after a rebalanced round.
    assert_eq!(decide(&mut policy, &drifting), Decision::DoNothing);
    // Another worker above the bar is not the same drift.
    assert_eq!(decide(&mut policy, &[2.2, 1.0, 1.0]), Decision::Rebalance);
    assert_eq!(decide(&mut policy, &[1.0, 1.0, 1.0]), Decision::DoNothing);
    assert_eq!(decide(&mut policy, &[1.6, 1.0, 1.0]), Decision::DoNothing);
    assert_eq!(decide(&mut policy, &[1.0, 1.6, 1.0]), Decision::DoNothing);
    assert_eq!(decide(&mut policy, &[1.0, 1.6, 1.0]), Decision::Rebalance);
}

/// Random statistics for partitions of random shapes.
fn random_stats(rng: &mut SmallRng, rows: u32, cols: u32) -> PartitionStats {
    let mut stats = PartitionStats::new(rows, cols);
    for _ in 0..3 {
        for _ in 0..rng.random_range(0..200) {
            // Skewed: points cluster in the first rows and columns.
            let cell = Cell {
                row: rng.random_range(0..rows).min(rng.random_range(0..rows)),
                col: rng.random_range(0..cols),
            };
            stats.record_point(cell);
        }
        for _ in 0..rng.random_range(0..8) {
            stats.record_query(&random_range(rng, rows, cols));
        }
        stats.end_round();
    }
    stats
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// The range-query model says no split saves work, so workers skip
    /// looking: no split of any partition's statistics would have paid.
    #[test]
    fn no_split_saves_under_the_range_query_model(seed in any::<u64>(), rows in 1u32..12, cols in 1u32..12, floor in 0.0f64..1e4) {
        let mut rng = SmallRng::seed_from_u64(seed);
        let model = RangeQueryCost::default();
        prop_assert!(!model.splits_can_save());
        let stats = random_stats(&mut rng, rows, cols);
        prop_assert_eq!(best_split(&model, &stats, floor, 0.0), None);
    }

    #[test]
    fn reductions_never_widen_the_gap_and_binary_search_matches_exhaustive(seed in any::<u64>(), partitions in 1usize..6) {
        let mut rng = SmallRng::seed_from_u64(seed);
        let model = RangeQueryCost::default();
        let shapes: Vec<(u32, u32)> = (0..partitions).map(|_| (rng.random_range(1..10), rng.random_range(1..10))).collect();
        let stats: Vec<PartitionStats> = shapes.iter().map(|&(r, c)| random_stats(&mut rng, r, c)).collect();
        let candidates: Vec<Candidate> = stats
            .iter()
            .zip(&shapes)
            .enumerate()
            .map(|(i, (s, &(r, c)))| {
                // One-cell partitions may be shared already, with the least loaded worker too.
                let holders = if r * c == 1 { rng.random_range(1..4) } else { 1 };
                let low_holds = holders > 1 && rng.random_bool(0.3);
                Candidate { id: i as u64, rect: CellRect { row0: 0, col0: 0, row1: r - 1, col1: c - 1 }, stats: s, holders, low_holds }
            })
            .collect();
        let r_s = 500.0;
        let cost = |t: Totals| normalized(model.work(&t), r_s);
        let high: f64 = candidates.iter().map(|c| cost(c.stats.totals())).sum();
        let low = high * rng.random_range(0.0..0.9);
        let request = ReductionRequest { low_cost: low, system_received: r_s, margin: 0.05 };
        let gap = (high - low).abs();
        match plan_reduction(&model, &request, &candidates) {
            Reduction::Move { ids, gap: (before, after), shed } => {
                let costs: Vec<f64> = ids.iter().map(|&id| cost(candidates[id as usize].stats.totals())).collect();
                let moved: f64 = costs.iter().sum();
                let actual = ((high - moved) - (low + moved)).abs();
                prop_assert!(close(before, gap) && close(after, actual) && actual <= gap);
                prop_assert!(close(shed, moved), "{} vs {}", shed, moved);
                // Every partition moved carries at least half of the ideal amount.
                prop_assert!(costs.iter().all(|&c| c >= 0.5 * (high - low) / 2.0 - 1e-12), "{:?}", costs);
                prop_assert!(ids.len() < candidates.len());
                prop_assert!(ids.iter().all(|&id| candidates[id as usize].holders == 1), "a shared partition moved");
            }
            Reduction::Split { id, line, move_second, gap: (before, after), shed } => {
                let p = &candidates[id as usize];
                let (first, second) = p.stats.split_totals(line.axis, line.after);
                let (moving, staying) = if move_second { (second, first) } else { (first, second) };
                let actual = ((high - cost(p.stats.totals()) + cost(staying)) - (low + cost(moving))).abs();
                prop_assert!(close(before, gap) && close(after, actual) && actual <= gap, "{} vs {}", actual, gap);
                prop_assert!(close(shed, cost(moving)), "{} vs {}", shed, cost(moving));
                prop_assert_eq!(p.holders, 1, "a shared partition split");
            }
            Reduction::Share { id, handed, gap: (before, after), shed } => {
                // Part of a one-cell partition's points goes to the partner; some stay.
                let p = &candidates[id as usize];
                let moved = handed * cost(p.stats.totals());
                let actual = ((high - moved) - (low + moved)).abs();
                prop_assert!(close(before, gap) && close(after, actual) && actual <= gap, "{} vs {}", actual, gap);
                prop_assert!(close(shed, moved), "{} vs {}", shed, moved);
                prop_assert!(p.rect.area() == 1 && handed > 0.0 && handed < 1.0, "{:?} {}", p, handed);
            }
            Reduction::Isolate { id, cuts } => {
                // Only under a wide gap, through a partition of several cells, each cut inside the part before.
                let p = &candidates[id as usize];
                prop_assert!(gap > 0.25 * high && p.holders == 1 && !cuts.is_empty(), "{:?}", cuts);
                let mut rect = p.rect;
                for (line, in_second) in cuts {
                    let parts = line.parts(&rect);
                    prop_assert!(parts.is_some(), "{:?} outside {:?}", line, rect);
                    let (first, second) = parts.unwrap();
                    rect = if in_second { second } else { first };
                }
            }
            Reduction::None { reason } => prop_assert!(!reason.is_empty()),
        }
        // The binary search over split lines, against trying every line.
        for c in &candidates {
            for (axis, lines) in [(Axis::Rows, c.rect.rows()), (Axis::Columns, c.rect.cols())] {
                if lines < 2 {
                    continue;
                }
                for move_second in [false, true] {
                    let signed = |after: u32| {
                        let (first, second) = c.stats.split_totals(axis, after);
                        let (moving, staying) = if move_second { (second, first) } else { (first, second) };
                        (high - cost(c.stats.totals()) + cost(staying)) - (low + cost(moving))
                    };
                    prop_assert_eq!(best_line(lines - 1, signed), best_line_exhaustive(lines - 1, signed));
                }
            }
        }
    }

    #[test]
    fn merges_only_join_one_owner_s_partitions_into_rectangles(seed in any::<u64>(), workers in 1usize..4) {
        let mut rng = SmallRng::seed_from_u64(seed);
        let (mut index, base) = GlobalIndex::initial(grid(8, 8), workers).unwrap();
        let mut mints: Vec<IdMint> = (0..workers).map(|w| IdMint::new(base, w, workers)).collect();
        // Fragment the plan with random splits and moves.
        for _ in 0..30 {
            if let Some(change) = random_change(&mut rng, &index, workers, &mut mints[0])
                && matches!(change, PlanChange::Move { .. } | PlanChange::Split { .. }) {
                    index.apply(&change).unwrap();
                }
        }
        for (owner, mint) in mints.iter_mut().enumerate() {
            let all: Vec<_> = index.partitions().iter().map(|(&id, p)| (id, p.rect, p.owner, ())).collect();
            for change in plan_merges(all, owner, mint, |_, _| Some(())) {
                let PlanChange::Merge { first, second, .. } = change else { unreachable!() };
                prop_assert_eq!(index.info(first).unwrap().owner, owner);
                prop_assert_eq!(index.info(second).unwrap().owner, owner);
                // apply() refuses non-rectangles and mixed owners.
                index.apply(&change).unwrap();
            }
            prop_assert!(index.check_covering().is_ok());
            let mine: Vec<_> = index.partitions().values().filter(|p| p.owner == owner).map(|p| p.rect).collect();
            for (i, a) in mine.iter().enumerate() {
                for b in &mine[i + 1..] {
                    prop_assert!(a.union_if_rectangle(b).is_none(), "left mergeable {:?} {:?}", a, b);
                }
            }
        }
    }
}

//! SWARM running in timely: the matches, taken from its output stream,
//! equal a brute-force evaluation and a single static worker, at 1-4
//! workers, under static, SWARM and forced migration schedules, for both
//! built-in applications; a custom cost model changes the decisions. The
//! spatial example's command line (two processes included) is tested in
//! `tests/examples/spatial.rs`.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use equipoise::swarm::cost::{CostModel, RangeQueryCost};
use equipoise::swarm::events::{SwarmEvent, SwarmEventBuilder};
use equipoise::swarm::figures::Orders;
use equipoise::swarm::plan::PlanChange;
use equipoise::swarm::plan::Totals;
use equipoise::swarm::{Grid, Match, PartitionState, RangeQueries, Rect, SpatioTextual, Swarm, SwarmConfig, LOG_NAME};
use equipoise_lab::common::cluster::ClusterArgs;
use equipoise_lab::common::gather::gather_at_first_worker;
use equipoise_lab::swarm::input::SpatialInput;
use equipoise_lab::swarm::job::{
    brute_force, brute_force_matches, run_spatial, DecisionSpec, PolicySpec, SpatialJob, SpatialReport,
};
use equipoise_lab::swarm::workload::Hotspots;
use timely::dataflow::operators::{Input, Inspect};
use timely::dataflow::InputHandle;

fn grid() -> Grid {
    Grid::new(Rect::new(0.0, 0.0, 100.0, 100.0).unwrap(), 16, 16).unwrap()
}

fn workload(seed: u64, points: u64, queries: u64) -> Arc<SpatialInput> {
    Arc::new(
        Hotspots {
            points,
            queries,
            seed,
            ..Hotspots::default()
        }
        .generate(&grid()),
    )
}

fn run<S: PartitionState<Output = Match>>(
    input: &Arc<SpatialInput<S::Point, S::Query>>,
    policy: PolicySpec,
    workers: usize,
) -> SpatialReport
where
    S::Point: Sync,
    S::Query: Sync,
{
    let job = SpatialJob { policy, ..job(input) };
    run_spatial::<S>(job, &ClusterArgs::threads(workers))
        .unwrap()
        .expect("worker 0 is here")
}

fn job<P, Q>(input: &Arc<SpatialInput<P, Q>>) -> SpatialJob<P, Q> {
    SpatialJob {
        grid: grid(),
        input: Arc::clone(input),
        batch: 200,
        round: Some(2),
        plan_depth: 1,
        merge_every: 3,
        split_gain: Some(0.2),
        opening: true,
        work_per_check: Duration::ZERO,
        policy: PolicySpec::Static,
        max_in_flight: 3,
        progress: false,
        log: None,
    }
}

#[test]
fn matches_equal_brute_force_under_every_policy_and_worker_count() {
    for seed in 0..3 {
        let input = workload(seed, 6000, 150);
        let (matches, digest) = brute_force_matches(&input, 200);
        assert!(matches > 0, "the workload must produce matches");
        for workers in 1..=4 {
            for policy in [
                PolicySpec::Static,
                PolicySpec::Swarm(DecisionSpec::Threshold(1.1)),
                PolicySpec::Forced(seed),
            ] {
                let report = run::<RangeQueries>(&input, policy, workers);
                assert_eq!(
                    (report.matches, report.matches_digest),
                    (matches, digest),
                    "{policy} at {workers} workers, seed {seed}"
                );
                // A static plan needs no coordinator, so concludes no rounds.
                assert_eq!(report.rounds > 0, policy != PolicySpec::Static, "{policy}");
                let imbalance = report.per_epoch_max_over_mean;
                assert!(
                    1.0 <= imbalance.p50 && imbalance.p50 <= imbalance.p99 && imbalance.p99 <= imbalance.max,
                    "{imbalance:?}"
                );
                assert!(imbalance.max <= workers as f64 + 1e-9, "{imbalance:?}");
                // Plans concluded further ahead change where, never what.
                if policy != PolicySpec::Static {
                    let deep = SpatialJob {
                        policy,
                        plan_depth: 3,
                        ..job(&input)
                    };
                    let report = run_spatial::<RangeQueries>(deep, &ClusterArgs::threads(workers))
                        .unwrap()
                        .expect("worker 0 is here");
                    let context = format!("{policy} at {workers} workers, plan depth 3, seed {seed}");
                    assert_eq!((report.matches, report.matches_digest), (matches, digest), "{context}");
                    assert!(report.rounds > 0, "{context}");
                }
                if workers == 1 {
                    assert_eq!(imbalance.max, 1.0, "one worker is always the mean");
                }
                if matches!(policy, PolicySpec::Forced(_)) {
                    let m = report.migrations;
                    assert!(
                        m.moves + m.splits + m.merges + m.shares + m.unshares > 0,
                        "forced schedule changed nothing: {m:?}"
                    );
                    // A move is to another worker: as many moved as were ordered, at least.
                    assert!(m.partitions_moved >= m.moves, "{m:?}");
                    if workers == 1 {
                        assert_eq!((m.moves, m.partitions_moved), (0, 0), "{m:?}");
                    }
                }
            }
        }
    }
}

#[test]
fn unusable_policies_are_refused_by_name() {
    for tau in [f64::NAN, 0.5, f64::INFINITY] {
        let refused = Arc::new(Mutex::new(None));
        let slot = Arc::clone(&refused);
        timely::execute(timely::Config::thread(), move |worker| {
            let config = equipoise::swarm::SwarmConfig::new(grid());
            let mut input = InputHandle::<u64, timely::container::CapacityContainerBuilder<Vec<_>>>::new();
            worker.dataflow::<u64, _, _>(|scope| {
                let outcome = scope
                    .input_from(&mut input)
                    .swarm::<RangeQueries>(&config, equipoise::swarm::Policy::threshold(tau));
                *slot.lock().unwrap() = outcome.err().map(|e| e.to_string());
            });
        })
        .unwrap();
        let error = refused.lock().unwrap().take().expect("refused");
        assert!(error.contains("threshold tau") && error.contains("≥ 1"), "{error}");
    }
}

fn policies(seed: u64) -> [PolicySpec; 4] {
    [
        PolicySpec::Static,
        PolicySpec::StaticBlocks(4),
        PolicySpec::Swarm(DecisionSpec::Threshold(1.1)),
        PolicySpec::Forced(seed),
    ]
}

#[test]
fn spatio_textual_matches_equal_brute_force_under_every_policy_and_worker_count() {
    for seed in 0..2 {
        let input = Arc::new(
            Hotspots {
                points: 6000,
                queries: 300,
                seed,
                ..Hotspots::default()
            }
            .generate_textual(&grid(), 8),
        );
        let reference = brute_force(&input, 200, |query, point| {
            query.rect.contains(point.x, point.y) && query.data.subset_of(&point.data)
        });
        let spatial_only = brute_force(&input, 200, |query, point| query.rect.contains(point.x, point.y));
        assert!(
            reference.0 > 0 && reference.0 < spatial_only.0,
            "keywords must matter: {reference:?} vs {spatial_only:?}"
        );
        for workers in 1..=4 {
            for policy in policies(seed) {
                let report = run::<SpatioTextual>(&input, policy, workers);
                assert_eq!(
                    (report.matches, report.matches_digest),
                    reference,
                    "{policy} at {workers} workers, seed {seed}"
                );
            }
        }
    }
}

#[test]
fn fine_static_plans_match_brute_force() {
    let input = workload(5, 6000, 150);
    let reference = brute_force_matches(&input, 200);
    for workers in 1..=4 {
        for k in [1, 4, 16] {
            let report = run::<RangeQueries>(&input, PolicySpec::StaticBlocks(k), workers);
            assert_eq!(
                (report.matches, report.matches_digest),
                reference,
                "static:{k} at {workers}"
            );
            assert_eq!(report.partitions_final, (k * workers) as u64);
        }
    }
}

/// Every partition costs the same, whatever its load.
#[derive(Clone)]
struct Flat;

impl CostModel for Flat {
    fn work(&self, _: &Totals) -> f64 {
        1.0
    }
}

/// What the coordinator ordered, and the matches, with cost model `cost`.
fn orders_under(
    cost: impl CostModel + Clone + Send + Sync + 'static,
    input: &Arc<SpatialInput>,
) -> (Orders, (u64, u64)) {
    let job = SpatialJob {
        policy: PolicySpec::Swarm(DecisionSpec::Threshold(1.1)),
        ..job(input)
    };
    let result = Arc::new(Mutex::new(None));
    let slot = Arc::clone(&result);
    timely::execute(timely::Config::process(2), move |worker| {
        let mut input = InputHandle::new();
        let seen = Rc::new(Cell::new((0u64, 0u64)));
        let sink = Rc::clone(&seen);
        let config = job.config().with_cost(cost.clone());
        let handles = worker.dataflow::<u64, _, _>(|scope| {
            let (matches, handles) = job
                .swarm::<RangeQueries, _>(scope.input_from(&mut input), &config)
                .unwrap();
            matches.inspect(move |m: &Match| {
                let (count, digest) = sink.get();
                sink.set((count + 1, digest.wrapping_add(m.digest())));
            });
            handles
        });
        job.feed(worker, input, handles.probe(), &handles);
        let orders = handles.orders();
        let gathered = gather_at_first_worker(worker, seen.get());
        if worker.index() == 0 {
            let total = gathered.iter().fold((0u64, 0u64), |(c, d), &(count, digest)| {
                (c + count, d.wrapping_add(digest))
            });
            *slot.lock().unwrap() = Some((orders, total));
        }
    })
    .unwrap();

    result.lock().unwrap().take().unwrap()
}

#[test]
fn the_configured_cost_model_makes_the_decisions() {
    let input = workload(3, 20_000, 300);
    let reference = brute_force_matches(&input, 200);
    let (default, matches) = orders_under(RangeQueryCost::default(), &input);
    assert_eq!(matches, reference);
    assert!(default.moves > 0 && default.rebalanced > 0, "{default:?}");
    // Under a flat cost every worker holds the same cost and no split pays:
    // nothing is split or moved, and the matches are the same.
    let (flat, matches) = orders_under(Flat, &input);
    assert_eq!(matches, reference);
    assert_eq!((flat.splits, flat.moves, flat.rebalanced), (0, 0, 0), "{flat:?}");
}

#[test]
fn the_plans_changes_are_logged_to_timely_logging() {
    let input = workload(5, 10_000, 200);
    // Ordered on a control stream: every kind of change, and no rounds of
    // a coordinator's.
    let (orders, events, moved) = logged(&input, PolicySpec::Forced(9));
    assert_logged_changes(&orders, &events);
    assert!(moved > 0, "some partition changed owner");
    assert!(orders.moves + orders.splits + orders.merges > 0, "{orders:?}");
    assert!(!events.iter().any(|e| matches!(e, SwarmEvent::Round { .. })));
    // Decided by the coordinator: each round's loads too.
    let (orders, events, _) = logged(&input, PolicySpec::Swarm(DecisionSpec::Threshold(1.1)));
    assert_logged_changes(&orders, &events);
    let rounds = events
        .iter()
        .filter(|e| matches!(e, SwarmEvent::Round { loads, .. } if loads.len() == 2))
        .count() as u64;
    assert_eq!(rounds, orders.rounds, "{orders:?}");
}

/// Runs `policy` on `input` at 2 workers with the SWARM log recorded:
/// worker 0's orders and log events, and the partitions sent away, each
/// worker's migrations checked against its figures.
fn logged(input: &Arc<SpatialInput>, policy: PolicySpec) -> (Orders, Vec<SwarmEvent>, u64) {
    let job = SpatialJob { policy, ..job(input) };
    let result = Arc::new(Mutex::new(None));
    let slot = Arc::clone(&result);
    let moved_by_worker = Arc::new(Mutex::new(Vec::new()));
    let moved = Arc::clone(&moved_by_worker);
    timely::execute(timely::Config::process(2), move |worker| {
        let events: Rc<RefCell<Vec<SwarmEvent>>> = Rc::default();
        let sink = Rc::clone(&events);
        worker
            .log_register()
            .unwrap()
            .insert::<SwarmEventBuilder, _>(LOG_NAME, move |_, batch| {
                if let Some(batch) = batch {
                    sink.borrow_mut().extend(batch.drain(..).map(|(_, event)| event));
                }
            });
        let mut input = InputHandle::new();
        let config = job.config();
        let handles = worker.dataflow::<u64, _, _>(|scope| {
            let (_matches, handles) = job
                .swarm::<RangeQueries, _>(scope.input_from(&mut input), &config)
                .unwrap();
            handles
        });
        job.feed(worker, input, handles.probe(), &handles);
        worker.log_register().unwrap().flush();
        // Every worker logs the partitions it sent away, as its figures count them.
        let figures = handles.figures();
        let mut events = events.take();
        let migrated: Vec<u64> = events
            .iter()
            .filter_map(|event| match event {
                SwarmEvent::Migrated { from, to, bytes, .. } => {
                    assert!(*from == worker.index() && *to != *from && *to < 2, "{event:?}");
                    Some(*bytes)
                }
                _ => None,
            })
            .collect();
        assert_eq!(migrated.len() as u64, figures.partitions_moved);
        assert_eq!(migrated.iter().sum::<u64>(), figures.bytes_moved);
        events.retain(|event| !matches!(event, SwarmEvent::Migrated { .. }));
        moved.lock().unwrap().push(figures.partitions_moved);
        if worker.index() == 0 {
            *slot.lock().unwrap() = Some((handles.orders(), events));
        } else {
            // The coordinator runs on worker 0 alone.
            assert!(events.is_empty());
        }
    })
    .unwrap();
    let (orders, events) = result.lock().unwrap().take().unwrap();
    let moved = moved_by_worker.lock().unwrap().iter().sum();
    (orders, events, moved)
}

/// Each kind of change is logged as often as the orders count it.
fn assert_logged_changes(orders: &Orders, events: &[SwarmEvent]) {
    let count = |f: &dyn Fn(&SwarmEvent) -> bool| events.iter().filter(|e| f(e)).count() as u64;
    let changes =
        |kind: fn(&PlanChange) -> bool| count(&|e| matches!(e, SwarmEvent::Change { change, .. } if kind(change)));
    assert_eq!(changes(|c| matches!(c, PlanChange::Move { .. })), orders.moves);
    assert_eq!(changes(|c| matches!(c, PlanChange::Split { .. })), orders.splits);
    assert_eq!(changes(|c| matches!(c, PlanChange::Merge { .. })), orders.merges);
    assert_eq!(changes(|c| matches!(c, PlanChange::Share { .. })), orders.shares);
    assert_eq!(changes(|c| matches!(c, PlanChange::Unshare { .. })), orders.unshares);
}

/// A stream whose points nearly all fall in one cell of the 16 × 16 grid
/// (the rest uniform), with queries over that cell and elsewhere: no plan
/// of whole cells can balance it.
fn one_hot_cell(points: u64, queries: u64) -> Arc<SpatialInput> {
    use equipoise::swarm::{OutOfBounds, Point, Query, Record};
    let grid = grid();
    let mut state = 7u64;
    let mut next = move || {
        state = equipoise::common::hash::splitmix64(state);
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut records = Vec::new();
    let mut line = 0;
    for id in 0..queries {
        // Half the queries overlap the hot cell (37.5..43.75 both ways), half lie anywhere.
        let (x, y) = if id % 2 == 0 {
            (36.0, 36.0)
        } else {
            (next() * 90.0, next() * 90.0)
        };
        let query = Query::new(
            id,
            Rect::new(x, y, x + 6.0 + next() * 4.0, y + 6.0 + next() * 4.0).unwrap(),
        );
        records.push((line, Record::query(&grid, OutOfBounds::Reject, query).unwrap()));
        line += 1;
    }
    for id in 0..points {
        let (x, y) = if next() < 0.9 {
            (38.0 + next() * 5.0, 38.0 + next() * 5.0)
        } else {
            (next() * 100.0, next() * 100.0)
        };
        records.push((
            line,
            Record::point(&grid, OutOfBounds::Reject, Point::new(id, x, y)).unwrap(),
        ));
        line += 1;
    }
    Arc::new(SpatialInput {
        records,
        lines: line,
        skipped_lines: 0,
    })
}

#[test]
fn a_hot_cell_is_shared_and_its_points_dealt_exactly() {
    let input = one_hot_cell(40_000, 100);
    let (matches, digest) = brute_force_matches(&input, 200);
    for workers in [2, 4] {
        let report = run::<RangeQueries>(&input, PolicySpec::Swarm(DecisionSpec::Threshold(1.1)), workers);
        assert_eq!(
            (report.matches, report.matches_digest),
            (matches, digest),
            "{workers} workers"
        );
        let m = report.migrations;
        assert!(
            m.shares > 0,
            "{workers} workers: the hot cell was never shared: {m:?} {} rounds {:?}",
            report.rounds,
            report.per_worker_work
        );
        // Whole cells leave the busiest worker with 90 % of the points at
        // least; shared, the hot cell's points split.
        let bound = report.speedup_bound;
        assert!(
            bound > 0.75 * workers as f64,
            "{workers} workers: bound {bound:.2}, {m:?}"
        );
        let statics = run::<RangeQueries>(&input, PolicySpec::StaticBlocks(256 / workers), workers);
        assert!(
            statics.speedup_bound < 1.2,
            "{workers} workers: one cell per partition: {}",
            statics.speedup_bound
        );
    }
}

/// The opening: epoch 0's own records plan it, so a cell with 90 % of
/// the points is shared from the first epoch, where without the opening
/// the epochs before the first round's update run on the initial plan
/// (busiest worker near all the work). Exact either way.
#[test]
fn the_opening_shares_a_hot_cell_from_the_first_epoch() {
    let input = one_hot_cell(40_000, 100);
    let (matches, digest) = brute_force_matches(&input, 200);
    for workers in [2, 4] {
        let start = |opening| {
            let job = SpatialJob {
                policy: PolicySpec::Swarm(DecisionSpec::Threshold(1.1)),
                opening,
                ..job(&input)
            };
            let report = run_spatial::<RangeQueries>(job, &ClusterArgs::threads(workers))
                .unwrap()
                .expect("worker 0 is here");
            let context = format!("{workers} workers, opening {opening}");
            assert_eq!((report.matches, report.matches_digest), (matches, digest), "{context}");
            report.per_epoch_max_over_mean_start
        };
        let (opened, initial) = (start(true), start(false));
        assert!(opened.max <= 1.3, "{workers} workers: opened {opened:?}");
        assert!(
            initial.max >= 0.8 * workers as f64,
            "{workers} workers: the initial plan {initial:?}"
        );
    }
}

/// Megaphone's shape: a program orders the plan on a control stream.
/// Moving all of worker 0's partitions to worker 1 at epoch 0 leaves worker
/// 0 nothing to check from the second round on; a change naming a worker
/// beyond the last is refused and counted; the matches stay those of a
/// brute-force scan.
#[test]
fn a_control_stream_orders_the_plan_and_its_bad_changes_are_refused() {
    let input = workload(3, 4000, 100);
    let batch = 200;
    let reference = brute_force_matches(&input, batch);
    let config = SwarmConfig {
        round: Some(2),
        ..SwarmConfig::new(grid())
    };
    let (plan, _) = config.initial_plan(2).unwrap();
    let owned_by = |worker: usize| plan.partitions().iter().filter(move |(_, info)| info.owner == worker);
    let mut orders: Vec<PlanChange> = owned_by(0).map(|(&id, _)| PlanChange::Move { id, to: 1 }).collect();
    let moved = orders.len() as u64;
    orders.push(PlanChange::Move {
        id: *owned_by(1).next().unwrap().0,
        to: 2,
    });
    let ran = Arc::new(Mutex::new(Vec::new()));
    let sink_all = Arc::clone(&ran);
    timely::execute(timely::Config::process(2), move |worker| {
        let (mut records, mut control) = (InputHandle::new(), InputHandle::new());
        let seen = Rc::new(Cell::new((0u64, 0u64)));
        let sink = Rc::clone(&seen);
        let handles = worker.dataflow::<u64, _, _>(|scope| {
            let (matches, handles) = scope
                .input_from(&mut records)
                .swarm_controlled::<RangeQueries>(&config, scope.input_from(&mut control))
                .unwrap();
            matches.inspect(move |m: &Match| {
                let (count, digest) = sink.get();
                sink.set((count + 1, digest.wrapping_add(m.digest())));
            });
            handles
        });
        let (me, peers) = (worker.index() as u64, worker.peers() as u64);
        if me == 0 {
            control.send_batch(&mut orders.clone());
        }
        for (line, record) in &input.records {
            let epoch = line / batch;
            if epoch > *records.time() {
                records.advance_to(epoch);
                control.advance_to(epoch);
            }
            if line % peers == me {
                records.send(record.clone());
            }
        }
        drop((records, control));
        while worker.step() {}
        let checks_from_round_2: u64 = handles
            .figures()
            .recent_epochs
            .iter()
            .filter(|epoch| epoch.epoch >= 2)
            .map(|epoch| epoch.checks)
            .sum();
        sink_all
            .lock()
            .unwrap()
            .push((me, seen.get(), checks_from_round_2, handles.orders()));
    })
    .unwrap();
    let mut ran = ran.lock().unwrap().clone();
    ran.sort_by_key(|(worker, ..)| *worker);
    let (count, digest) = ran.iter().fold((0u64, 0u64), |(c, d), (_, (count, digest), ..)| {
        (c + count, d.wrapping_add(*digest))
    });
    assert_eq!((count, digest), reference);
    assert_eq!((ran[0].2, ran[1].2 > 0), (0, true), "checks from epoch 2 by worker");
    let orders = &ran[0].3;
    assert_eq!((orders.moves, orders.refused), (moved, 1), "{orders:?}");
}

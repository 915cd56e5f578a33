//! SWARM's migrations under random forced schedules (a random move, split
//! or merge every round), over seeds, 1–4 workers, grids,
//! batch, round, plan depth and merge sizes and both applications, each checked
//! against brute force: nothing lost, nothing duplicated, no panic; and
//! some as two processes over a hostfile, against one static worker.
//!
//! Minutes long, so ignored by default:
//!
//! ```sh
//! cargo test --release --test swarm_migrations -- --ignored --nocapture
//! ```
//!
//! `EQUIPOISE_SOAK_RUNS` (default 10 000) sets the in-process schedules,
//! `EQUIPOISE_SOAK_CLUSTER_RUNS` (default 20) the two-process ones.

use std::sync::Arc;
use std::time::{Duration, Instant};

use equipoise::common::hash::splitmix64;
use equipoise::swarm::{Grid, PartitionState, RangeQueries, Rect, SpatioTextual};
use equipoise_lab::common::cluster::ClusterArgs;
use equipoise_lab::swarm::job::{brute_force, run_spatial, Migrations, PolicySpec, SpatialJob};
use equipoise_lab::swarm::workload::Hotspots;
use support::{one_static_worker, report, run_two_processes, scratch};

mod support;

/// How many runs of a kind, from the environment or the default.
fn runs(variable: &str, default: u64) -> u64 {
    std::env::var(variable)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

/// One schedule's settings, all drawn from its index.
struct Schedule {
    seed: u64,
    workers: usize,
    grid: u32,
    batch: u64,
    round: u64,
    plan_depth: u64,
    merge_every: u64,
    points: u64,
    queries: u64,
    textual: bool,
}

impl Schedule {
    fn nth(index: u64) -> Self {
        let pick = |choices: &[u64], salt: u64| {
            choices[(splitmix64(index ^ salt.wrapping_mul(0x9e37_79b9_7f4a_7c15)) % choices.len() as u64) as usize]
        };
        Schedule {
            seed: index,
            workers: 1 + (index % 4) as usize,
            grid: pick(&[4, 8, 16, 32], 1) as u32,
            batch: pick(&[23, 100, 250, 700], 2),
            round: pick(&[1, 2, 3, 5], 3),
            plan_depth: pick(&[1, 1, 2, 4], 7),
            merge_every: pick(&[1, 2, 5], 4),
            points: pick(&[800, 2000, 4000], 5),
            queries: pick(&[20, 60, 150], 6),
            textual: index % 2 == 1,
        }
    }
}

/// Runs `schedule` on application `S` and returns (matches, digest,
/// plan changes) against brute force's (matches, digest).
fn check<S: PartitionState<Output = equipoise::swarm::Match>>(
    schedule: &Schedule,
    input: Arc<equipoise_lab::swarm::input::SpatialInput<S::Point, S::Query>>,
    reference: (u64, u64),
    grid: Grid,
) -> Migrations
where
    S::Point: Sync,
    S::Query: Sync,
{
    let job = SpatialJob {
        grid,
        input,
        batch: schedule.batch,
        round: Some(schedule.round),
        plan_depth: schedule.plan_depth,
        merge_every: schedule.merge_every,
        split_gain: Some(0.2),
        opening: true,
        work_per_check: Duration::ZERO,
        policy: PolicySpec::Forced(schedule.seed),
        max_in_flight: 3,
        progress: false,
        log: None,
    };
    let report = run_spatial::<S>(job, &ClusterArgs::threads(schedule.workers))
        .unwrap()
        .expect("worker 0 is here");
    assert_eq!(
        (report.matches, report.matches_digest),
        reference,
        "schedule {} ({} workers, grid {}, batch {}, round {}, plan depth {}, merge every {}, textual {})",
        schedule.seed,
        schedule.workers,
        schedule.grid,
        schedule.batch,
        schedule.round,
        schedule.plan_depth,
        schedule.merge_every,
        schedule.textual
    );
    report.migrations
}

#[test]
#[ignore = "a soak of minutes: cargo test --release --test swarm_migrations -- --ignored"]
fn random_forced_schedules_lose_and_duplicate_nothing() {
    let started = Instant::now();
    let total = runs("EQUIPOISE_SOAK_RUNS", 10_000);
    let (mut changes, mut shares, mut unshares) = (0, 0, 0);
    for index in 0..total {
        let schedule = Schedule::nth(index);
        let grid = Grid::new(Rect::new(0.0, 0.0, 100.0, 100.0).unwrap(), schedule.grid, schedule.grid).unwrap();
        let hotspots = Hotspots {
            points: schedule.points,
            queries: schedule.queries,
            seed: schedule.seed,
            ..Hotspots::default()
        };
        let m = if schedule.textual {
            let input = Arc::new(hotspots.generate_textual(&grid, 8));
            let reference = brute_force(&input, schedule.batch, |query, point| {
                query.rect.contains(point.x, point.y) && query.data.subset_of(&point.data)
            });
            check::<SpatioTextual>(&schedule, input, reference, grid)
        } else {
            let input = Arc::new(hotspots.generate(&grid));
            let reference = brute_force(&input, schedule.batch, |query, point| {
                query.rect.contains(point.x, point.y)
            });
            check::<RangeQueries>(&schedule, input, reference, grid)
        };
        changes += m.moves + m.splits + m.merges + m.shares + m.unshares;
        shares += m.shares;
        unshares += m.unshares;
    }
    assert!(changes > total, "the schedules changed too little: {changes} changes");
    assert!(shares > 0 && unshares > 0, "{shares} shares, {unshares} unshares");
    println!(
        "{total} forced schedules, {changes} plan changes ({shares} shares, {unshares} unshares), every one's matches equal to brute force, in {:.0} s",
        started.elapsed().as_secs_f64()
    );
}

#[test]
#[ignore = "a soak of minutes: cargo test --release --test swarm_migrations -- --ignored"]
fn random_forced_schedules_over_two_processes_match_one_static_worker() {
    let total = runs("EQUIPOISE_SOAK_CLUSTER_RUNS", 20);
    let (mut moved, mut shares) = (0, 0);
    for index in 0..total {
        let seed = 1000 + index;
        let common = [
            "--app".to_string(),
            (if index % 2 == 0 { "range" } else { "textual" }).to_string(),
            "--points".into(),
            "8000".into(),
            "--queries".into(),
            "200".into(),
            "--grid".into(),
            "16x16".into(),
            "--seed".into(),
            seed.to_string(),
            "--batch".into(),
            ["100", "250", "700"][index as usize % 3].into(),
            "--round".into(),
            ["1", "2", "3"][index as usize % 3].into(),
            "--plan-depth".into(),
            ["1", "2", "4", "3"][index as usize % 4].into(),
        ];
        let common: Vec<&str> = common.iter().map(String::as_str).collect();
        let single = one_static_worker(&common, &format!("soak-single-{index}.json"));
        let cluster = scratch(&format!("soak-cluster-{index}.json"));
        let forced = format!("forced:{seed}");
        run_two_processes("spatial", &[&common[..], &["--policy", &forced]].concat(), &cluster);
        let cluster = report(&cluster);
        assert_eq!(
            (&cluster["matches"], &cluster["matches_digest"]),
            (&single["matches"], &single["matches_digest"]),
            "two processes, forced:{seed}"
        );
        moved += cluster["migrations"]["partitions_moved"].as_u64().unwrap();
        shares += cluster["migrations"]["shares"].as_u64().unwrap();
    }
    assert!(moved > total, "the schedules moved too little: {moved} partitions");
    assert!(shares > 0, "no schedule shared a partition");
    println!("{total} forced schedules as 2 processes × 2 workers, {moved} partitions moved, {shares} shares, each run's matches equal to one static worker's");
}

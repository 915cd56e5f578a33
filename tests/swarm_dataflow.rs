//! SWARM running in timely: the matches equal a brute-force evaluation and a
//! single static worker, at 1-4 workers, under static, SWARM and forced
//! migration schedules.

use std::sync::Arc;
use std::time::Duration;

use equipoise::common::cluster::ClusterArgs;
use equipoise::swarm::geometry::{Grid, Rect};
use equipoise::swarm::input::SpatialInput;
use equipoise::swarm::job::{brute_force_matches, run_spatial, DecisionSpec, PolicySpec, SpatialJob, SpatialReport};
use equipoise::swarm::workload::Hotspots;

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
        .generate(&grid().bounds()),
    )
}

fn run(input: &Arc<SpatialInput>, policy: PolicySpec, workers: usize) -> SpatialReport {
    let job = SpatialJob {
        grid: grid(),
        input: Arc::clone(input),
        batch: 200,
        round: 2,
        merge_every: 3,
        work_per_check: Duration::ZERO,
        policy,
        max_in_flight: 3,
        progress: false,
    };
    run_spatial(job, &ClusterArgs::threads(workers))
        .unwrap()
        .expect("worker 0 is here")
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
                let report = run(&input, policy, workers);
                assert_eq!(
                    (report.matches, report.matches_digest),
                    (matches, digest),
                    "{policy} at {workers} workers, seed {seed}"
                );
                assert!(report.rounds > 0);
                if matches!(policy, PolicySpec::Forced(_)) && workers > 1 {
                    let m = report.migrations;
                    assert!(
                        m.moves + m.splits + m.merges > 0,
                        "forced schedule changed nothing: {m:?}"
                    );
                }
            }
        }
    }
}

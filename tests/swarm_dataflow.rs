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
use support::{report, run_example, run_two_processes, scratch};

mod support;

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

fn run(input: &Arc<SpatialInput>, policy: PolicySpec, workers: usize) -> SpatialReport {
    let job = SpatialJob {
        grid: grid(),
        input: Arc::clone(input),
        batch: 200,
        round: 2,
        merge_every: 3,
        split_gain: Some(0.2),
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

#[test]
fn two_processes_with_migrations_match_one_static_worker() {
    let common = [
        "--workload",
        "hotspot",
        "--points",
        "20000",
        "--queries",
        "300",
        "--grid",
        "16x16",
        "--batch",
        "500",
        "--round",
        "2",
    ];
    let single = scratch("spatial-single.json");
    let out = run_example(
        "spatial",
        &[
            &common[..],
            &["--policy", "static", "--report", single.to_str().unwrap()],
        ]
        .concat(),
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let single = report(&single);
    assert!(single["matches"].as_u64().unwrap() > 0);
    for policy in ["forced:7", "swarm"] {
        let cluster = scratch(&format!("spatial-{policy}.json"));
        run_two_processes(
            "spatial",
            &[&common[..], &["--policy", policy, "--decision", "threshold:1.1"]].concat(),
            &cluster,
        );
        let cluster = report(&cluster);
        assert_eq!(
            (cluster["workers"].as_u64(), cluster["processes"].as_u64()),
            (Some(4), Some(2))
        );
        assert_eq!(cluster["matches"], single["matches"], "{policy}");
        assert_eq!(cluster["matches_digest"], single["matches_digest"], "{policy}");
        let moved = &cluster["migrations"]["partitions_moved"];
        assert!(moved.as_u64().unwrap() > 0, "{policy}: no partition crossed workers");
    }
}

#[test]
fn bad_spatial_input_is_named_or_skipped() {
    let file = scratch("bad.csv");
    std::fs::write(
        &file,
        "# points and queries\nq,1,0,0,50,50\np,1,10,10\np,2,NaN,3\nq,2,9,9,1,1\np,3,2000,1\nr,9\nr,1\n",
    )
    .unwrap();
    let path = file.to_str().unwrap();
    let out = run_example(
        "spatial",
        &["--input", path, "--bounds", "0,0,100,100", "--grid", "8x8"],
    );
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("{path}:4: ")) && stderr.contains("not finite"),
        "{stderr}"
    );

    let skip = scratch("bad-skip.json");
    let args = [
        "--input",
        path,
        "--bounds",
        "0,0,100,100",
        "--grid",
        "8x8",
        "--on-error",
        "skip",
        "-w",
        "2",
        "--batch",
        "1",
    ];
    let out = run_example("spatial", &[&args[..], &["--report", skip.to_str().unwrap()]].concat());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let skip = report(&skip);
    // NaN, the inverted rectangle, the point outside and the unknown removal.
    assert_eq!(skip["skipped_lines"], 4);
    assert_eq!(
        (
            skip["points"].as_u64(),
            skip["queries"].as_u64(),
            skip["removals"].as_u64()
        ),
        (Some(1), Some(1), Some(1))
    );
    assert_eq!(skip["matches"], 1);

    for (flag, value, expected) in [
        ("--bounds", "0,0,1", "expected four numbers"),
        ("--grid", "8by8", "expected C1xC2"),
        (
            "--policy",
            "dynamic",
            "expected swarm, static, static:<k> or forced:<seed>",
        ),
        ("--decision", "threshold:0.5", "not a number ≥ 1"),
    ] {
        let out = run_example("spatial", &[flag, value, "--points", "10"]);
        assert!(!out.status.success(), "{flag} {value}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(expected),
            "{flag} {value}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

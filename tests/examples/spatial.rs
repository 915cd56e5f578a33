//! The spatial example's command line: two processes × two workers with a
//! hostfile on 127.0.0.1 under forced, SWARM and static plans match one
//! static worker; a file of points and queries is read as written (negative
//! bounds), bad lines are named or skipped and counted, bad settings are
//! clear errors; a move decided just before the input ends still happens.

use equipoise::swarm::{Grid, Rect};
use equipoise_lab::swarm::job::brute_force_matches;

use crate::support::{one_static_worker, report, run_example, run_two_processes, scratch};

#[test]
fn two_processes_with_migrations_match_one_static_worker() {
    for (app, workload) in [("range", "hotspot"), ("textual", "hotspot"), ("range", "places")] {
        let common = [
            "--app",
            app,
            "--workload",
            workload,
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
        let single = one_static_worker(&common, &format!("spatial-{app}-{workload}-single.json"));
        assert!(single["matches"].as_u64().unwrap() > 0);
        // The input's shape is reported: its busiest cell holds a share of
        // each epoch, and it is what the run read.
        let shape = &single["workload_shape"];
        assert!(shape["epochs"].as_u64().unwrap() >= 40, "{shape}");
        assert!(shape["top_cell_share"][2].as_f64().unwrap() > 0.0, "{shape}");
        for policy in ["forced:7", "swarm", "static:4"] {
            let cluster = scratch(&format!("spatial-{app}-{workload}-{policy}.json"));
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
            assert_eq!(cluster["matches"], single["matches"], "{app} {workload} {policy}");
            assert_eq!(
                cluster["matches_digest"], single["matches_digest"],
                "{app} {workload} {policy}"
            );
            assert_eq!(cluster["workload_shape"], single["workload_shape"]);
            let moved = cluster["migrations"]["partitions_moved"].as_u64().unwrap();
            assert_eq!(
                moved > 0,
                policy != "static:4",
                "{app} {workload} {policy}: partitions moved {moved}"
            );
        }
    }
}

#[test]
fn negative_bounds_are_taken_as_written() {
    let file = scratch("world.csv");
    std::fs::write(
        &file,
        "q,1,-10,35,30,60\np,1,2.35,48.85\np,2,-74.0,40.7\nr,1\np,3,2.35,48.85\n",
    )
    .unwrap();
    let out_path = scratch("world.json");
    let out = run_example(
        "spatial",
        &[
            "--input",
            file.to_str().unwrap(),
            "--bounds",
            "-180,-90,180,90",
            "--grid",
            "36x18",
            "--batch",
            "1",
            "--report",
            out_path.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // Paris matches while the query lives; New York never does.
    assert_eq!(report(&out_path)["matches"], 1);
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
            "expected swarm, swarm:<k>, static, static:<k> or forced:<seed>",
        ),
        ("--policy", "swarm:0", "swarm:`0`: partitions per worker to start from"),
        ("--decision", "threshold:0.5", "not a number ≥ 1"),
        (
            "--plan-depth",
            "0",
            "SWARM plan_depth: 0 rounds: must be from 1 to 65536",
        ),
        // 64 workers' indexes of 2^26 cells: about 690 GB, refused before
        // anything is allocated.
        (
            "--grid",
            "8192x8192",
            "needs about 687.2 GB of memory, more than 80 % of the",
        ),
    ] {
        let out = run_example("spatial", &[flag, value, "--points", "10", "-w", "64"]);
        assert!(!out.status.success(), "{flag} {value}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(expected),
            "{flag} {value}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// A partition whose move takes effect at the last epoch, from a worker that
/// has no record of its own after the move was decided: the move must still
/// happen before that worker leaves (it once dropped its capabilities as soon
/// as its input ended, and the new owner could miss the partition).
#[test]
fn a_move_decided_before_the_input_ends_still_happens() {
    let mut lines = vec!["q,1,0,0,1.9,1".to_string()];
    for epoch in 0..5 {
        while lines.len() < epoch * 10 {
            lines.push("#".into());
        }
        // Epochs 2 and 3 only touch worker 1's half (columns 2 and 3).
        let left = if epoch == 2 || epoch == 3 { 2.2 } else { 0.2 };
        for i in 0..6 {
            lines.push(format!("p,{},{},0.5", epoch * 10 + i, left + 0.3 * i as f64));
        }
    }
    let file = scratch("late-move.csv");
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    let reference = brute_force_matches(
        &equipoise_lab::swarm::input::read_spatial(
            &file,
            &Grid::new(Rect::new(0.0, 0.0, 4.0, 1.0).unwrap(), 4, 1).unwrap(),
            equipoise_lab::common::lines::OnError::Fail,
        )
        .unwrap(),
        10,
    );
    for _ in 0..5 {
        let out_path = scratch("late-move.json");
        let out = run_example(
            "spatial",
            &[
                "--input",
                file.to_str().unwrap(),
                "--bounds",
                "0,0,4,1",
                "--grid",
                "4x1",
                "--batch",
                "10",
                "--round",
                "2",
                "--split-gain",
                "off",
                "--decision",
                "threshold:1.0",
                // One block per worker: worker 1 holds columns 2 and 3.
                "--policy",
                "swarm:1",
                // The move must be decided by a round, not by the opening.
                "--no-opening",
                "-w",
                "2",
                "--report",
                out_path.to_str().unwrap(),
            ],
        );
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let report = report(&out_path);
        assert_eq!(report["matches"].as_u64(), Some(reference.0));
        assert!(
            report["migrations"]["partitions_moved"].as_u64().unwrap() > 0,
            "{report}"
        );
    }
}

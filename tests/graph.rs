//! The graph example: BFS, connected components and PageRank give the same
//! digest with and without `--skew` (split edges joined in the loop,
//! combined proposals), on one worker and several, as two processes with a
//! hostfile on 127.0.0.1, and a hub's work no longer on one worker.

use support::{report, run_example, run_two_processes, scratch};

mod support;

/// A small power-law graph with edges changing over three rounds.
const GRAPH: [&str; 10] = [
    "--nodes",
    "2048",
    "--edges",
    "20000",
    "--exponent",
    "1.0",
    "--rounds",
    "3",
    "--changes",
    "500",
];

fn run(name: &str, args: &[&str]) -> serde_json::Value {
    run_alone(name, &[&GRAPH[..], args].concat())
}

/// The report of the example run with `args` alone.
fn run_alone(name: &str, args: &[&str]) -> serde_json::Value {
    let path = scratch(name);
    let out = run_example("graph", &[args, &["--report", path.to_str().unwrap()]].concat());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    report(&path)
}

#[test]
fn every_algorithm_computes_as_differential_does_on_one_worker() {
    for algorithm in ["bfs", "cc", "pagerank"] {
        let reference = run(&format!("{algorithm}-1.json"), &["--algorithm", algorithm, "-w", "1"]);
        assert_ne!(reference["digest"], 0, "an empty output would match anything");
        assert_eq!(reference["updates"], 20000 + 2 * 3 * 500);
        for workers in ["1", "2", "3", "4"] {
            let run = run(
                &format!("{algorithm}-{workers}-skew.json"),
                &["--algorithm", algorithm, "-w", workers, "--skew"],
            );
            assert_eq!(run["digest"], reference["digest"], "{algorithm} on {workers} workers");
            assert_eq!(run["skew"], true);
        }
    }
}

#[test]
fn a_hubs_join_output_and_proposals_are_spread() {
    // At 16 workers (the counts do not depend on the cores) the hubs'
    // out-edges put 1.7 × the mean join output on their workers; split,
    // every worker is near the mean (1.09).
    let args = [
        "--algorithm",
        "bfs",
        "-w",
        "16",
        "--nodes",
        "65536",
        "--edges",
        "400000",
    ];
    let own = run_alone("bfs-own-16.json", &args);
    let skew = run_alone("bfs-skew-16.json", &[&args[..], &["--skew"]].concat());
    assert_eq!(own["digest"], skew["digest"]);
    let over = |report: &serde_json::Value, field: &str| report[field].as_f64().unwrap();
    assert!(over(&own, "join_output_over_mean") > 1.5, "{own}");
    assert!(over(&skew, "join_output_over_mean") < 1.15, "{skew}");
    assert!(over(&skew, "reduce_input_over_mean") < 1.15, "{skew}");
    // The combined proposals are fewer, and the join's output the same.
    let total = |report: &serde_json::Value, field: &str| -> u64 {
        report[field]
            .as_array()
            .unwrap()
            .iter()
            .map(|count| count.as_u64().unwrap())
            .sum()
    };
    assert!(total(&skew, "reduce_input") < total(&own, "reduce_input"));
    let (own_joined, skew_joined) = (total(&own, "join_output") as f64, total(&skew, "join_output") as f64);
    assert!(
        (own_joined - skew_joined).abs() / own_joined < 0.01,
        "{own_joined} {skew_joined}"
    );
}

#[test]
fn two_processes_compute_as_one() {
    for algorithm in ["bfs", "pagerank"] {
        let one = run(
            &format!("{algorithm}-one.json"),
            &["--algorithm", algorithm, "-w", "4", "--skew"],
        );
        let path = scratch(&format!("{algorithm}-two.json"));
        run_two_processes(
            "graph",
            &[&GRAPH[..], &["--algorithm", algorithm, "--skew"]].concat(),
            &path,
        );
        let two = report(&path);
        assert_eq!((two["workers"].as_u64(), two["processes"].as_u64()), (Some(4), Some(2)));
        assert_eq!(two["digest"], one["digest"], "{algorithm}");
    }
}

#[test]
fn bad_settings_are_clear_errors() {
    for (args, says) in [
        (&["--edges", "0"][..], "--edges"),
        (&["--edges", "100", "--rounds", "3", "--changes", "50"], "--rounds"),
        (&["--nodes", "0"], "--nodes"),
        (&["--exponent=-1"], "--exponent"),
    ] {
        let out = run_example("graph", args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

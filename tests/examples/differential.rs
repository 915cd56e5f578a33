//! The differential example's command line: `--grouping` (every PKG
//! scheme, with and without a slack), `--join --skew` and `--reduce ..
//! --skew` give the digest of differential's own operator on one worker,
//! in one process and as two processes with a hostfile on 127.0.0.1; the
//! log names the keys combined; bad settings are clear errors. The
//! operators themselves are tested against differential's in
//! `tests/pkg_aggregation.rs`, `tests/skew_join.rs` and `tests/skew_reduce.rs`.

use crate::support::{report, run_example, run_two_processes, scratch};

/// A stream whose hottest key (p1 ≈ 0.61) is a head key at 4 workers.
/// (Whatever the grouping, `count()` exchanges by key again, so these runs
/// check that every update arrives exactly once, not where; the routing
/// itself is tested in the library.)
const COMMON: [&str; 8] = [
    "--keys",
    "zipf:2.0:5000",
    "--epochs",
    "6",
    "--inserts",
    "20000",
    "--window",
    "2",
];

/// [`COMMON`] with three times the inserts: enough updates that every
/// worker of four combines its hot keys.
const MORE: [&str; 8] = [
    "--keys",
    "zipf:2.0:5000",
    "--epochs",
    "6",
    "--inserts",
    "60000",
    "--window",
    "2",
];

/// The report of a run as two processes of two workers each.
fn two_processes(name: &str, args: &[&str]) -> serde_json::Value {
    let path = scratch(name);
    run_two_processes("differential", args, &path);
    let cluster = report(&path);
    assert_eq!(
        (cluster["workers"].as_u64(), cluster["processes"].as_u64()),
        (Some(4), Some(2))
    );
    cluster
}

fn one_process(name: &str, args: &[&str]) -> serde_json::Value {
    one_process_with(&COMMON, name, args)
}

fn one_process_with(common: &[&str], name: &str, args: &[&str]) -> serde_json::Value {
    let path = scratch(name);
    let out = run_example(
        "differential",
        &[common, args, &["--report", path.to_str().unwrap()]].concat(),
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    report(&path)
}

#[test]
fn every_grouping_gives_counts_digest_on_one_worker() {
    let reference = one_process("count-1.json", &["-w", "1"]);
    assert_eq!(reference["counter"], "count()");
    // 6 epochs of inserts, 4 of retractions (from epoch 2 on).
    assert_eq!(reference["updates"], 10 * 20000);
    assert_ne!(reference["counts_digest"], 0, "an empty output would match anything");
    for grouping in ["pkg", "dchoices", "wchoices"] {
        let run = one_process(&format!("{grouping}-3.json"), &["-w", "3", "--grouping", grouping]);
        assert_eq!(run["counter"], format!("pkg_count_with({grouping})"));
        assert_eq!(
            run["counts_digest"], reference["counts_digest"],
            "{grouping} at 3 workers"
        );
        let sticky = one_process(
            &format!("{grouping}-slack.json"),
            &["-w", "3", "--grouping", grouping, "--slack", "64"],
        );
        assert_eq!(sticky["counter"], format!("pkg_count_with({grouping}, slack 64)"));
        assert_eq!(
            sticky["counts_digest"], reference["counts_digest"],
            "{grouping} with a slack"
        );
        let cluster = two_processes(
            &format!("cluster-{grouping}.json"),
            &[&COMMON[..], &["--grouping", grouping]].concat(),
        );
        assert_eq!(
            cluster["counts_digest"], reference["counts_digest"],
            "{grouping} in two processes"
        );
    }
}

#[test]
fn skew_join_gives_joins_digest_on_one_worker() {
    let reference = one_process("join-1.json", &["-w", "1", "--join"]);
    assert_eq!(reference["counter"], "join()");
    assert_ne!(reference["counts_digest"], 0, "an empty output would match anything");
    let run = one_process("skew-join-3.json", &["-w", "3", "--join", "--skew"]);
    assert_eq!(run["counter"], "skew_join()");
    assert_eq!(run["counts_digest"], reference["counts_digest"], "3 workers");
    let cluster = two_processes("cluster-skew-join.json", &[&COMMON[..], &["--join", "--skew"]].concat());
    assert_eq!(cluster["counts_digest"], reference["counts_digest"], "two processes");
}

#[test]
fn skew_reductions_give_differentials_digests_on_one_worker() {
    for (reduce, plain, skew) in [
        ("count", "count()", "skew_count()"),
        ("distinct", "distinct()", "skew_distinct()"),
        ("min", "reduce(min)", "skew_min()"),
        ("max", "reduce(max)", "skew_max()"),
        ("top3", "reduce(top3)", "skew_reduce_associative(top3)"),
    ] {
        let reference = one_process_with(&MORE, &format!("{reduce}-1.json"), &["-w", "1", "--reduce", reduce]);
        assert_eq!(reference["counter"], plain);
        assert_ne!(reference["counts_digest"], 0, "an empty output would match anything");
        let run = one_process_with(
            &MORE,
            &format!("skew-{reduce}-3.json"),
            &["-w", "3", "--reduce", reduce, "--skew"],
        );
        assert_eq!(run["counter"], skew);
        assert_eq!(run["counts_digest"], reference["counts_digest"], "{reduce}, 3 workers");
        let cluster = two_processes(
            &format!("cluster-skew-{reduce}.json"),
            &[&MORE[..], &["--reduce", reduce, "--skew"]].concat(),
        );
        assert_eq!(
            cluster["counts_digest"], reference["counts_digest"],
            "{reduce} in two processes"
        );
    }
    // The log names the keys each worker combines.
    let log = scratch("skew-count.log");
    let out = run_example(
        "differential",
        &[&MORE[..], &["-w", "2", "--skew", "--log", log.to_str().unwrap()]].concat(),
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let log = std::fs::read_to_string(&log).expect("the log");
    assert!(log.lines().any(|line| line.contains("Combined")), "{log}");
}

#[test]
fn bad_settings_are_clear_errors() {
    let out = run_example("differential", &["--inserts", "0"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("--inserts") && stderr.contains("at least 1"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    let out = run_example("differential", &["--grouping", "key", "--slack", "5"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("--slack") && stderr.contains("pkg"), "{stderr}");
    for (args, flag, other) in [
        (&["--skew", "--grouping", "pkg"][..], "--skew", "--grouping"),
        (&["--join", "--grouping", "pkg"][..], "--grouping", "--join"),
        (&["--join", "--reduce", "distinct"][..], "--reduce", "--join"),
    ] {
        let out = run_example("differential", args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success());
        assert!(stderr.contains(flag) && stderr.contains(other), "{stderr}");
    }
    let out = run_example("differential", &["--grouping", "nope"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("nope"), "{stderr}");
}

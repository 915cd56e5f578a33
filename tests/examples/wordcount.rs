//! The word-count example and its job (the lab's `run_wordcount`): the
//! report's digest, top-k, distinct keys, per-worker records and key
//! replication against a HashMap count for every grouping, timely's own
//! exchange (the benchmarks' baseline) routing each key to one worker, two
//! processes × two workers with a hostfile on 127.0.0.1 matching one, and
//! bad input. The library's word count under every grouping is tested in
//! `tests/pkg_aggregation.rs`.

use std::collections::HashMap;
use std::sync::Arc;

use equipoise::pkg::sim::top_of;
use equipoise::pkg::{key_hash, Scheme};
use equipoise_lab::common::cluster::ClusterArgs;
use equipoise_lab::common::keys::{KeySampler, KeySpec};
use equipoise_lab::pkg::wordcount::{count_digest, run_wordcount, KeySource, WordcountConfig};

use crate::support::{report, run_two_processes, scratch};

fn synthetic(records: u64) -> KeySource {
    let spec: KeySpec = "zipf:1.3:2000".parse().unwrap();
    KeySource::Synthetic {
        sampler: Arc::new(KeySampler::new(&spec, 5)),
        records,
    }
}

fn config(grouping: Scheme, source: KeySource) -> WordcountConfig {
    WordcountConfig {
        batch: 1000,
        top: 5,
        ..WordcountConfig::new(grouping, source)
    }
}

/// Digest and top-5 of a plain HashMap count of the source's keys.
fn reference(source: &KeySource) -> (u64, Vec<(String, u64)>, usize) {
    let mut counts: HashMap<String, u64> = HashMap::new();
    for index in 0..source.len() {
        *counts.entry(source.key(index)).or_default() += 1;
    }
    let digest = counts
        .iter()
        .fold(0u64, |sum, (key, &count)| sum.wrapping_add(count_digest(key, count)));
    let distinct = counts.len();
    (digest, top_of(counts.into_iter().collect(), 5), distinct)
}

#[test]
fn the_jobs_report_counts_exactly_under_every_grouping() {
    let source = synthetic(30_000);
    let (digest, top, distinct) = reference(&source);
    for workers in [1, 3] {
        for grouping in Scheme::ALL {
            let report = run_wordcount(config(grouping, source.clone()), &ClusterArgs::threads(workers))
                .unwrap()
                .expect("worker 0 is in this process");
            let context = format!("{grouping} at {workers} workers");
            assert_eq!(report.counts_digest, digest, "{context}");
            assert_eq!(report.top, top, "{context}");
            assert_eq!(report.distinct_keys as usize, distinct, "{context}");
            assert_eq!(report.per_worker_records.len(), workers, "{context}");
            assert_eq!(report.per_worker_records.iter().sum::<u64>(), 30_000, "{context}");
            let most = match grouping {
                Scheme::Key => 1,
                Scheme::Shuffle | Scheme::DChoices | Scheme::WChoices => workers,
                Scheme::Potc | Scheme::Pkg => 2.min(workers),
            };
            assert!(
                report.max_key_replication <= most,
                "{context}: {}",
                report.max_key_replication
            );
        }
    }
}

#[test]
fn timelys_own_exchange_counts_exactly_and_routes_each_key_to_one_worker() {
    let source = synthetic(30_000);
    let (digest, top, distinct) = reference(&source);
    for workers in 1..=4 {
        let baseline = WordcountConfig {
            timely_exchange: true,
            ..config(Scheme::Pkg, source.clone())
        };
        let report = run_wordcount(baseline, &ClusterArgs::threads(workers))
            .unwrap()
            .expect("worker 0 is in this process");
        assert_eq!(report.counts_digest, digest, "{workers} workers");
        assert_eq!((&report.top, report.distinct_keys as usize), (&top, distinct));
        // Timely's `Exchange` sends a record to hash % workers.
        let mut routed = vec![0u64; workers];
        for index in 0..source.len() {
            routed[(key_hash(&source.key(index)) % workers as u64) as usize] += 1;
        }
        assert_eq!(report.per_worker_records, routed, "{workers} workers");
        assert!(report.timely_exchange && report.grouping == Scheme::Key);
        assert_eq!(report.max_key_replication, 1);
    }
}

// ---- the example binary ----

fn run_example(args: &[&str]) -> std::process::Output {
    crate::support::run_example("wordcount", args)
}

#[test]
fn two_processes_with_a_hostfile_match_one_worker() {
    // PKG, and D-Choices on a stream whose hot key (p1 ≈ 0.61) is a head:
    // head keys spread over up to all 4 workers of the two processes.
    // And timely's own exchange (`--timely-exchange`), the cluster benchmark's baseline.
    for (grouping, keys, most) in [
        ("pkg", "zipf:1.2:5000", 2),
        ("dchoices", "zipf:2.0:5000", 4),
        ("timely", "zipf:1.2:5000", 1),
    ] {
        let choice: Vec<&str> = match grouping {
            "timely" => vec!["--timely-exchange"],
            _ => vec!["--grouping", grouping],
        };
        let common = [&["--keys", keys, "--records", "50000", "--batch", "2000"][..], &choice].concat();
        let single = scratch(&format!("single-{grouping}.json"));
        let out = run_example(&[&common[..], &["--report", single.to_str().unwrap()]].concat());
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

        let cluster = scratch(&format!("cluster-{grouping}.json"));
        run_two_processes("wordcount", &common, &cluster);
        let (single, cluster) = (report(&single), report(&cluster));
        assert_eq!(cluster["workers"], 4);
        assert_eq!(cluster["processes"], 2);
        assert_eq!(cluster["counts_digest"], single["counts_digest"], "{grouping}");
        assert_eq!(cluster["top"], single["top"], "{grouping}");
        assert_eq!(cluster["records"], 50000);
        let replication = cluster["max_key_replication"].as_u64().unwrap();
        assert!(replication <= most, "{grouping}: {replication}");
        if grouping == "dchoices" {
            assert!(
                replication > 2,
                "the hot key should be spread beyond two: {replication}"
            );
        }
    }
}

#[test]
fn input_file_with_empty_and_malformed_lines() {
    let file = scratch("words.txt");
    std::fs::write(&file, b"apple\npear\n\napple\n\xff\xfeoops\nfig\napple\n").unwrap();
    let path = file.to_str().unwrap();

    let out = run_example(&["--input", path]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&format!("{path}:5: not UTF-8")), "{stderr}");

    let skip = scratch("skip.json");
    let out = run_example(&[
        "--input",
        path,
        "--on-error",
        "skip",
        "-w",
        "3",
        "--report",
        skip.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let skip = report(&skip);
    assert_eq!(skip["records"], 5);
    assert_eq!(skip["empty_lines"], 1);
    assert_eq!(skip["skipped_lines"], 1);
    assert_eq!(skip["top"][0], serde_json::json!(["apple", 3]));
    let expected = [("apple", 3), ("pear", 1), ("fig", 1)]
        .iter()
        .fold(0u64, |sum, &(key, count)| sum.wrapping_add(count_digest(key, count)));
    assert_eq!(skip["counts_digest"].as_u64().unwrap(), expected);
}

#[test]
fn bad_options_are_clear_errors() {
    let out = run_example(&["--input", "/nonexistent/words.txt"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/words.txt: No such file"));

    let out = run_example(&["--keys", "pareto:1:10"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("expected zipf:<exponent>:<distinct>"));

    let out = run_example(&["--grouping", "random"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("random"));

    let out = run_example(&["-n", "2", "-p", "2"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--process"));
}

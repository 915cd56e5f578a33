//! Differential's graph loops on power-law graphs, own against skew-proof:
//! the graph example (`examples/graph.rs`) without and with `--skew` (the
//! edges split outside the loop by `skew_arrange_by_key` and joined by
//! `SkewArranged::join_map`, the proposals combined by `skew_combine`).
//!
//! `cargo bench --bench graph_skew -- [--algorithms bfs,cc,pagerank]
//!  [--graphs chung-lu:1.0,chung-lu:1.2,rmat] [--nodes 1048576] [--edges 8388608]
//!  [--work-workers 2,8,16,32,64] [--timed-workers 2] [--rounds 3]
//!  [--change-rounds 5] [--changes 10000] [--bin-dir DIR] [--json PATH]`
//!
//! **Work counts** (one run each way per graph and worker count, with the
//! skew report, `--doctor`; the counts do not depend on the cores): the
//! busiest worker's records ÷ the mean for the loop's edge arrangement
//! (the records each worker's arrangement of the edges received:
//! differential's `EdgesArranged`, the skew-proof `SkewArrange`), for the
//! join's output and for the reduce's input (in PageRank the
//! consolidation that sums the surfers), each summed over every
//! iteration; the keys split; the copies (the loop's values copied to a
//! hub's other workers) ÷ the loop's values arranged at their owners; and
//! the records every arrangement held at most, skew-proof ÷ own.
//!
//! **Time** (at `--timed-workers`, `--rounds` rounds, each running own
//! and skew-proof in turn, no report): the median seconds from the first
//! edge to the last change's result (the graph drawn before), the load's
//! seconds and each change round's latency, and own ÷ skew-proof seconds
//! (of the medians, and the median of each round's pair).
//!
//! Every pair's digests must agree. The examples run from `--bin-dir`
//! (default: `target/release/examples`, built first).

use std::path::{Path, PathBuf};
use std::process::Command;

use clap::Parser;
use equipoise::doctor::Spread;
use equipoise_lab::common::example_runs::built_examples;
use equipoise_lab::common::median::spread;
use serde::Serialize;
use serde_json::Value;

#[derive(Parser, Debug)]
struct Args {
    /// The graph computations (comma-separated: bfs, cc, pagerank).
    #[arg(long, value_delimiter = ',', default_value = "bfs")]
    algorithms: Vec<String>,
    /// Graphs: chung-lu:<exponent> or rmat (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "chung-lu:1.0,chung-lu:1.2,rmat")]
    graphs: Vec<String>,
    /// Nodes.
    #[arg(long, default_value_t = 1 << 20)]
    nodes: u64,
    /// Edges loaded.
    #[arg(long, default_value_t = 1 << 23)]
    edges: u64,
    /// Worker threads of the work counts (comma-separated; none: no work
    /// counts).
    #[arg(long, value_delimiter = ',', num_args = 0.., default_value = "2,8,16,32,64")]
    work_workers: Vec<usize>,
    /// Worker threads of the timed runs (comma-separated; none: no timed
    /// runs).
    #[arg(long, value_delimiter = ',', num_args = 0.., default_value = "2")]
    timed_workers: Vec<usize>,
    /// Rounds of the timed runs (each runs own and skew-proof in turn).
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Change rounds after the load, in every run.
    #[arg(long, default_value_t = 5)]
    change_rounds: u64,
    /// Edges inserted and retracted per change round.
    #[arg(long, default_value_t = 10_000)]
    changes: u64,
    /// Where the example binaries are (default: built into
    /// target/release/examples).
    #[arg(long)]
    bin_dir: Option<PathBuf>,
    /// Also write every row as JSON to PATH.
    #[arg(long)]
    json: Option<PathBuf>,
    /// cargo bench passes --bench; accepted and ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

/// The example's flags for one graph, besides the workers.
fn graph_flags(args: &Args, algorithm: &str, graph: &str) -> Vec<String> {
    let mut flags: Vec<String> = ["--algorithm", algorithm, "--nodes", &args.nodes.to_string()]
        .map(String::from)
        .to_vec();
    flags.extend(["--edges".into(), args.edges.to_string()]);
    flags.extend(["--rounds".into(), args.change_rounds.to_string()]);
    flags.extend(["--changes".into(), args.changes.to_string()]);
    match graph.split_once(':') {
        Some(("chung-lu", exponent)) => flags.extend(["--graph", "chung-lu", "--exponent", exponent].map(String::from)),
        _ if graph == "rmat" => flags.extend(["--graph", "rmat"].map(String::from)),
        _ => panic!("--graphs: `{graph}` is neither chung-lu:<exponent> nor rmat"),
    }
    flags
}

/// One run of the example: its report, and with `doctor`, its skew report.
fn run(bin: &Path, flags: &[String], workers: usize, skew: bool, doctor: bool) -> (Value, Option<Value>) {
    let dir = std::env::temp_dir().join(format!("equipoise-graph-skew-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    let (report, diagnosis) = (dir.join("report.json"), dir.join("doctor.json"));
    let mut command = Command::new(bin.join("graph"));
    command
        .args(flags)
        .args(["-w", &workers.to_string(), "--quiet", "--report"])
        .arg(&report);
    if skew {
        command.arg("--skew");
    }
    if doctor {
        command.arg("--doctor").arg(&diagnosis).arg("--doctor-arrangements");
    }
    let out = command.output().expect("the graph example runs");
    assert!(
        out.status.success(),
        "{flags:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let read = |path: &Path| serde_json::from_str(&std::fs::read_to_string(path).expect("written")).expect("JSON");
    (read(&report), doctor.then(|| read(&diagnosis)))
}

/// An operator's records per worker in a skew report, by name.
fn records(doctor: &Value, name: &str) -> Vec<u64> {
    doctor["operators"]
        .as_array()
        .expect("operators")
        .iter()
        .find(|operator| operator["name"] == name)
        .map(|operator| numbers(&operator["records"]))
        .unwrap_or_default()
}

fn numbers(values: &Value) -> Vec<u64> {
    values
        .as_array()
        .expect("numbers")
        .iter()
        .map(|v| v.as_u64().unwrap_or(0))
        .collect()
}

/// The busiest of `counts` ÷ their mean.
fn over_mean(counts: &[u64]) -> f64 {
    let counts: Vec<f64> = counts.iter().map(|&count| count as f64).collect();
    Spread::of(&counts).busiest_over_mean
}

/// The records every arrangement held at most, summed.
fn arranged(doctor: &Value) -> i64 {
    doctor["operators"]
        .as_array()
        .expect("operators")
        .iter()
        .filter_map(|operator| operator["arranged"].as_array())
        .flatten()
        .map(|held| held.as_i64().unwrap_or(0))
        .sum()
}

/// One row of the work counts.
#[derive(Debug, Serialize)]
struct WorkRow {
    algorithm: String,
    graph: String,
    workers: usize,
    /// Own and skew-proof: the edge arrangement's, the join output's and
    /// the reduce input's busiest ÷ mean.
    edges_over_mean: [f64; 2],
    join_over_mean: [f64; 2],
    reduce_over_mean: [f64; 2],
    hot_keys: usize,
    copies: u64,
    loop_values: u64,
    arranged_ratio: f64,
}

fn work_row(bin: &Path, args: &Args, algorithm: &str, graph: &str, workers: usize) -> WorkRow {
    let flags = graph_flags(args, algorithm, graph);
    let (own, own_doctor) = run(bin, &flags, workers, false, true);
    let (skew, skew_doctor) = run(bin, &flags, workers, true, true);
    assert_eq!(
        own["digest"], skew["digest"],
        "{algorithm} on {graph} at {workers} workers"
    );
    let (own_doctor, skew_doctor) = (own_doctor.expect("asked"), skew_doctor.expect("asked"));
    let from_report = |report: &Value, field: &str| over_mean(&numbers(&report[field]));
    WorkRow {
        algorithm: algorithm.into(),
        graph: graph.into(),
        workers,
        edges_over_mean: [
            over_mean(&records(&own_doctor, "EdgesArranged")),
            over_mean(&records(&skew_doctor, "SkewArrange")),
        ],
        join_over_mean: [from_report(&own, "join_output"), from_report(&skew, "join_output")],
        reduce_over_mean: [from_report(&own, "reduce_input"), from_report(&skew, "reduce_input")],
        hot_keys: skew_doctor["hot_keys"].as_array().map_or(0, Vec::len),
        copies: records(&skew_doctor, "SkewJoinCopied").iter().sum(),
        loop_values: records(&skew_doctor, "SkewJoinOther").iter().sum(),
        arranged_ratio: arranged(&skew_doctor) as f64 / arranged(&own_doctor).max(1) as f64,
    }
}

/// One row of the timed runs: medians over the rounds.
#[derive(Debug, Serialize)]
struct TimedRow {
    algorithm: String,
    graph: String,
    workers: usize,
    /// Own and skew-proof seconds (least, median, most).
    seconds: [(f64, f64, f64); 2],
    load_s: [f64; 2],
    change_p50_ms: [f64; 2],
    change_p99_ms: [f64; 2],
    /// Own ÷ skew-proof seconds, of the medians and the median of each
    /// round's pair.
    speedup: f64,
    paired_speedup: f64,
}

fn timed_row(bin: &Path, args: &Args, algorithm: &str, graph: &str, workers: usize) -> TimedRow {
    let flags = graph_flags(args, algorithm, graph);
    let mut runs: [Vec<Value>; 2] = [Vec::new(), Vec::new()];
    for round in 0..args.rounds {
        // Alternating which goes first, so that neither always runs warm.
        for skew in [round % 2 == 1, round % 2 == 0] {
            let (report, _) = run(bin, &flags, workers, skew, false);
            runs[usize::from(skew)].push(report);
        }
    }
    assert!(
        runs.iter()
            .flatten()
            .all(|report| report["digest"] == runs[0][0]["digest"]),
        "{algorithm} on {graph}: digests differ"
    );
    let field = |side: usize, pick: &dyn Fn(&Value) -> f64| spread(runs[side].iter().map(pick).collect());
    let seconds = |report: &Value| report["elapsed_s"].as_f64().unwrap_or(f64::NAN);
    let median = |side: usize, pick: &dyn Fn(&Value) -> f64| field(side, pick).1;
    let pairs: Vec<f64> = runs[0]
        .iter()
        .zip(&runs[1])
        .map(|(own, skew)| seconds(own) / seconds(skew))
        .collect();
    TimedRow {
        algorithm: algorithm.into(),
        graph: graph.into(),
        workers,
        seconds: [field(0, &seconds), field(1, &seconds)],
        load_s: [0, 1].map(|side| median(side, &|r| r["load_s"].as_f64().unwrap_or(f64::NAN))),
        change_p50_ms: [0, 1].map(|side| median(side, &|r| r["change_latency_ms"]["p50"].as_f64().unwrap_or(f64::NAN))),
        change_p99_ms: [0, 1].map(|side| median(side, &|r| r["change_latency_ms"]["p99"].as_f64().unwrap_or(f64::NAN))),
        speedup: median(0, &seconds) / median(1, &seconds),
        paired_speedup: spread(pairs).1,
    }
}

fn print_work(rows: &[WorkRow]) {
    println!("\n### Work counts: busiest worker ÷ mean, own → skew-proof\n");
    println!("| algorithm | graph | workers | edge arrangement | join output | reduce input | keys split | copies ÷ loop values | arranged, skew ÷ own |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for row in rows {
        println!(
            "| {} | {} | {} | {:.2} → {:.2} | {:.2} → {:.2} | {:.2} → {:.2} | {} | {} ÷ {} ({:.4} %) | {:.4} |",
            row.algorithm,
            row.graph,
            row.workers,
            row.edges_over_mean[0],
            row.edges_over_mean[1],
            row.join_over_mean[0],
            row.join_over_mean[1],
            row.reduce_over_mean[0],
            row.reduce_over_mean[1],
            row.hot_keys,
            row.copies,
            row.loop_values,
            100.0 * row.copies as f64 / row.loop_values.max(1) as f64,
            row.arranged_ratio
        );
    }
}

fn print_timed(rows: &[TimedRow]) {
    println!("\n### Time: own → skew-proof (median of the rounds)\n");
    println!(
        "| algorithm | graph | workers | seconds (range) | load s | change p50 / p99 ms | own ÷ skew-proof (paired) |"
    );
    println!("|---|---|---|---|---|---|---|");
    for row in rows {
        let [(own_least, own, own_most), (skew_least, skew, skew_most)] = row.seconds;
        println!(
            "| {} | {} | {} | {own:.2} ({own_least:.2}–{own_most:.2}) → {skew:.2} ({skew_least:.2}–{skew_most:.2}) | {:.2} → {:.2} | {:.1} / {:.1} → {:.1} / {:.1} | {:.3} ({:.3}) |",
            row.algorithm,
            row.graph,
            row.workers,
            row.load_s[0],
            row.load_s[1],
            row.change_p50_ms[0],
            row.change_p99_ms[0],
            row.change_p50_ms[1],
            row.change_p99_ms[1],
            row.speedup,
            row.paired_speedup
        );
    }
}

fn main() {
    let args = Args::parse();
    let bin = args
        .bin_dir
        .clone()
        .unwrap_or_else(|| built_examples(&["--example", "graph"]));
    println!(
        "graph_skew: {} nodes, {} edges, {} change rounds of {} edges",
        args.nodes, args.edges, args.change_rounds, args.changes
    );
    let (mut work, mut timed) = (Vec::new(), Vec::new());
    for algorithm in &args.algorithms {
        for graph in &args.graphs {
            for &workers in &args.timed_workers {
                timed.push(timed_row(&bin, &args, algorithm, graph, workers));
                eprintln!("{:?}", timed.last().expect("a row"));
            }
            for &workers in &args.work_workers {
                work.push(work_row(&bin, &args, algorithm, graph, workers));
                eprintln!("{:?}", work.last().expect("a row"));
            }
        }
    }
    print_work(&work);
    print_timed(&timed);
    if let Some(path) = &args.json {
        let json = serde_json::json!({ "work": work, "timed": timed });
        std::fs::write(path, serde_json::to_string_pretty(&json).expect("JSON")).expect("written");
    }
}

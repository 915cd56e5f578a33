//! Several processes against one: each capability's example started as a
//! cluster on 127.0.0.1 (a hostfile of free ports), side by side with one
//! process of the same total workers, in turn within each round.
//!
//! `cargo bench --bench cluster -- [--processes 2] [--workers 1,2] [--runs 3] [--examples wordcount,differential,spatial,shedding,throttle] [--also EXAMPLE:FLAGS|EXAMPLE=FLAGS] [--bin-dir DIR] [--json PATH]`
//!
//! Each shape P × W (P processes of W workers; every P in `--processes`
//! with every W in `--workers`) runs beside 1 × P·W. A row shows the
//! medians over `--runs` rounds of throughput and of the epoch latency
//! (the shedding and throttle examples: record delay) p50 and p99, the
//! ratios cluster ÷ one process, and whether the results' digests agree
//! (the word count, differential and spatial examples). The targets: a
//! throughput ratio of at least 0.8 and a p50 at most twice one process's.
//!
//! The examples run from `--bin-dir` (default: `target/release/examples`,
//! built first with `cargo build --release --examples`), so the same
//! benchmark binary runs on a machine with the binaries copied beside it.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use clap::Parser;
use equipoise_lab::common::example_runs::{ExampleRun, Figures};
use equipoise_lab::common::launch::Shape;
use equipoise_lab::common::median::spread;
use serde::Serialize;

#[derive(Parser, Debug)]
struct Args {
    /// Process counts of the clusters.
    #[arg(long, value_delimiter = ',', default_values_t = [2])]
    processes: Vec<usize>,
    /// Workers per process of the clusters.
    #[arg(long, value_delimiter = ',', default_values_t = [1, 2])]
    workers: Vec<usize>,
    /// Rounds per row: the table shows medians.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Which examples (wordcount, differential, spatial, shedding,
    /// throttle; `none`: only the `--also` rows).
    #[arg(long, value_delimiter = ',')]
    examples: Vec<String>,
    /// A further row of an example with flags beyond its defaults, as
    /// `EXAMPLE:FLAGS` (e.g. `spatial:--batch 4000`), or with these flags
    /// instead of its defaults, as `EXAMPLE=FLAGS` (e.g. `differential=--skew`);
    /// repeatable.
    #[arg(long, value_name = "EXAMPLE:FLAGS")]
    also: Vec<String>,
    /// Where the example binaries are (default: built into
    /// target/release/examples).
    #[arg(long, value_name = "DIR")]
    bin_dir: Option<PathBuf>,
    /// Also write every run's figures as JSON to PATH.
    #[arg(long, value_name = "PATH")]
    json: Option<PathBuf>,
    /// Seconds a run may take before it is ended as failed.
    #[arg(long, default_value_t = 600.0)]
    timeout_s: f64,
    /// cargo bench passes --bench; accepted and ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

/// Every run of one row, for `--json`.
#[derive(Serialize)]
struct Row {
    example: String,
    cluster: String,
    one_process: String,
    cluster_runs: Vec<Figures>,
    one_process_runs: Vec<Figures>,
}

fn main() {
    let args = Args::parse();
    let bin_dir = args.bin_dir.clone().unwrap_or_else(build_examples);
    let known: Vec<String> = ExampleRun::all().into_iter().map(|run| run.name).collect();
    if let Some(unknown) = args
        .examples
        .iter()
        .find(|name| *name != "none" && !known.contains(name))
    {
        panic!("--examples {unknown}: not one of {} or none", known.join(", "));
    }
    let mut examples: Vec<ExampleRun> = ExampleRun::all()
        .into_iter()
        .filter(|run| args.examples.is_empty() || args.examples.contains(&run.name))
        .collect();
    for also in &args.also {
        // `EXAMPLE:FLAGS` adds to the example's own flags, `EXAMPLE=FLAGS` replaces them.
        let at = also.find([':', '=']).unwrap_or(also.len());
        let (name, flags) = (&also[..at], also[at..].get(1..).unwrap_or(""));
        let Some(run) = ExampleRun::all().into_iter().find(|run| run.name == name) else {
            panic!("--also {also}: {name} is not one of {}", known.join(", "));
        };
        let flags: Vec<&str> = flags.split_whitespace().collect();
        examples.push(match also[at..].starts_with('=') {
            true => run.instead(&flags),
            false => run.with(&flags),
        });
    }
    let timeout = Duration::from_secs_f64(args.timeout_s);
    let mut rows = Vec::new();
    println!("| example | cluster | one process | throughput (cluster / one) | ratio | p50 ms (cluster / one) | ratio | p99 ms (cluster / one) | digests |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for example in &examples {
        for &processes in &args.processes {
            for &workers in &args.workers {
                let cluster = Shape::new(processes, workers);
                let one = cluster.one_process();
                let (mut cluster_runs, mut one_runs) = (Vec::new(), Vec::new());
                for _ in 0..args.runs {
                    // In turn, so that both meet the same machine.
                    for (shape, runs) in [(one, &mut one_runs), (cluster, &mut cluster_runs)] {
                        match example.run(&bin_dir, shape, timeout) {
                            Ok(figures) => runs.push(figures),
                            Err(error) => eprintln!("{} {shape}: {error}", example.name),
                        }
                    }
                }
                println!("{}", table_row(example, cluster, one, &cluster_runs, &one_runs));
                rows.push(Row {
                    example: example.name.clone(),
                    cluster: cluster.to_string(),
                    one_process: one.to_string(),
                    cluster_runs,
                    one_process_runs: one_runs,
                });
            }
        }
    }
    if let Some(path) = &args.json {
        let json = serde_json::to_string_pretty(&rows).expect("figures serialize");
        std::fs::write(path, json).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
}

/// One line of the table: medians (and the throughput's range), ratios, digests.
fn table_row(
    example: &ExampleRun,
    cluster: Shape,
    one: Shape,
    cluster_runs: &[Figures],
    one_runs: &[Figures],
) -> String {
    if cluster_runs.is_empty() || one_runs.is_empty() {
        return format!("| {} | {cluster} | {one} | failed | | | | | |", example.name);
    }
    let median = |runs: &[Figures], key: fn(&Figures) -> f64| spread(runs.iter().map(key).collect()).1;
    let (c, o) = (|key| median(cluster_runs, key), |key| median(one_runs, key));
    let throughput = |f: &Figures| f.throughput;
    let (p50, p99) = (|f: &Figures| f.p50_ms, |f: &Figures| f.p99_ms);
    let digests: Vec<Option<u64>> = cluster_runs.iter().chain(one_runs).map(|f| f.digest).collect();
    let agree = match digests[0] {
        None => "—",
        Some(_) if digests.iter().all(|d| *d == digests[0]) => "equal",
        Some(_) => "DIFFER",
    };
    let (low, _, high) = spread(cluster_runs.iter().map(throughput).collect());
    format!(
        "| {} | {cluster} | {one} | {} / {} {} (cluster {}–{}) | {:.2} | {:.2} / {:.2} | {:.2} | {:.1} / {:.1} | {agree} |",
        example.name,
        si(c(throughput)),
        si(o(throughput)),
        example.unit,
        si(low),
        si(high),
        c(throughput) / o(throughput),
        c(p50),
        o(p50),
        c(p50) / o(p50),
        c(p99),
        o(p99),
    )
}

/// 1.23 M, 456 k.
fn si(value: f64) -> String {
    if value >= 1e6 {
        format!("{:.2} M", value / 1e6)
    } else if value >= 1e3 {
        format!("{:.0} k", value / 1e3)
    } else {
        format!("{value:.0}")
    }
}

/// Builds the examples in release and returns where they are.
fn build_examples() -> PathBuf {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new(cargo)
        .args(["build", "--release", "--examples", "--quiet"])
        .status()
        .expect("cargo runs");
    assert!(status.success(), "cargo build --release --examples failed");
    let mut dir = std::env::current_exe().expect("the benchmark's path");
    // target/release/deps/cluster-… -> target/release/examples
    dir.pop();
    dir.pop();
    dir.push("examples");
    dir
}

//! Several processes against one: each capability's example started as a
//! cluster on 127.0.0.1 (a hostfile of free ports), side by side with one
//! process of the same total workers, in turn within each round.
//!
//! `cargo bench --bench cluster -- [--processes 2] [--workers 1,2] [--runs 3] [--examples wordcount,differential,spatial,shedding,throttle] [--also EXAMPLE:FLAGS|EXAMPLE=FLAGS] [--no-baseline] [--bin-dir DIR] [--json PATH]`
//!
//! Each shape P × W (P processes of W workers; every P in `--processes`
//! with every W in `--workers`) runs beside 1 × P·W. A row shows the
//! medians over `--runs` rounds of throughput and of the epoch latency
//! (the shedding and throttle examples: record delay) p50 and p99, the
//! ratios cluster ÷ one process ("kept"), and whether the results' digests
//! agree (the word count, differential and spatial examples). The targets:
//! a throughput ratio of at least 0.8 and a p50 at most twice one process's.
//!
//! Beside each example, at the same shapes and in the same rounds, the same
//! job on timely's and differential's own operators (unless
//! `--no-baseline`): the word count through timely's `Exchange`
//! (`--timely-exchange`), differential's `count()` or `join()` (the flags
//! without `--grouping` or `--skew`), the spatial stream on a static plan
//! with no coordinator (`--policy static`). The row then shows what
//! timely's own keeps at that shape, and equipoise's share ÷ timely's
//! (with the throughputs' ratio at the cluster's shape): what the cluster
//! costs beyond timely's own cost.
//!
//! The examples run from `--bin-dir` (default: `target/release/examples`,
//! built first with `cargo build --release --examples`), so the same
//! benchmark binary runs on a machine with the binaries copied beside it.

use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use equipoise_lab::common::example_runs::{built_examples, ExampleRun, Figures};
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
    /// Leave out the runs on timely's and differential's own operators.
    #[arg(long)]
    no_baseline: bool,
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
    /// The same job on timely's own operators, if it has one.
    baseline: Option<String>,
    baseline_cluster_runs: Vec<Figures>,
    baseline_one_process_runs: Vec<Figures>,
}

/// One row's runs, cluster and one process, of the example and of its baseline.
#[derive(Default)]
struct Runs {
    cluster: Vec<Figures>,
    one: Vec<Figures>,
    baseline_cluster: Vec<Figures>,
    baseline_one: Vec<Figures>,
}

fn main() {
    let args = Args::parse();
    let bin_dir = args.bin_dir.clone().unwrap_or_else(|| built_examples(&["--examples"]));
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
    println!("| example | cluster | one process | throughput (cluster / one) | kept | timely's own (cluster / one) | kept | equipoise ÷ timely | p50 ms (cluster / one) | ratio | p99 ms (cluster / one) | digests |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    for example in &examples {
        let baseline = example.baseline().filter(|_| !args.no_baseline);
        for &processes in &args.processes {
            for &workers in &args.workers {
                let cluster = Shape::new(processes, workers);
                let one = cluster.one_process();
                let mut runs = Runs::default();
                for _ in 0..args.runs {
                    // In turn, so that all meet the same machine.
                    let mut turns = vec![(example, one, &mut runs.one), (example, cluster, &mut runs.cluster)];
                    if let Some(baseline) = &baseline {
                        turns.push((baseline, one, &mut runs.baseline_one));
                        turns.push((baseline, cluster, &mut runs.baseline_cluster));
                    }
                    for (run, shape, figures) in turns {
                        match run.run(&bin_dir, shape, timeout) {
                            Ok(run) => figures.push(run),
                            Err(error) => eprintln!("{} {shape}: {error}", run.name),
                        }
                    }
                }
                println!("{}", table_row(example, cluster, one, &runs));
                rows.push(Row {
                    example: example.name.clone(),
                    cluster: cluster.to_string(),
                    one_process: one.to_string(),
                    cluster_runs: runs.cluster,
                    one_process_runs: runs.one,
                    baseline: baseline.as_ref().map(|run| run.name.clone()),
                    baseline_cluster_runs: runs.baseline_cluster,
                    baseline_one_process_runs: runs.baseline_one,
                });
            }
        }
    }
    if let Some(path) = &args.json {
        let json = serde_json::to_string_pretty(&rows).expect("figures serialize");
        std::fs::write(path, json).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
}

/// The median of one figure over runs.
fn median(runs: &[Figures], key: fn(&Figures) -> f64) -> f64 {
    spread(runs.iter().map(key).collect()).1
}

/// One line of the table: medians (and the throughput's range), ratios,
/// timely's own beside, digests.
fn table_row(example: &ExampleRun, cluster: Shape, one: Shape, runs: &Runs) -> String {
    if runs.cluster.is_empty() || runs.one.is_empty() {
        return format!("| {} | {cluster} | {one} | failed | | | | | | | | |", example.name);
    }
    let throughput = |f: &Figures| f.throughput;
    let (p50, p99) = (|f: &Figures| f.p50_ms, |f: &Figures| f.p99_ms);
    let (c, o) = (|key| median(&runs.cluster, key), |key| median(&runs.one, key));
    let kept = c(throughput) / o(throughput);
    let (timely, share) = match (runs.baseline_cluster.is_empty(), runs.baseline_one.is_empty()) {
        (false, false) => {
            let (bc, bo) = (
                median(&runs.baseline_cluster, throughput),
                median(&runs.baseline_one, throughput),
            );
            (
                format!("{} / {} | {:.2}", si(bc), si(bo), bc / bo),
                format!("{:.2} ({:.2} at {cluster})", kept / (bc / bo), c(throughput) / bc),
            )
        }
        _ => ("— | —".to_string(), "—".to_string()),
    };
    let all = runs.cluster.iter().chain(&runs.one);
    let digests: Vec<Option<u64>> = all
        .chain(&runs.baseline_cluster)
        .chain(&runs.baseline_one)
        .map(|f| f.digest)
        .collect();
    let agree = match digests[0] {
        None => "—",
        Some(_) if digests.iter().all(|d| *d == digests[0]) => "equal",
        Some(_) => "DIFFER",
    };
    let (low, _, high) = spread(runs.cluster.iter().map(throughput).collect());
    format!(
        "| {} | {cluster} | {one} | {} / {} {} (cluster {}–{}) | {kept:.2} | {timely} | {share} | {:.2} / {:.2} | {:.2} | {:.1} / {:.1} | {agree} |",
        example.name,
        si(c(throughput)),
        si(o(throughput)),
        example.unit,
        si(low),
        si(high),
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

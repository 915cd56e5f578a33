//! Skewed word count with a choice of grouping: key, shuffle, PoTC or PKG.
//!
//! ```text
//! cargo run --release --example wordcount -- --grouping pkg --keys zipf:1.2:100000 \
//!     --records 1000000 --batch 10000 --work-us 1 -w 2 --report pkg.json
//! ```
//!
//! Several processes: give each the same flags plus `-n`, `-p` and `--hostfile`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use equipoise::pkg::Scheme;
use equipoise_lab::common::cluster::ClusterArgs;
use equipoise_lab::common::doctor_args::DoctorArgs;
use equipoise_lab::common::keys::{KeySampler, KeySpec};
use equipoise_lab::common::lines::{read_key_lines, OnError};
use equipoise_lab::common::log_file::LogFile;
use equipoise_lab::common::program::{check_work_us, write_report};
use equipoise_lab::common::Error;
use equipoise_lab::pkg::wordcount::{run_wordcount, KeySource, WordcountConfig, WordcountReport};

/// Word count over a skewed key stream, grouped by key, shuffle, PoTC or PKG.
#[derive(Parser, Debug)]
#[command(version)]
struct Args {
    #[command(flatten)]
    cluster: ClusterArgs,
    /// Routing of records to the counting workers.
    #[arg(long, value_enum, default_value_t = Scheme::Pkg)]
    grouping: Scheme,
    /// With `--grouping pkg`, `dchoices` or `wchoices`: PKG's slack (for
    /// D-/W-Choices, their tail's), the load a key's first worker may carry
    /// beyond its second before records go to the second (0: the less
    /// loaded, every time).
    #[arg(long, default_value_t = 0)]
    slack: u64,
    /// Synthetic keys: zipf:<exponent>:<distinct>, mandelbrot:<s>:<q>:<distinct> or lognormal:<mu>:<sigma>:<distinct>.
    #[arg(long, conflicts_with = "input", default_value = "zipf:1.2:100000")]
    keys: KeySpec,
    /// Read keys from FILE, one per line, instead of generating them.
    #[arg(long, value_name = "FILE")]
    input: Option<PathBuf>,
    /// Number of synthetic records.
    #[arg(long, default_value_t = 1_000_000)]
    records: u64,
    /// Records per epoch (over all workers).
    #[arg(long, default_value_t = 10_000)]
    batch: u64,
    /// Busy work per record in the counting stage, in microseconds.
    #[arg(long, default_value_t = 0.0)]
    work_us: f64,
    /// Length of the top-k list.
    #[arg(long, default_value_t = 10)]
    top: usize,
    /// Seed of the synthetic keys.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// A line of --input that is not UTF-8: fail, or skip and count it.
    #[arg(long, value_enum, default_value_t = OnError::Fail)]
    on_error: OnError,
    /// Epochs a worker may have open before waiting for the oldest.
    #[arg(long, default_value_t = 2)]
    max_in_flight: u64,
    /// Write the JSON report to PATH (from the process hosting worker 0).
    #[arg(long, value_name = "PATH")]
    report: Option<PathBuf>,
    /// No progress lines on stderr.
    #[arg(long)]
    quiet: bool,
    /// The pact's decisions (timely log events: per second, the records
    /// sent to each worker and the imbalance; D-/W-Choices' head changes),
    /// one JSON object a line (with several processes, process p writes
    /// FILE.p).
    #[arg(long, value_name = "FILE")]
    log: Option<PathBuf>,
    #[command(flatten)]
    doctor: DoctorArgs,
    /// Count on timely's own operators instead, the cluster benchmark's
    /// baseline: every record exchanged to its key's worker (timely's
    /// `Exchange`) and counted there in one stage, with no grouping pact
    /// and no merge. The counts are the same.
    #[arg(long, conflicts_with_all = ["grouping", "slack", "log"])]
    timely_exchange: bool,
}

fn main() -> ExitCode {
    equipoise_lab::common::program::exit_quietly_on_closed_stdout();
    equipoise_lab::common::program::exit_code("wordcount", run(Args::parse()))
}

fn run(args: Args) -> Result<(), Error> {
    let work = check_work_us(args.work_us)?;
    let source = match &args.input {
        Some(path) => KeySource::Lines(Arc::new(read_key_lines(path, args.on_error)?)),
        None => KeySource::Synthetic {
            sampler: Arc::new(KeySampler::new(&args.keys, args.seed)),
            records: args.records,
        },
    };
    // What the processes of a cluster must agree on to count the same stream.
    let mut cluster = args.cluster.clone();
    cluster.agree("--grouping", args.grouping);
    cluster.agree("--timely-exchange", args.timely_exchange);
    cluster.agree("--slack", args.slack);
    cluster.agree("--keys", &args.keys);
    cluster.agree("--input", &args.input);
    cluster.agree("--records", args.records);
    cluster.agree("--batch", args.batch);
    cluster.agree("--seed", args.seed);
    let config = WordcountConfig {
        grouping: args.grouping,
        slack: args.slack,
        source,
        batch: args.batch,
        work,
        top: args.top,
        max_in_flight: args.max_in_flight,
        progress: !args.quiet,
        log: LogFile::for_flag(args.log.as_deref(), &cluster)?,
        doctor: args.doctor.clone(),
        timely_exchange: args.timely_exchange,
    };
    if let Some(report) = run_wordcount(config, &cluster)? {
        print_summary(&report);
        if let Some(path) = &args.report {
            write_report(path, &report)?;
        }
    }
    Ok(())
}

fn print_summary(report: &WordcountReport) {
    println!(
        "{} grouping, {} workers in {} processes: {} records, {} distinct keys",
        report.grouping, report.workers, report.processes, report.records, report.distinct_keys
    );
    println!(
        "  {:.0} records/s in {:.2} s; epoch latency p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        report.records_per_s, report.elapsed_s, report.latency_ms.p50, report.latency_ms.p99, report.latency_ms.max
    );
    println!(
        "  per-worker records {:?}: max/mean {:.3}, imbalance {:.0} ({:.2e} of records)",
        report.per_worker_records, report.max_over_mean, report.imbalance, report.imbalance_fraction
    );
    println!(
        "  keys on at most {} workers; {} partial states; counts digest {}",
        report.max_key_replication, report.partial_states, report.counts_digest
    );
    let top: Vec<String> = report.top.iter().map(|(key, count)| format!("{key}:{count}")).collect();
    println!("  top: {}", top.join(" "));
    if report.empty_lines + report.skipped_lines > 0 {
        println!(
            "  skipped {} empty and {} malformed lines",
            report.empty_lines, report.skipped_lines
        );
    }
}

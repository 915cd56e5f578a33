//! A tour of equipoise on built-in defaults, each part a side-by-side
//! comparison measured on this machine.
//!
//! `cargo run --release --example tour`
//!
//! Part 1, Partial Key Grouping: a skewed word count (Zipf keys, real work per
//! record) under key grouping, shuffle grouping and PKG.

use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use equipoise::common::cluster::ClusterArgs;
use equipoise::common::keys::{KeySampler, KeySpec};
use equipoise::pkg::wordcount::{comparison_table, run_wordcount, KeySource, WordcountConfig};
use equipoise::pkg::Scheme;

/// The equipoise tour.
#[derive(Parser, Debug)]
#[command(version)]
struct Args {
    /// Worker threads.
    #[arg(short = 'w', long = "workers", default_value_t = 4)]
    workers: usize,
    /// Keys of the word count.
    #[arg(long, default_value = "zipf:1.2:100000")]
    keys: KeySpec,
    /// Records of the word count.
    #[arg(long, default_value_t = 1_000_000)]
    records: u64,
    /// Busy work per record in the counting stage, in microseconds.
    #[arg(long, default_value_t = 2.0)]
    work_us: f64,
}

fn main() {
    let args = Args::parse();
    let sampler = Arc::new(KeySampler::new(&args.keys, 1));
    println!("equipoise tour, {} workers\n", args.workers);
    println!(
        "Part 1. Partial Key Grouping: word count of {} records, keys {} (hottest key {:.1} % of the stream), {} µs of work per record\n",
        args.records,
        args.keys,
        100.0 * sampler.probability(0),
        args.work_us
    );
    let mut reports = Vec::new();
    for grouping in [Scheme::Key, Scheme::Shuffle, Scheme::Pkg] {
        let config = WordcountConfig {
            grouping,
            source: KeySource::Synthetic {
                sampler: Arc::clone(&sampler),
                records: args.records,
            },
            batch: 10_000,
            work: Duration::from_secs_f64(args.work_us / 1e6),
            top: 5,
            max_in_flight: 2,
            progress: false,
        };
        match run_wordcount(config, &ClusterArgs::threads(args.workers)) {
            Ok(Some(report)) => reports.push(report),
            Ok(None) => unreachable!("worker 0 runs in this process"),
            Err(error) => {
                eprintln!("tour: {error}");
                std::process::exit(1);
            }
        }
    }
    print!("{}", comparison_table(&reports));
    let [key, shuffle, pkg] = [&reports[0], &reports[1], &reports[2]];
    println!();
    println!(
        "- load: the busiest worker has {:.2}x the mean under key grouping, {:.2}x under PKG",
        key.max_over_mean, pkg.max_over_mean
    );
    println!(
        "- memory: PKG keeps {} per-key partial states, key grouping {}, shuffle {}",
        pkg.partial_states, key.partial_states, shuffle.partial_states
    );
    let same = reports
        .iter()
        .all(|r| r.counts_digest == key.counts_digest && r.top == key.top);
    println!(
        "- results: counts digest {} and top-5 {} under all three groupings",
        key.counts_digest,
        if same { "identical" } else { "DIFFER (a bug)" }
    );
}

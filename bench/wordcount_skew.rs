//! Skewed word count: key grouping vs shuffle vs PoTC vs PKG (vs D-Choices
//! and W-Choices), side by side.
//!
//! `cargo bench --bench wordcount_skew -- [--keys zipf:1.2:100000] [--records N] [--work-us X] [--rounds R]
//!  [--workers 2,4] [--groupings key,shuffle,potc,pkg,dchoices,wchoices] [--slacks 0,1024]`
//!
//! Every round runs each (workers, grouping) pair once, in rotating order, so
//! machine noise hits all alike. The table shows, per pair, the run with the
//! median records/s; the counts digest is checked to be equal across all runs.

use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use equipoise::pkg::Scheme;
use equipoise_lab::common::cluster::ClusterArgs;
use equipoise_lab::common::keys::{KeySampler, KeySpec};
use equipoise_lab::common::median::median_by;
use equipoise_lab::pkg::wordcount::{comparison_table, run_wordcount, KeySource, WordcountConfig, WordcountReport};

#[derive(Parser, Debug)]
struct Args {
    #[arg(long, default_value = "zipf:1.2:100000")]
    keys: KeySpec,
    #[arg(long, default_value_t = 1_000_000)]
    records: u64,
    #[arg(long, default_value_t = 10_000)]
    batch: u64,
    #[arg(long, default_value_t = 5.0)]
    work_us: f64,
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    #[arg(long, value_delimiter = ',', default_value = "2,4")]
    workers: Vec<usize>,
    /// Groupings to compare.
    #[arg(long, value_delimiter = ',', value_enum, default_values_t = [Scheme::Key, Scheme::Shuffle, Scheme::Potc, Scheme::Pkg])]
    groupings: Vec<Scheme>,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// PKG's slacks: each value is a row of its own for PKG, D- and
    /// W-Choices (0: the paper's PKG).
    #[arg(long, value_delimiter = ',', default_value = "0")]
    slacks: Vec<u64>,
    /// cargo bench passes --bench; accepted and ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

fn main() {
    let args = Args::parse();
    let sampler = Arc::new(KeySampler::new(&args.keys, args.seed));
    let groupings = args.groupings.clone();
    let mut configs: Vec<(usize, Scheme, u64)> = Vec::new();
    for &workers in &args.workers {
        for &grouping in &groupings {
            let slacks = if grouping == Scheme::Pkg {
                &args.slacks[..]
            } else {
                &[0]
            };
            configs.extend(slacks.iter().map(|&slack| (workers, grouping, slack)));
        }
    }
    let mut runs: Vec<Vec<WordcountReport>> = vec![Vec::new(); configs.len()];
    for round in 0..args.rounds {
        for offset in 0..configs.len() {
            let index = (offset + round) % configs.len();
            let (workers, grouping, slack) = configs[index];
            let source = KeySource::Synthetic {
                sampler: Arc::clone(&sampler),
                records: args.records,
            };
            let config = WordcountConfig {
                slack,
                batch: args.batch,
                work: Duration::from_secs_f64(args.work_us / 1e6),
                ..WordcountConfig::new(grouping, source)
            };
            let report = run_wordcount(config, &ClusterArgs::threads(workers)).unwrap().unwrap();
            runs[index].push(report);
        }
    }
    let digest = runs[0][0].counts_digest;
    assert!(
        runs.iter().flatten().all(|report| report.counts_digest == digest),
        "every run must count the same"
    );
    let medians: Vec<WordcountReport> = runs
        .into_iter()
        .map(|reports| median_by(reports, |r| r.records_per_s))
        .collect();
    println!(
        "skewed word count: --keys {} --records {} --batch {} --work-us {}, {} rounds (median run shown), p1 = {:.3}",
        args.keys,
        args.records,
        args.batch,
        args.work_us,
        args.rounds,
        sampler.probability(0)
    );
    print!("{}", comparison_table(&medians));
}

//! Counting a skewed differential collection, as a user's program would:
//! differential's own `count()`, `skew_count()`, and each worker consolidating
//! its own updates before `count()` (`consolidate_stream().count()`), side by
//! side.
//!
//! `cargo bench --bench differential_count -- [--keys zipf:1.2:100000,zipf:2.0:100000]
//!  [--epochs 20] [--inserts 200000] [--workers 2,4] [--rounds 3]`
//!
//! Each epoch inserts `--inserts` keys (over all workers) into a
//! `new_collection::<u64, isize>`; the time is the wall time from the first
//! insert until the counts of the last epoch are complete. Every round runs
//! each configuration once, in rotating order; the table gives the median
//! and range in seconds. Every run's digest of the counts (summed over all
//! output updates) must equal every other's on the same keys.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use clap::Parser;
use differential_dataflow::input::Input;
use differential_dataflow::VecCollection;
use equipoise::common::hash::{key_hash, splitmix64};
use equipoise::skew::SkewReduce;
use equipoise_lab::common::keys::{KeySampler, KeySpec};
use equipoise_lab::common::median::spread;
use timely::dataflow::operators::Probe;

#[derive(Parser, Debug)]
struct Args {
    /// Key distributions (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "zipf:1.2:100000,zipf:2.0:100000")]
    keys: Vec<KeySpec>,
    /// Epochs.
    #[arg(long, default_value_t = 20)]
    epochs: u64,
    /// Inserts per epoch, over all workers.
    #[arg(long, default_value_t = 200_000)]
    inserts: u64,
    /// Worker counts (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "2,4")]
    workers: Vec<usize>,
    /// Rounds (runs of each configuration).
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// cargo bench passes --bench; accepted and ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

#[derive(Clone, Copy, Debug)]
enum Counter {
    Count,
    SkewCount,
    ConsolidateCount,
}

impl Counter {
    const ALL: [Counter; 3] = [Counter::Count, Counter::SkewCount, Counter::ConsolidateCount];

    fn name(self) -> &'static str {
        match self {
            Counter::Count => "count()",
            Counter::SkewCount => "skew_count()",
            Counter::ConsolidateCount => "consolidate_stream().count()",
        }
    }

    fn apply<'s>(self, keys: VecCollection<'s, u64, u64, isize>) -> VecCollection<'s, u64, (u64, isize), isize> {
        match self {
            Counter::Count => keys.count(),
            Counter::SkewCount => keys.skew_count(),
            Counter::ConsolidateCount => keys.consolidate_stream().count(),
        }
    }
}

/// Seconds to count `args.epochs` epochs of keys drawn from `sampler`, and
/// the digest of the output.
fn run(counter: Counter, sampler: &Arc<KeySampler>, workers: usize, args: &Args) -> (f64, u64) {
    let (epochs, inserts) = (args.epochs, args.inserts);
    let digest = Arc::new(AtomicU64::new(0));
    let sampler = Arc::clone(sampler);
    let shared = Arc::clone(&digest);
    let seconds = timely::execute(timely::Config::process(workers), move |worker| {
        let (index, peers) = (worker.index() as u64, worker.peers() as u64);
        let shared = Arc::clone(&shared);
        let (mut input, probe) = worker.dataflow::<u64, _, _>(|scope| {
            let (input, keys) = scope.new_collection::<u64, isize>();
            let counts = counter.apply(keys);
            let probe = counts
                .inspect(move |((key, count), time, diff)| {
                    let update = splitmix64(key_hash(&(key, count, time))).wrapping_mul(*diff as u64);
                    shared.fetch_add(update, Ordering::Relaxed);
                })
                .inner
                .probe()
                .0;
            (input, probe)
        });
        let start = Instant::now();
        for epoch in 0..epochs {
            let mut record = epoch * inserts + index;
            while record < (epoch + 1) * inserts {
                input.insert(sampler.rank(record) as u64);
                record += peers;
            }
            input.advance_to(epoch + 1);
            input.flush();
            while probe.less_than(input.time()) {
                worker.step_or_park(None);
            }
        }
        start.elapsed().as_secs_f64()
    })
    .expect("timely runs")
    .join()
    .into_iter()
    .map(|seconds| seconds.expect("a worker finishes"))
    .fold(0.0, f64::max);
    (seconds, digest.load(Ordering::Relaxed))
}

fn main() {
    let args = Args::parse();
    println!(
        "differential count: {} epochs x {} inserts, {} rounds; seconds median [min, max]",
        args.epochs, args.inserts, args.rounds
    );
    println!("| keys | hottest key | workers | count() | skew_count() | consolidate_stream().count() | skew_count / count | consolidate / count |");
    println!("|---|---|---|---|---|---|---|---|");
    for spec in &args.keys {
        let sampler = Arc::new(KeySampler::new(spec, 1));
        for &workers in &args.workers {
            let mut seconds = vec![Vec::new(); Counter::ALL.len()];
            let mut digests = Vec::new();
            for round in 0..args.rounds {
                for offset in 0..Counter::ALL.len() {
                    let which = (offset + round) % Counter::ALL.len();
                    let (time, digest) = run(Counter::ALL[which], &sampler, workers, &args);
                    seconds[which].push(time);
                    digests.push((Counter::ALL[which].name(), digest));
                }
            }
            assert!(
                digests.iter().all(|(_, digest)| *digest == digests[0].1),
                "{spec} at {workers} workers: the counters disagree: {digests:?}"
            );
            let spreads: Vec<(f64, f64, f64)> = seconds.into_iter().map(spread).collect();
            let cell = |(min, med, max): (f64, f64, f64)| format!("{med:.3} [{min:.3}, {max:.3}]");
            println!(
                "| {spec} | {:.3} | {workers} | {} | {} | {} | {:.2} | {:.2} |",
                sampler.probability(0),
                cell(spreads[0]),
                cell(spreads[1]),
                cell(spreads[2]),
                spreads[1].1 / spreads[0].1,
                spreads[2].1 / spreads[0].1
            );
        }
    }
}

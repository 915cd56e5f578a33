//! Counting a skewed differential collection over a sliding window: each
//! epoch inserts a batch of keys and retracts the batch inserted `--window`
//! epochs before. Without `--grouping` it counts with differential's own
//! `count()`; with one, with `pkg_count_with(grouping, key_hash)`, which
//! first spreads each key's updates over the workers the grouping picks.
//! `--reduce distinct` keeps each key in the window once instead
//! (`distinct()`); `--reduce min` (`max`) keeps each key's least
//! (greatest) record number (differential's `reduce`), `--reduce top3`
//! its three greatest. With `--skew`, `skew_count()` (`skew_distinct()`,
//! `skew_min()`, `skew_max()`, `skew_reduce_associative(top3)`) instead: the first two sum each worker's updates of its hot keys before
//! the exchange, the others reduce hot keys in two levels. With `--join`, each inserted key is a fact (key, its record
//! number), joined with a table of one row per key by differential's
//! `join`, or with `--skew` by `skew_join`, which splits the hot keys'
//! facts over several workers.
//!
//! ```text
//! cargo run --release --example differential -- --grouping pkg --keys zipf:1.2:100000 \
//!     --epochs 20 --inserts 200000 --window 3 -w 2 --report pkg.json
//! cargo run --release --example differential -- --skew --reduce distinct -w 2
//! cargo run --release --example differential -- --join --skew -w 2
//! ```
//!
//! `--doctor PATH` writes equipoise's skew report of this dataflow
//! (`equipoise::doctor`): each operator's records, time and arranged
//! records per worker, the costliest skew first.
//!
//! Several processes: give each the same flags plus `-n`, `-p` and
//! `--hostfile`. The output digest is the same for every grouping (or for
//! `join` and `skew_join`), worker count and process count.

use std::cell::Cell;
use std::path::PathBuf;
use std::process::ExitCode;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use clap::Parser;
use differential_dataflow::input::{Input, InputSession};
use equipoise::doctor::SampleCollectionKeys;
use equipoise::pkg::events::PkgEvent;
use equipoise::pkg::{key_hash, PkgCountCollection, Scheme, LOG_NAME};
use equipoise::skew::{self, SkewAssociative, SkewEvent, SkewJoin, SkewMinMax, SkewReduce};
use equipoise_lab::common::cluster::ClusterArgs;
use equipoise_lab::common::digest::watch;
use equipoise_lab::common::doctor_args::DoctorArgs;
use equipoise_lab::common::driver::{run_diagnosed, OpenEpochs};
use equipoise_lab::common::keys::{KeySampler, KeySpec};
use equipoise_lab::common::latency::LatencySummary;
use equipoise_lab::common::log_file::LogFile;
use equipoise_lab::common::program::write_report;
use equipoise_lab::common::Error;
use serde::{Deserialize, Serialize};
use timely::dataflow::ProbeHandle;

/// Counts (or distinct keys) of a skewed collection over a sliding
/// window, or its join with a table.
#[derive(Parser, Debug)]
#[command(version)]
struct Args {
    #[command(flatten)]
    cluster: ClusterArgs,
    /// Spread each key's updates by this grouping before counting
    /// (`pkg_count_with`); without it, differential's `count()`.
    #[arg(long, value_enum)]
    grouping: Option<Scheme>,
    /// With `--grouping pkg`, `dchoices` or `wchoices`: PKG's slack
    /// (`Scheme::with_slack`: `Pkg::with_slack`, for D-/W-Choices their tail's), the load a key's
    /// first worker may carry beyond its second before updates go to the
    /// second (0: the less loaded, every time).
    #[arg(long, default_value_t = 0)]
    slack: u64,
    /// Join the facts with a table of one row per key instead of counting
    /// them (differential's `join`).
    #[arg(long)]
    join: bool,
    /// Split the hot keys: `skew_count()` or `skew_distinct()` (each worker
    /// sums its hot keys' updates before the exchange), or with `--join`,
    /// `skew_join` (hot keys' facts split over workers).
    #[arg(long)]
    skew: bool,
    /// What to reduce the keys in the window to: `count` (each key with its
    /// multiplicity), `distinct` (each key once), `min` or `max` (each key
    /// with its least or greatest record number), `top3` (each key with its
    /// three greatest record numbers).
    #[arg(long, value_enum, default_value_t = Reduce::Count)]
    reduce: Reduce,
    /// Synthetic keys: zipf:<exponent>:<distinct>, mandelbrot:<s>:<q>:<distinct>
    /// or lognormal:<mu>:<sigma>:<distinct>.
    #[arg(long, default_value = "zipf:1.2:100000")]
    keys: KeySpec,
    /// Epochs.
    #[arg(long, default_value_t = 20)]
    epochs: u64,
    /// Keys inserted per epoch, over all workers.
    #[arg(long, default_value_t = 200_000)]
    inserts: u64,
    /// Each epoch also retracts the keys inserted this many epochs before
    /// (0: nothing is retracted).
    #[arg(long, default_value_t = 3)]
    window: u64,
    /// Seed of the synthetic keys.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// From this epoch on, the keys move: each key k is replaced by
    /// (k + distinct/2) mod distinct, so the hot keys are other keys, on
    /// other workers (a record keeps the key it was inserted with when it
    /// is retracted).
    #[arg(long, value_name = "EPOCH")]
    move_at: Option<u64>,
    /// Epochs a worker may have open before waiting for the oldest.
    #[arg(long, default_value_t = 1)]
    max_in_flight: u64,
    /// Write the JSON report to PATH (from the process hosting worker 0).
    #[arg(long, value_name = "PATH")]
    report: Option<PathBuf>,
    /// No summary on stdout.
    #[arg(long)]
    quiet: bool,
    /// With `--grouping`, the pact's decisions (timely log events: per
    /// second, the updates sent to each worker and the imbalance;
    /// D-/W-Choices' head changes); with `--skew`, the skew-proof
    /// operator's (`skew_join`: the hot keys and their shares; the count and
    /// distinct: the keys each worker combines; both: the updates each
    /// worker sent to each). One JSON object a line (with several processes, process p
    /// writes FILE.p).
    #[arg(long, value_name = "FILE")]
    log: Option<PathBuf>,
    #[command(flatten)]
    doctor: DoctorArgs,
}

/// What the keys in the window are reduced to.
#[derive(Clone, Copy, Debug, PartialEq, clap::ValueEnum, Serialize)]
enum Reduce {
    Count,
    Distinct,
    Min,
    Max,
    Top3,
}

/// A key's three greatest record numbers: associative, so
/// `skew_reduce_associative` may reduce a hot key's parts by it and then
/// the parts' results.
fn top3(_: &u64, input: &[(&u64, isize)], output: &mut Vec<(u64, isize)>) {
    let mut left = 3;
    for &(record, count) in input.iter().rev() {
        if left == 0 {
            break;
        }
        output.push((*record, count.min(left)));
        left -= count.min(left);
    }
}

/// A fact: its key and its record number; a table row: its key and value.
type Fact = (u64, u64);

/// A worker's input of records `D`.
type Session<D> = InputSession<u64, D, isize>;

/// Where a worker's updates go in: keys to count, or facts (key, record
/// number) and the table to join them with.
enum Feed {
    Keys(Box<Session<u64>>),
    /// Facts alone.
    Records(Box<Session<Fact>>),
    /// The facts and the table.
    Facts(Box<[Session<Fact>; 2]>),
}

impl Feed {
    /// Record `record`, of key `key`, inserted (1) or retracted (-1).
    fn update(&mut self, key: u64, record: u64, diff: isize) {
        match self {
            Feed::Keys(keys) => keys.update(key, diff),
            Feed::Records(records) => records.update((key, record), diff),
            Feed::Facts(inputs) => inputs[0].update((key, record), diff),
        }
    }

    /// Closes the epochs before `epoch` and sends what was given.
    fn advance_to(&mut self, epoch: u64) {
        match self {
            Feed::Keys(keys) => {
                keys.advance_to(epoch);
                keys.flush();
            }
            Feed::Records(records) => {
                records.advance_to(epoch);
                records.flush();
            }
            Feed::Facts(inputs) => {
                for input in inputs.iter_mut() {
                    input.advance_to(epoch);
                    input.flush();
                }
            }
        }
    }
}

/// What one worker saw.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct WorkerFigures {
    digest: u64,
    elapsed_s: f64,
    /// Each epoch's latency, from its first update to the probe passing it.
    latencies_us: Vec<u64>,
}

/// The report: `--report`'s JSON.
#[derive(Debug, Serialize)]
struct Report {
    counter: String,
    keys: String,
    workers: usize,
    processes: usize,
    epochs: u64,
    inserts: u64,
    window: u64,
    /// Inserts and retractions, over all workers.
    updates: u64,
    elapsed_s: f64,
    updates_per_s: f64,
    /// Wrapping sum, over every output update (record, time, diff), of
    /// diff × splitmix64(key_hash((record, time))), a record being (key,
    /// count) or, joined, (key, (record number, row)): the same for every
    /// counter (every join), and different if any output came at another
    /// time.
    counts_digest: u64,
    /// Epoch latency (from an epoch's first update to its last count),
    /// over the epochs of every worker.
    latency_ms: LatencySummary,
}

fn main() -> ExitCode {
    equipoise_lab::common::program::exit_quietly_on_closed_stdout();
    equipoise_lab::common::program::exit_code("differential", run(Args::parse()))
}

fn run(args: Args) -> Result<(), Error> {
    if args.inserts == 0 {
        return Err(Error::invalid("--inserts", "must be at least 1"));
    }
    if args.join && args.grouping.is_some() {
        return Err(Error::invalid("--grouping", "counts; it does not apply to --join"));
    }
    if args.skew && args.grouping.is_some() {
        return Err(Error::invalid(
            "--skew",
            "routes by itself; it does not combine with --grouping",
        ));
    }
    if args.reduce != Reduce::Count && (args.join || args.grouping.is_some()) {
        return Err(Error::invalid(
            "--reduce",
            "reduces the keys by itself; it does not combine with --join or --grouping",
        ));
    }
    if args.slack > 0 && !args.grouping.is_some_and(Scheme::takes_slack) {
        return Err(Error::invalid(
            "--slack",
            "applies to --grouping pkg, dchoices or wchoices only",
        ));
    }
    let mut cluster = args.cluster.clone();
    cluster.agree("--grouping", args.grouping);
    cluster.agree("--slack", args.slack);
    cluster.agree("--join", args.join);
    cluster.agree("--skew", args.skew);
    cluster.agree("--reduce", format!("{:?}", args.reduce));
    cluster.agree("--keys", &args.keys);
    cluster.agree("--epochs", args.epochs);
    cluster.agree("--inserts", args.inserts);
    cluster.agree("--window", args.window);
    cluster.agree("--seed", args.seed);
    cluster.agree("--move-at", args.move_at);
    let log = LogFile::for_flag(args.log.as_deref(), &cluster)?;
    let sampler = Arc::new(KeySampler::new(&args.keys, args.seed));
    let (grouping, slack, epochs, inserts, window, reduce, skew) = (
        args.grouping,
        args.slack,
        args.epochs,
        args.inserts,
        args.window,
        args.reduce,
        args.skew,
    );
    let joiner = args.join.then_some(args.skew);
    let max_in_flight = args.max_in_flight.max(1);
    let move_at = args.move_at;

    let job = move |worker: &mut timely::worker::Worker| {
        let (index, peers) = (worker.index() as u64, worker.peers() as u64);
        // Before the dataflow is built: the pact looks its logger up then.
        if let Some(log) = &log {
            match joiner {
                None if !skew => log.register::<PkgEvent>(worker, LOG_NAME),
                _ => log.register::<SkewEvent>(worker, skew::LOG_NAME),
            }
        }
        let digest = Rc::new(Cell::new(0u64));
        let probe = ProbeHandle::new();
        let mut input = worker.dataflow::<u64, _, _>(|scope| match joiner {
            None if matches!(reduce, Reduce::Min | Reduce::Max | Reduce::Top3) => {
                let (input, records) = scope.new_collection::<Fact, isize>();
                // Each sampled collection's keys are named in the skew report
                // (free when nobody listens: no `--doctor`).
                let records = records.sample_keys("records", |(key, _): &Fact| *key);
                let extremes = match (reduce, skew) {
                    (Reduce::Min, false) => records.reduce(|_, values, out| out.push((*values[0].0, 1))),
                    (Reduce::Max, false) => records.reduce(|_, values, out| out.push((*values[values.len() - 1].0, 1))),
                    (Reduce::Min, true) => records.skew_min(),
                    (Reduce::Max, true) => records.skew_max(),
                    (_, false) => records.reduce(top3),
                    (_, true) => records.skew_reduce_associative(top3),
                };
                watch(extremes, &digest, &probe);
                Feed::Records(Box::new(input))
            }
            None => {
                let (input, keys) = scope.new_collection::<u64, isize>();
                let keys = keys.sample_keys("keys", |key: &u64| *key);
                let distinct = reduce == Reduce::Distinct;
                match (grouping, distinct, skew) {
                    (Some(grouping), _, _) => watch(
                        keys.pkg_count_with(grouping.with_slack(slack), |key: &u64| key_hash(key)),
                        &digest,
                        &probe,
                    ),
                    (None, false, false) => watch(keys.count(), &digest, &probe),
                    (None, false, true) => watch(keys.skew_count(), &digest, &probe),
                    (None, true, false) => watch(keys.distinct(), &digest, &probe),
                    (None, true, true) => watch(keys.skew_distinct(), &digest, &probe),
                }
                Feed::Keys(Box::new(input))
            }
            Some(skew) => {
                let (facts, fact) = scope.new_collection::<(u64, u64), isize>();
                let fact = fact.sample_keys("facts", |(key, _): &Fact| *key);
                let (mut table, rows) = scope.new_collection::<(u64, u64), isize>();
                watch(
                    if skew { fact.skew_join(rows) } else { fact.join(rows) },
                    &digest,
                    &probe,
                );
                for key in (index..sampler.distinct() as u64).step_by(peers as usize) {
                    table.insert((key, key));
                }
                Feed::Facts(Box::new([facts, table]))
            }
        });
        // This worker's share of epoch `epoch`'s inserts.
        let share = |epoch: u64| (epoch * inserts + index..(epoch + 1) * inserts).step_by(peers as usize);
        // The key of a record inserted in `epoch`.
        let key = |record: u64, epoch: u64| {
            let rank = sampler.rank(record) as u64;
            let distinct = sampler.distinct() as u64;
            if move_at.is_some_and(|at| epoch >= at) {
                (rank + distinct / 2) % distinct
            } else {
                rank
            }
        };
        let start = Instant::now();
        let mut open = OpenEpochs::with_capacity(epochs);
        for epoch in 0..epochs {
            open.begin(epoch);
            for record in share(epoch) {
                input.update(key(record, epoch), record, 1);
            }
            if window > 0 && epoch >= window {
                for record in share(epoch - window) {
                    input.update(key(record, epoch - window), record, -1);
                }
            }
            input.advance_to(epoch + 1);
            // Parked while waiting, as timely's own loop does: a spinning
            // worker would take a core from the others.
            while open.len() as u64 >= max_in_flight {
                worker.step_or_park(None);
                open.retire(&probe);
            }
        }
        while !open.is_empty() {
            worker.step_or_park(None);
            open.retire(&probe);
        }
        WorkerFigures {
            digest: digest.get(),
            elapsed_s: start.elapsed().as_secs_f64(),
            latencies_us: open.latencies_us,
        }
    };

    let counter = match (joiner, grouping) {
        (Some(false), _) => "join()".to_string(),
        (Some(true), _) => "skew_join()".to_string(),
        (None, None) => match (reduce, skew) {
            (Reduce::Count, false) => "count()",
            (Reduce::Count, true) => "skew_count()",
            (Reduce::Distinct, false) => "distinct()",
            (Reduce::Distinct, true) => "skew_distinct()",
            (Reduce::Min, false) => "reduce(min)",
            (Reduce::Min, true) => "skew_min()",
            (Reduce::Max, false) => "reduce(max)",
            (Reduce::Max, true) => "skew_max()",
            (Reduce::Top3, false) => "reduce(top3)",
            (Reduce::Top3, true) => "skew_reduce_associative(top3)",
        }
        .to_string(),
        (None, Some(grouping)) if slack > 0 => format!("pkg_count_with({grouping}, slack {slack})"),
        (None, Some(grouping)) => format!("pkg_count_with({grouping})"),
    };
    let retracted = epochs.saturating_sub(window.max(1)) * u64::from(window > 0);
    let (keys, processes, workers) = (args.keys.to_string(), cluster.processes, cluster.total_workers());
    let assemble = move |figures: Vec<WorkerFigures>| {
        let elapsed_s = figures.iter().map(|f| f.elapsed_s).fold(0.0, f64::max);
        let latencies: Vec<u64> = figures.iter().flat_map(|f| f.latencies_us.iter().copied()).collect();
        let updates = (epochs + retracted) * inserts;
        Report {
            counter: counter.clone(),
            keys: keys.clone(),
            workers,
            processes,
            epochs,
            inserts,
            window,
            updates,
            elapsed_s,
            updates_per_s: updates as f64 / elapsed_s.max(f64::MIN_POSITIVE),
            counts_digest: figures.iter().fold(0u64, |sum, f| sum.wrapping_add(f.digest)),
            latency_ms: LatencySummary::from_micros(&latencies),
        }
    };
    let diagnose = args.doctor.settings()?;
    if let Some((report, diagnosed)) = run_diagnosed(&cluster, diagnose, job, assemble)? {
        if !args.quiet {
            println!(
                "{} on {} workers in {} process{}: {} updates in {:.2} s ({:.0} updates/s), epoch latency p50 {:.1} ms, p99 {:.1} ms; counts digest {}",
                report.counter,
                report.workers,
                report.processes,
                if report.processes == 1 { "" } else { "es" },
                report.updates,
                report.elapsed_s,
                report.updates_per_s,
                report.latency_ms.p50,
                report.latency_ms.p99,
                report.counts_digest
            );
        }
        if let Some(path) = &args.report {
            write_report(path, &report)?;
        }
        args.doctor.write(diagnosed.as_ref())?;
    }
    Ok(())
}

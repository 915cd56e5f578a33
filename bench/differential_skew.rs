//! Differential's own operators against the skew-proof ones on a stream of
//! keyed facts (each retracted `--window` epochs after its insertion), side
//! by side: `join` and `skew_join` (the facts joined with a table of one
//! row per key; with `join-apart`, with a second stream of facts as large
//! whose hot keys are the first's coldest; with `join-alike`, with a
//! second stream of a thousandth of the facts, keys drawn alike: both
//! sides skewed on the same keys; with `join-renamed`, with the table,
//! whose rows of the 16 hottest keys are renamed at a third and at two
//! thirds of the epochs: every fact of those keys alive then is joined
//! anew), `count` and `skew_count`, `distinct` and `skew_distinct`
//! (of the facts' keys), a `reduce` to each key's least record and
//! `skew_min`. Seconds, per-epoch latency, and each worker's
//! share of the operator's input (the records each worker's join or
//! reduction arranges).
//!
//! `cargo bench --bench differential_skew -- [--ops join,count,distinct,min,join-apart,join-alike,join-renamed]
//!  [--keys zipf:1.0:100000,zipf:1.2:100000,zipf:1.5:100000]
//!  [--epochs 20] [--inserts 100000] [--window 3] [--workers 1,2,4] [--work-workers 16] [--rounds 3]`
//!
//! Every round runs each configuration once, in rotating order, with no
//! logger registered; one more run of the skew-proof operator listens to
//! its log for the work counts. The table gives the median seconds and
//! their range, the ratio of updates/s (of the medians, and the median of
//! each round's pair), the median over rounds of each run's per-epoch p50
//! and p99 latency (from an epoch's first update until its output is
//! complete, over every worker's epochs), and the operator input's busiest
//! worker over the mean worker (the speed-up the balance allows is the
//! workers over that), the gain the work allows (differential's busiest
//! worker's input over the skew-proof operator's: the reductions also
//! shrink the total, as hot keys are combined), and for the join the table rows copied to the
//! hot keys' other workers (one row per key: at most d − 1 for a key dealt
//! to d workers; with two streams, the updates of either copied), for the reductions the keys some worker combined (count
//! and distinct) or found hot (min). For `skew_min` the work counted is
//! the first level's input (the records each worker routed to each); a hot
//! key's records from before it turned hot, moved to their parts, and the
//! parts' results reduced on the key's owner are not counted.
//! The workers' CPU seconds (summed over the timed part, median over
//! rounds) tell the cost apart from the time: a balanced run can finish
//! sooner on more CPU. The last column sets the skew-proof operator's
//! busiest worker's input against differential's mean worker's: against
//! a perfect spread of differential's work (a combining reduction's own
//! mean shrinks with its total, and is no yardstick).
//! `--work-workers` adds runs at more worker threads for the work counts
//! alone (they do not depend on the cores). Every run's digest of the
//! output must equal every other's of the same operator on the same keys.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeSet, HashMap};
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use clap::Parser;
use differential_dataflow::input::Input;
use differential_dataflow::{Hashable, VecCollection};
use equipoise::skew::{SkewEvent, SkewEventBuilder, SkewJoin, SkewMinMax, SkewReduce, LOG_NAME};
use equipoise_lab::common::cpu::thread_cpu_seconds;
use equipoise_lab::common::digest::update_digest;
use equipoise_lab::common::keys::{KeySampler, KeySpec};
use equipoise_lab::common::latency::LatencySummary;
use equipoise_lab::common::median::spread;
use timely::dataflow::operators::Probe;
use timely::dataflow::ProbeHandle;

#[derive(Parser, Debug)]
struct Args {
    /// Operators, each against its skew-proof counterpart (comma-separated:
    /// join, count, distinct, min, join-apart, join-alike, join-renamed).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "join,count,distinct,min")]
    ops: Vec<Op>,
    /// Key distributions (comma-separated).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "zipf:1.0:100000,zipf:1.2:100000,zipf:1.5:100000"
    )]
    keys: Vec<KeySpec>,
    /// Epochs of inserts.
    #[arg(long, default_value_t = 20)]
    epochs: u64,
    /// Facts inserted per epoch, over all workers.
    #[arg(long, default_value_t = 100_000)]
    inserts: u64,
    /// Epochs a fact lives before it is retracted.
    #[arg(long, default_value_t = 3)]
    window: u64,
    /// Worker counts timed (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "1,2,4")]
    workers: Vec<usize>,
    /// Worker counts run once more for the work counts alone (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "16")]
    work_workers: Vec<usize>,
    /// Rounds (runs of each configuration).
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// cargo bench passes --bench; accepted and ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

/// An operator of differential's with a skew-proof counterpart.
#[derive(Clone, Copy, Debug, PartialEq, clap::ValueEnum)]
enum Op {
    Join,
    Count,
    Distinct,
    Min,
    JoinApart,
    JoinAlike,
    JoinRenamed,
}

/// With `join-renamed`, the table rows of this many hottest keys are
/// renamed (retracted and inserted with another value) at a third and at
/// two thirds of the epochs.
const RENAMED: u64 = 16;

impl Op {
    /// Differential's name and the skew-proof one's.
    fn names(self) -> [&'static str; 2] {
        match self {
            Op::Join => ["join", "skew_join"],
            Op::Count => ["count", "skew_count"],
            Op::Distinct => ["distinct", "skew_distinct"],
            Op::Min => ["reduce(min)", "skew_min"],
            Op::JoinApart => ["join (streams apart)", "skew_join (streams apart)"],
            Op::JoinAlike => ["join (streams alike)", "skew_join (streams alike)"],
            Op::JoinRenamed => ["join (hot rows renamed)", "skew_join (hot rows renamed)"],
        }
    }

    /// Whether the facts are joined with a table of one row per key.
    fn table(self) -> bool {
        matches!(self, Op::Join | Op::JoinRenamed)
    }

    /// The second stream's facts per epoch (none: a table, or no second
    /// input) and the key of its record `record`.
    fn second(self, inserts: u64, keys: &KeySampler) -> (u64, impl Fn(u64) -> u64 + '_) {
        let per_epoch = match self {
            Op::JoinApart => inserts,
            Op::JoinAlike => inserts / 1000,
            _ => 0,
        };
        let apart = self == Op::JoinApart;
        (per_epoch, move |record: u64| {
            // Another draw than the first stream's record of the same number.
            let rank = keys.rank(record ^ (1 << 62)) as u64;
            if apart {
                keys.distinct() as u64 - 1 - rank
            } else {
                rank
            }
        })
    }
}

/// A run's seconds, per-epoch latency, output digest, the operator's input
/// each worker arranged, the output updates each produced, the table rows copied to hot keys' other workers
/// and the hot keys (dealt by the join, combined by the reductions).
struct Run {
    seconds: f64,
    /// The workers' CPU seconds over the timed part, summed (`None` where
    /// the platform does not say).
    cpu: Option<f64>,
    latency: LatencySummary,
    digest: u64,
    work: Vec<u64>,
    output: Vec<u64>,
    copies: u64,
    hot_keys: usize,
}

/// The worker differential's exchange sends a key to.
fn worker_of(key: u64, peers: usize) -> usize {
    (Hashable::hashed(&key) % peers as u64) as usize
}

/// A worker's output so far: a digest of its updates, and how many there
/// were (kept per worker: an atomic shared by the workers would make them
/// contend on every update).
type Watched = Rc<Cell<(u64, u64)>>;

/// Folds every update of `output` into `watched` and probes it with `probe`.
fn watch<D: differential_dataflow::Data + std::hash::Hash>(
    output: VecCollection<'_, u64, D, isize>,
    watched: &Watched,
    probe: &ProbeHandle<u64>,
) {
    let watched = Rc::clone(watched);
    output
        .inspect(move |(record, time, diff)| {
            let (digest, produced) = watched.get();
            watched.set((digest.wrapping_add(update_digest(record, time, *diff)), produced + 1));
        })
        .inner
        .probe_with(probe);
}

/// One run of `op` (the skew-proof one if `skew`); `counting` listens to
/// the skew-proof operator's log for the work counts (the timed runs do
/// not, as a program that does not listen pays nothing for the log).
fn run(op: Op, skew: bool, sampler: &Arc<KeySampler>, workers: usize, args: &Args, counting: bool) -> Run {
    let (epochs, inserts, window) = (args.epochs, args.inserts, args.window);
    // Per worker, its output's digest and number of updates.
    let outputs = Arc::new(Mutex::new(vec![(0u64, 0u64); workers]));
    let outputs2 = Arc::clone(&outputs);
    // Per worker, the updates each worker received, as the skew-proof operators log them.
    let received = Arc::new(Mutex::new(vec![0u64; workers]));
    // Per worker, the updates it received and passed on unarranged.
    let unarranged = Arc::new(Mutex::new(vec![0u64; workers]));
    let unarranged2 = Arc::clone(&unarranged);
    // Per hot key (by its route hash), every worker it was dealt to (joins) or combined on (reductions).
    let hot = Arc::new(Mutex::new(HashMap::<u64, BTreeSet<usize>>::new()));
    let latencies = Arc::new(Mutex::new(Vec::new()));
    let (received2, hot2, latencies2) = (Arc::clone(&received), Arc::clone(&hot), Arc::clone(&latencies));
    let keys = Arc::clone(sampler);
    let runs = timely::execute(timely::Config::process(workers), move |worker| {
        let (index, peers) = (worker.index() as u64, worker.peers() as u64);
        let (received, hot) = (Arc::clone(&received2), Arc::clone(&hot2));
        let sent = Rc::new(RefCell::new(vec![0u64; peers as usize]));
        let logged = Rc::clone(&sent);
        // Per worker, the updates it received and passed on unarranged.
        let passed = Rc::new(RefCell::new(vec![0u64; peers as usize]));
        let passed2 = Rc::clone(&passed);
        if counting {
            worker
                .log_register()
                .expect("logging")
                .insert::<SkewEventBuilder, _>(LOG_NAME, move |_, events| {
                    for (_, event) in events.iter().flat_map(|events| events.iter()) {
                        match event {
                            SkewEvent::Routed { sent, .. } => {
                                for (total, count) in logged.borrow_mut().iter_mut().zip(sent) {
                                    *total += count;
                                }
                            }
                            SkewEvent::PassedOn { worker, updates } => {
                                // Received, not arranged: counted again where they went.
                                passed2.borrow_mut()[*worker] += updates;
                            }
                            SkewEvent::Hot { key, workers, .. } => {
                                hot.lock().unwrap().entry(*key).or_default().extend(workers)
                            }
                            SkewEvent::Combined { worker, keys } => {
                                let mut hot = hot.lock().unwrap();
                                keys.iter().for_each(|key| {
                                    hot.entry(*key).or_default().insert(*worker);
                                })
                            }
                        }
                    }
                });
        }
        let probe = ProbeHandle::new();
        let watched = Watched::default();
        let out = &watched;
        let (mut facts, mut table) = worker.dataflow::<u64, _, _>(|scope| {
            let (facts_input, facts) = scope.new_collection::<(u64, u64), isize>();
            let (table_input, table) = scope.new_collection::<(u64, u64), isize>();
            let keys = facts.clone().map(|(key, _)| key);
            match (op, skew) {
                (Op::Join | Op::JoinApart | Op::JoinAlike | Op::JoinRenamed, false) => {
                    watch(facts.join(table), out, &probe)
                }
                (Op::Join | Op::JoinApart | Op::JoinAlike | Op::JoinRenamed, true) => {
                    watch(facts.skew_join(table), out, &probe)
                }
                (Op::Count, false) => watch(keys.count(), out, &probe),
                (Op::Count, true) => watch(keys.skew_count(), out, &probe),
                (Op::Distinct, false) => watch(keys.distinct(), out, &probe),
                (Op::Distinct, true) => watch(keys.skew_distinct(), out, &probe),
                (Op::Min, false) => watch(facts.reduce(|_, values, out| out.push((*values[0].0, 1))), out, &probe),
                (Op::Min, true) => watch(facts.skew_min(), out, &probe),
            }
            (facts_input, table_input)
        });
        let start = Instant::now();
        let cpu_start = thread_cpu_seconds();
        let key = |record: u64| keys.rank(record) as u64;
        if op.table() {
            for row in (index..keys.distinct() as u64).step_by(peers as usize) {
                table.insert((row, row));
            }
        }
        let (second, second_key) = op.second(inserts, &keys);
        let mut epoch_us = Vec::new();
        for epoch in 0..epochs + window {
            let began = Instant::now();
            for (first, diff) in [(epoch, 1isize), (epoch.wrapping_sub(window), -1)] {
                if first >= epochs {
                    continue;
                }
                let mut record = first * inserts + index;
                while record < (first + 1) * inserts {
                    facts.update((key(record), record), diff);
                    record += peers;
                }
                let mut record = first * second + index;
                while record < (first + 1) * second {
                    table.update((second_key(record), record), diff);
                    record += peers;
                }
            }
            if op == Op::JoinRenamed && [epochs / 3, 2 * epochs / 3].contains(&epoch) {
                // Row r's value was r + epoch at the last rename (or r).
                let last = if epoch == epochs / 3 { 0 } else { epochs / 3 };
                for row in (index..RENAMED).step_by(peers as usize) {
                    table.update((row, row + last), -1);
                    table.update((row, row + epoch), 1);
                }
            }
            facts.advance_to(epoch + 1);
            table.advance_to(epoch + 1);
            facts.flush();
            table.flush();
            while probe.less_than(facts.time()) {
                worker.step_or_park(None);
            }
            epoch_us.push(began.elapsed().as_micros() as u64);
        }
        let seconds = start.elapsed().as_secs_f64();
        let cpu = cpu_start.zip(thread_cpu_seconds()).map(|(start, end)| end - start);
        drop(worker.log_register().map(|mut register| register.remove(LOG_NAME)));
        let mut received = received.lock().unwrap();
        for (total, count) in received.iter_mut().zip(sent.borrow().iter()) {
            *total += count;
        }
        for (total, count) in unarranged2.lock().unwrap().iter_mut().zip(passed.borrow().iter()) {
            *total += count;
        }
        latencies2.lock().unwrap().extend(epoch_us);
        outputs2.lock().unwrap()[index as usize] = watched.get();
        (seconds, cpu)
    })
    .expect("timely runs")
    .join()
    .into_iter()
    .map(|run| run.expect("a worker finishes"));
    let (seconds, cpu) = runs.fold((0.0, Some(0.0)), |(wall, total), (seconds, cpu)| {
        (f64::max(wall, seconds), total.zip(cpu).map(|(total, cpu)| total + cpu))
    });
    // The operator's input per worker: the facts (or keys) it received, and
    // for the joins the other side's updates it arranged, with the copies
    // of a hot key's updates on its other workers (logged by the
    // skew-proof operators). (On one worker the join and the least are
    // differential's own, and log nothing.)
    let (second, second_key) = op.second(args.inserts, sampler);
    let renames = if op == Op::JoinRenamed { 2 * 2 * RENAMED } else { 0 };
    let table = if op.table() {
        sampler.distinct() as u64 + renames
    } else {
        0
    };
    // Every fact is inserted, and retracted later.
    let total = 2 * args.epochs * (args.inserts + second) + table;
    // What each worker arranged: what it received, less what it passed on.
    let logged: Vec<u64> = received
        .lock()
        .unwrap()
        .iter()
        .zip(unarranged.lock().unwrap().iter())
        .map(|(received, passed)| received - passed)
        .collect();
    let (work, copies) = if skew && logged.iter().any(|&count| count > 0) {
        let copies = logged.iter().sum::<u64>().saturating_sub(total);
        (logged, copies)
    } else {
        let mut work = vec![0u64; workers];
        for record in 0..args.epochs * args.inserts {
            work[worker_of(sampler.rank(record) as u64, workers)] += 2;
        }
        for record in 0..args.epochs * second {
            work[worker_of(second_key(record), workers)] += 2;
        }
        for row in 0..table - renames {
            // A renamed row: inserted, then twice retracted and inserted.
            work[worker_of(row, workers)] += if renames > 0 && row < RENAMED { 5 } else { 1 };
        }
        (work, 0)
    };
    let hot = hot.lock().unwrap();
    let latency = LatencySummary::from_micros(&latencies.lock().unwrap());
    let outputs = outputs.lock().unwrap();
    Run {
        seconds,
        cpu,
        latency,
        digest: outputs
            .iter()
            .fold(0, |digest, (theirs, _)| digest.wrapping_add(*theirs)),
        output: outputs.iter().map(|(_, produced)| *produced).collect(),
        work,
        copies,
        hot_keys: hot.len(),
    }
}

/// The busiest worker's work.
fn busiest(work: &[u64]) -> f64 {
    work.iter().copied().max().unwrap_or(0).max(1) as f64
}

/// The busiest worker's share of the work over the mean worker's.
fn max_over_mean(work: &[u64]) -> f64 {
    let mean = work.iter().sum::<u64>() as f64 / work.len() as f64;
    busiest(work) / mean.max(1.0)
}

/// The skew-proof operator's busiest worker's work over differential's
/// mean worker's: the balance measured against a perfect spread of the
/// work differential does (the reductions shrink the total, so their own
/// mean is no yardstick).
fn busiest_over_plain_mean(skew: &[u64], plain: &[u64]) -> f64 {
    let mean = plain.iter().sum::<u64>() as f64 / plain.len() as f64;
    busiest(skew) / mean.max(1.0)
}

fn main() {
    let args = Args::parse();
    println!(
        "differential operators on {} epochs x {} facts (each retracted {} epochs later), joins with a table of one row per key, {} rounds; seconds median [min, max]; epoch latency ms, median over rounds",
        args.epochs, args.inserts, args.window, args.rounds
    );
    println!("| operator | keys | hottest key | workers | differential's s | skew-proof s | updates/s, differential's | updates/s, skew-proof | skew-proof / differential's, updates/s (paired [range]) | epoch p50 / p99 ms, differential's | the same, skew-proof | input busiest / mean, differential's | the same, skew-proof | gain the work allows (busiest's input, differential's / skew-proof) | table rows copied (hot keys) | output busiest / mean, differential's / skew-proof | workers' CPU s, differential's / skew-proof (skew-proof ÷ differential's) | skew-proof busiest ÷ differential's mean, input |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for &op in &args.ops {
        let [plain, skewed] = op.names();
        for spec in &args.keys {
            let sampler = Arc::new(KeySampler::new(spec, 1));
            // Every fact (of both streams, for two) is inserted and retracted.
            let updates = (2 * args.epochs * (args.inserts + op.second(args.inserts, &sampler).0)) as f64;
            let mut digests = Vec::new();
            for &workers in &args.workers {
                let mut runs: [Vec<Run>; 2] = [Vec::new(), Vec::new()];
                for round in 0..args.rounds {
                    for offset in 0..2 {
                        let which = (offset + round) % 2;
                        let run = run(op, which == 1, &sampler, workers, &args, false);
                        digests.push((op.names()[which], workers, run.digest));
                        runs[which].push(run);
                    }
                }
                // The work counts from a run that listens to the log, untimed.
                let counted = run(op, true, &sampler, workers, &args, true);
                digests.push(("counted", workers, counted.digest));
                let balance = [max_over_mean(&runs[0][0].work), max_over_mean(&counted.work)];
                let gain = busiest(&runs[0][0].work) / busiest(&counted.work);
                let paired = spread(
                    runs[0]
                        .iter()
                        .zip(&runs[1])
                        .map(|(plain, skew)| plain.seconds / skew.seconds)
                        .collect(),
                );
                let latency = |runs: &[Run]| {
                    let p50 = spread(runs.iter().map(|run| run.latency.p50).collect()).1;
                    let p99 = spread(runs.iter().map(|run| run.latency.p99).collect()).1;
                    format!("{p50:.1} / {p99:.1}")
                };
                let latencies = [latency(&runs[0]), latency(&runs[1])];
                let spreads: Vec<(f64, f64, f64)> = runs
                    .iter()
                    .map(|runs| spread(runs.iter().map(|run| run.seconds).collect()))
                    .collect();
                let cell = |(min, med, max): (f64, f64, f64)| format!("{med:.3} [{min:.3}, {max:.3}]");
                let cpu = runs
                    .iter()
                    .map(|runs| {
                        runs.iter()
                            .map(|run| run.cpu)
                            .collect::<Option<Vec<f64>>>()
                            .map(|cpu| spread(cpu).1)
                    })
                    .collect::<Option<Vec<f64>>>()
                    .map_or("-".to_string(), |cpu| {
                        format!("{:.3} / {:.3} ({:.2})", cpu[0], cpu[1], cpu[1] / cpu[0])
                    });
                println!(
                    "| {plain} / {skewed} | {spec} | {:.3} | {workers} | {} | {} | {:.2} M | {:.2} M | {:.2} ({:.2} [{:.2}, {:.2}]) | {} | {} | {:.2} | {:.2} | {:.2} | {} ({}) | {:.2} / {:.2} | {cpu} | {:.2} |",
                    sampler.probability(0),
                    cell(spreads[0]),
                    cell(spreads[1]),
                    updates / spreads[0].1 / 1e6,
                    updates / spreads[1].1 / 1e6,
                    spreads[0].1 / spreads[1].1,
                    paired.1,
                    paired.0,
                    paired.2,
                    latencies[0],
                    latencies[1],
                    balance[0],
                    balance[1],
                    gain,
                    counted.copies,
                    counted.hot_keys,
                    max_over_mean(&runs[0][0].output),
                    max_over_mean(&counted.output),
                    busiest_over_plain_mean(&counted.work, &runs[0][0].work),
                );
            }
            for &workers in &args.work_workers {
                let runs = [false, true].map(|skew| run(op, skew, &sampler, workers, &args, true));
                for (name, run) in op.names().iter().zip(&runs) {
                    digests.push((name, workers, run.digest));
                }
                let (plain_balance, skew_balance) = (max_over_mean(&runs[0].work), max_over_mean(&runs[1].work));
                println!(
                    "| {plain} / {skewed} | {spec} | {:.3} | {workers} (work counts only) | | | | | | | | {plain_balance:.2} | {skew_balance:.2} | {:.2} | {} ({}) | {:.2} / {:.2} | | {:.2} |",
                    sampler.probability(0),
                    busiest(&runs[0].work) / busiest(&runs[1].work),
                    runs[1].copies,
                    runs[1].hot_keys,
                    max_over_mean(&runs[0].output),
                    max_over_mean(&runs[1].output),
                    busiest_over_plain_mean(&runs[1].work, &runs[0].work),
                );
            }
            assert!(
                digests.iter().all(|(_, _, digest)| *digest == digests[0].2),
                "{plain} on {spec}: the outputs disagree: {digests:?}"
            );
        }
    }
}

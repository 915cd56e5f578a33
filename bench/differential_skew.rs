//! Differential's own `join` against `skew_join` on a stream of keyed
//! facts (each retracted `--window` epochs after its insertion) joined with
//! a table of one row per key, side by side: seconds, and each worker's
//! share of the join's input (the records each worker's join arranges).
//!
//! `cargo bench --bench differential_skew -- [--keys zipf:1.0:100000,zipf:1.2:100000,zipf:1.5:100000]
//!  [--epochs 20] [--inserts 100000] [--window 3] [--workers 1,2,4] [--work-workers 16] [--rounds 3]`
//!
//! Every round runs each configuration once, in rotating order, with no
//! logger registered; one more run of `skew_join` listens to its log for
//! the work counts. The table
//! gives the median seconds and their range, the ratio of updates/s (of
//! the medians, and the median of each round's pair), and the join input's
//! busiest worker over the mean worker (the speed-up the balance allows is
//! the workers over that; the gain `skew_join`'s balance allows, join's
//! over `skew_join`'s), and the table rows copied to the hot keys' other
//! workers (one row per key: at most d − 1 for a key dealt to d workers). `--work-workers` adds runs at more worker threads
//! for the work counts alone (they do not depend on the cores). Every run's
//! digest of the output must equal every other's on the same keys.

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use clap::Parser;
use differential_dataflow::input::Input;
use differential_dataflow::{Hashable, VecCollection};
use equipoise::common::hash::{key_hash, splitmix64};
use equipoise::pkg::{SkewEvent, SkewEventBuilder, SkewJoin, SKEW_LOG_NAME};
use equipoise_lab::common::keys::{KeySampler, KeySpec};
use equipoise_lab::common::median::spread;
use timely::dataflow::operators::Probe;

#[derive(Parser, Debug)]
struct Args {
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

#[derive(Clone, Copy, Debug, PartialEq)]
enum Joiner {
    Join,
    SkewJoin,
}

impl Joiner {
    const ALL: [Joiner; 2] = [Joiner::Join, Joiner::SkewJoin];

    fn name(self) -> &'static str {
        match self {
            Joiner::Join => "join",
            Joiner::SkewJoin => "skew_join",
        }
    }
}

/// A run's seconds, output digest, the join input each worker arranged,
/// and the table rows copied to hot keys' other workers (and the hot keys).
struct Run {
    seconds: f64,
    digest: u64,
    work: Vec<u64>,
    copies: u64,
    hot_keys: usize,
}

/// The worker differential's exchange sends a key to.
fn worker_of(key: u64, peers: usize) -> usize {
    (Hashable::hashed(&key) % peers as u64) as usize
}

/// One run; `counting` listens to `skew_join`'s log for the work counts
/// (the timed runs do not, as a program that does not listen pays nothing
/// for the log).
fn run(joiner: Joiner, sampler: &Arc<KeySampler>, workers: usize, args: &Args, counting: bool) -> Run {
    let (epochs, inserts, window) = (args.epochs, args.inserts, args.window);
    let digest = Arc::new(AtomicU64::new(0));
    let shared = Arc::clone(&digest);
    // Per worker, the facts each worker received: logged by the skew join's routers, counted here for join.
    let facts_at = Arc::new(Mutex::new(vec![0u64; workers]));
    // Per hot key (by its route hash), every worker it was dealt to.
    let hot = Arc::new(Mutex::new(HashMap::<u64, BTreeSet<usize>>::new()));
    let (facts_at2, hot2) = (Arc::clone(&facts_at), Arc::clone(&hot));
    let keys = Arc::clone(sampler);
    let seconds = timely::execute(timely::Config::process(workers), move |worker| {
        let (index, peers) = (worker.index() as u64, worker.peers() as u64);
        let (facts_at, hot) = (Arc::clone(&facts_at2), Arc::clone(&hot2));
        let sent = Rc::new(RefCell::new(vec![0u64; peers as usize]));
        let logged = Rc::clone(&sent);
        if counting {
            worker
                .log_register()
                .expect("logging")
                .insert::<SkewEventBuilder, _>(SKEW_LOG_NAME, move |_, events| {
                    if let Some(events) = events {
                        for (_, event) in events.iter() {
                            match event {
                                SkewEvent::Routed { sent, .. } => {
                                    for (total, count) in logged.borrow_mut().iter_mut().zip(sent) {
                                        *total += count;
                                    }
                                }
                                SkewEvent::Hot { key, workers, .. } => {
                                    hot.lock().unwrap().entry(*key).or_default().extend(workers)
                                }
                            }
                        }
                    }
                });
        }
        let shared = Arc::clone(&shared);
        let (mut facts, mut table, probe) = worker.dataflow::<u64, _, _>(|scope| {
            let (facts_input, facts) = scope.new_collection::<(u64, u64), isize>();
            let (table_input, table) = scope.new_collection::<(u64, u64), isize>();
            let joined: VecCollection<'_, u64, (u64, (u64, u64)), isize> = match joiner {
                Joiner::Join => facts.join(table),
                Joiner::SkewJoin => facts.skew_join(table),
            };
            let probe = joined
                .inspect(move |(record, time, diff)| {
                    let update = splitmix64(key_hash(&(record, time))).wrapping_mul(*diff as u64);
                    shared.fetch_add(update, Ordering::Relaxed);
                })
                .inner
                .probe()
                .0;
            (facts_input, table_input, probe)
        });
        let start = Instant::now();
        let key = |record: u64| keys.rank(record) as u64;
        for row in (index..keys.distinct() as u64).step_by(peers as usize) {
            table.insert((row, row));
        }
        for epoch in 0..epochs + window {
            for (first, diff) in [(epoch, 1isize), (epoch.wrapping_sub(window), -1)] {
                if first >= epochs {
                    continue;
                }
                let mut record = first * inserts + index;
                while record < (first + 1) * inserts {
                    facts.update((key(record), record), diff);
                    record += peers;
                }
            }
            facts.advance_to(epoch + 1);
            table.advance_to(epoch + 1);
            facts.flush();
            table.flush();
            while probe.less_than(facts.time()) {
                worker.step_or_park(None);
            }
        }
        let seconds = start.elapsed().as_secs_f64();
        drop(worker.log_register().map(|mut register| register.remove(SKEW_LOG_NAME)));
        let mut facts_at = facts_at.lock().unwrap();
        for (total, count) in facts_at.iter_mut().zip(sent.borrow().iter()) {
            *total += count;
        }
        seconds
    })
    .expect("timely runs")
    .join()
    .into_iter()
    .map(|seconds| seconds.expect("a worker finishes"))
    .fold(0.0, f64::max);
    // The join's input per worker: the facts it received and the table rows
    // it arranged (each hot key's row copied to its other workers).
    let mut work = match joiner {
        Joiner::SkewJoin => facts_at.lock().unwrap().clone(),
        Joiner::Join => {
            let mut work = vec![0u64; workers];
            for record in 0..args.epochs * args.inserts {
                // Inserted, and retracted later.
                work[worker_of(sampler.rank(record) as u64, workers)] += 2;
            }
            work
        }
    };
    for row in 0..sampler.distinct() as u64 {
        work[worker_of(row, workers)] += 1;
    }
    let hot = hot.lock().unwrap();
    let mut copies = 0;
    for (key, dealt) in hot.iter() {
        for &worker in dealt.iter().filter(|&&worker| worker as u64 != key % workers as u64) {
            work[worker] += 1;
            copies += 1;
        }
    }
    Run {
        seconds,
        digest: digest.load(Ordering::Relaxed),
        work,
        copies,
        hot_keys: hot.len(),
    }
}

/// The busiest worker's share of the work over the mean worker's.
fn max_over_mean(work: &[u64]) -> f64 {
    let mean = work.iter().sum::<u64>() as f64 / work.len() as f64;
    *work.iter().max().unwrap_or(&0) as f64 / mean.max(1.0)
}

fn main() {
    let args = Args::parse();
    println!(
        "differential join of {} epochs x {} facts (each retracted {} epochs later) with a table of one row per key, {} rounds; seconds median [min, max]",
        args.epochs, args.inserts, args.window, args.rounds
    );
    println!("| keys | hottest key | workers | join s | skew_join s | updates/s, join | updates/s, skew_join | skew_join / join, updates/s (paired [range]) | join input busiest / mean, join | the same, skew_join | gain the balance allows | table rows copied (hot keys) |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    for spec in &args.keys {
        let sampler = Arc::new(KeySampler::new(spec, 1));
        // Every fact is inserted and retracted.
        let updates = (2 * args.epochs * args.inserts) as f64;
        let mut digests = Vec::new();
        for &workers in &args.workers {
            let mut runs: Vec<Vec<Run>> = vec![Vec::new(), Vec::new()];
            for round in 0..args.rounds {
                for offset in 0..Joiner::ALL.len() {
                    let which = (offset + round) % Joiner::ALL.len();
                    let run = run(Joiner::ALL[which], &sampler, workers, &args, false);
                    digests.push((Joiner::ALL[which].name(), workers, run.digest));
                    runs[which].push(run);
                }
            }
            // The work counts from a run that listens to the log, untimed.
            let counted = run(Joiner::SkewJoin, &sampler, workers, &args, true);
            digests.push(("skew_join, counted", workers, counted.digest));
            let balance = [max_over_mean(&runs[0][0].work), max_over_mean(&counted.work)];
            let (copies, hot_keys) = (counted.copies, counted.hot_keys);
            let paired = spread(
                runs[0]
                    .iter()
                    .zip(&runs[1])
                    .map(|(join, skew)| join.seconds / skew.seconds)
                    .collect(),
            );
            let spreads: Vec<(f64, f64, f64)> = runs
                .into_iter()
                .map(|runs| spread(runs.iter().map(|run| run.seconds).collect()))
                .collect();
            let cell = |(min, med, max): (f64, f64, f64)| format!("{med:.3} [{min:.3}, {max:.3}]");
            println!(
                "| {spec} | {:.3} | {workers} | {} | {} | {:.2} M | {:.2} M | {:.2} ({:.2} [{:.2}, {:.2}]) | {:.2} | {:.2} | {:.2} | {copies} ({hot_keys}) |",
                sampler.probability(0),
                cell(spreads[0]),
                cell(spreads[1]),
                updates / spreads[0].1 / 1e6,
                updates / spreads[1].1 / 1e6,
                spreads[0].1 / spreads[1].1,
                paired.1,
                paired.0,
                paired.2,
                balance[0],
                balance[1],
                balance[0] / balance[1],
            );
        }
        for &workers in &args.work_workers {
            let runs: Vec<Run> = Joiner::ALL
                .iter()
                .map(|&joiner| run(joiner, &sampler, workers, &args, true))
                .collect();
            for (joiner, run) in Joiner::ALL.iter().zip(&runs) {
                digests.push((joiner.name(), workers, run.digest));
            }
            let (join, skew) = (max_over_mean(&runs[0].work), max_over_mean(&runs[1].work));
            println!(
                "| {spec} | {:.3} | {workers} (work counts only) | | | | | | {join:.2} | {skew:.2} | {:.2} | {} ({}) |",
                sampler.probability(0),
                join / skew,
                runs[1].copies,
                runs[1].hot_keys,
            );
        }
        assert!(
            digests.iter().all(|(_, _, digest)| *digest == digests[0].2),
            "{spec}: the joins disagree: {digests:?}"
        );
    }
}

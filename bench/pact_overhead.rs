//! Pact overhead: records/s through the PKG pact vs timely's own `Exchange`,
//! uniform keys, at 1 and 2 workers, side by side in one run.
//!
//! Two key functions, the same for both pacts: the key itself (the keys are
//! already uniformly random u64s, so this is the cheapest valid fingerprint)
//! and `key_hash` of the key (what a program with arbitrary keys writes).
//!
//! `cargo bench --bench pact_overhead -- [--records N] [--rounds R]`
//!
//! Each round runs every (pact, workers) pair once, in alternating order, so
//! machine noise hits all alike; the table gives medians over the rounds and
//! the ratio of medians.

use std::time::Instant;

use clap::Parser;
use equipoise::common::hash::{key_hash, splitmix64};
use equipoise::pkg::PartialKeyGrouping;
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::{Exchange, ParallelizationContract};
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::vec::Input;
use timely::dataflow::operators::Probe;
use timely::dataflow::InputHandle;

#[derive(Parser, Debug)]
struct Args {
    /// Records per run (over all workers).
    #[arg(long, default_value_t = 20_000_000)]
    records: u64,
    /// Rounds (runs of each configuration).
    #[arg(long, default_value_t = 7)]
    rounds: usize,
    /// Records per epoch.
    #[arg(long, default_value_t = 100_000)]
    batch: u64,
    /// cargo bench passes --bench; accepted and ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Pact {
    Exchange,
    Pkg,
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Fingerprint {
    Identity,
    Hashed,
}

impl Fingerprint {
    fn of(self, key: &u64) -> u64 {
        match self {
            Fingerprint::Identity => *key,
            Fingerprint::Hashed => key_hash(key),
        }
    }
}

/// Records per second through `pact` into a counting sink at `workers` workers.
fn measure(pact: Pact, fingerprint: Fingerprint, workers: usize, records: u64, batch: u64) -> f64 {
    let elapsed = timely::execute(timely::Config::process(workers), move |worker| {
        let (index, peers) = (worker.index() as u64, worker.peers() as u64);
        let mut input = InputHandle::new();
        let probe = worker.dataflow::<u64, _, _>(|scope| {
            let stream = scope.input_from(&mut input);
            let counted = match pact {
                Pact::Exchange => sink(stream, Exchange::new(move |key: &u64| fingerprint.of(key))),
                Pact::Pkg => sink(stream, PartialKeyGrouping::new(move |key: &u64| fingerprint.of(key))),
            };
            counted.probe().0
        });
        worker.step_while(|| false);
        let start = Instant::now();
        let mut record = index;
        for epoch in 0..records.div_ceil(batch) {
            let end = records.min((epoch + 1) * batch);
            while record < end {
                input.send(splitmix64(record));
                record += peers;
            }
            input.advance_to(epoch + 1);
            while probe.less_than(&epoch) {
                worker.step();
            }
        }
        drop(input);
        while !probe.done() {
            worker.step();
        }
        start.elapsed().as_secs_f64()
    })
    .unwrap()
    .join()
    .into_iter()
    .map(|result| result.unwrap())
    .fold(0.0, f64::max);
    records as f64 / elapsed
}

/// Routes through `pact` into an operator that counts what it receives.
fn sink<'s, P: ParallelizationContract<u64, Vec<u64>>>(
    stream: timely::dataflow::StreamVec<'s, u64, u64>,
    pact: P,
) -> timely::dataflow::StreamVec<'s, u64, u64> {
    stream.unary::<CapacityContainerBuilder<Vec<u64>>, _, _, _>(pact, "Count", |_, _| {
        let mut count = 0u64;
        move |input, _output| {
            input.for_each(|_, data| {
                count += data.len() as u64;
                data.clear();
            });
        }
    })
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let args = Args::parse();
    let mut configs = Vec::new();
    for fingerprint in [Fingerprint::Identity, Fingerprint::Hashed] {
        for workers in [1, 2] {
            configs.push((Pact::Exchange, fingerprint, workers));
            configs.push((Pact::Pkg, fingerprint, workers));
        }
    }
    let mut samples = vec![Vec::new(); configs.len()];
    for round in 0..args.rounds {
        // Rotate the order so that no configuration always runs first.
        for offset in 0..configs.len() {
            let index = (offset + round) % configs.len();
            let (pact, fingerprint, workers) = configs[index];
            samples[index].push(measure(pact, fingerprint, workers, args.records, args.batch));
        }
    }
    println!(
        "pact overhead: {} uniform u64 records per run into a counting sink, {} rounds, medians",
        args.records, args.rounds
    );
    println!("| key function | workers | Exchange (Mrec/s) | PKG (Mrec/s) | PKG / Exchange |");
    println!("|---|---|---|---|---|");
    for pair in (0..configs.len()).step_by(2) {
        let (_, fingerprint, workers) = configs[pair];
        let exchange = median(&mut samples[pair]);
        let pkg = median(&mut samples[pair + 1]);
        let name = match fingerprint {
            Fingerprint::Identity => "identity",
            Fingerprint::Hashed => "key_hash",
        };
        println!(
            "| {name} | {workers} | {:.1} | {:.1} | {:.3} |",
            exchange / 1e6,
            pkg / 1e6,
            pkg / exchange
        );
    }
}

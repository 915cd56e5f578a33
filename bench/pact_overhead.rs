//! Pact overhead: records/s through the PKG pact vs timely's own `Exchange`
//! (and D-Choices and W-Choices against PKG, and PKG with a `--slack`),
//! uniform keys, at 1, 2 and 4 workers (`--workers`), side by side in one run; and key
//! grouping through the same pact machinery, which isolates the machinery's
//! cost from PKG's choice.
//!
//! `cargo bench --bench pact_overhead -- [--records N] [--rounds R] [--distinct K] [--workers 1,2,4] [--slack S]
//! [--pacts exchange,key,pkg,dchoices,wchoices,pkg-slack] [--receivers count,per-key] [--listen]`
//!
//! `--listen` registers a logger for the pacts' events (which drops them):
//! without it nobody listens, as in a program that does not ask.
//!
//! `--pacts` and `--receivers` run part of the table (the rest shows `-`),
//! so that a comparison of a few pacts can afford many rounds.
//!
//! Keys are uniform over `--distinct` values. Two key functions, the same for
//! every pact: the key itself (the keys are already uniformly random u64s, so
//! this is the cheapest valid fingerprint) and `key_hash` of the key (what a
//! program with arbitrary keys writes). Two receivers: one that only counts
//! records (the pact is all the work) and one that counts per key in a
//! HashMap (the first phase of `pkg_count_running`, the pact's intended consumer).
//! Each round runs every configuration once, in rotating order, so machine
//! noise hits all alike; the table gives the median and the range over rounds.

use std::collections::HashMap;
use std::time::Instant;

use clap::Parser;
use equipoise::common::hash::{key_hash, splitmix64};
use equipoise::pkg::events::PkgEventBuilder;
use equipoise::pkg::{Grouped, KeyGrouping, PartialKeyGrouping, Pkg, LOG_NAME};
use equipoise_lab::common::median::spread;
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::{Exchange, ParallelizationContract};
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::vec::Input;
use timely::dataflow::operators::Probe;
use timely::dataflow::{InputHandle, StreamVec};

#[derive(Parser, Debug)]
struct Args {
    /// Records per run (over all workers).
    #[arg(long, default_value_t = 20_000_000)]
    records: u64,
    /// Distinct keys.
    #[arg(long, default_value_t = 1_000_000)]
    distinct: u64,
    /// Rounds (runs of each configuration).
    #[arg(long, default_value_t = 7)]
    rounds: usize,
    /// Worker counts to run, comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = [1, 2, 4])]
    workers: Vec<usize>,
    /// Records per epoch.
    #[arg(long, default_value_t = 100_000)]
    batch: u64,
    /// The slack of the "PKG (slack)" column (see `Pkg::slack`).
    #[arg(long, default_value_t = 1024)]
    slack: u64,
    /// Pacts to run, comma-separated (default: all).
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = PACTS)]
    pacts: Vec<Pact>,
    /// Receivers to run, comma-separated (default: both).
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = [Receiver::Count, Receiver::CountPerKey])]
    receivers: Vec<Receiver>,
    /// Registers a logger for the pacts' events (`equipoise/pkg`, one a
    /// second per pact and worker) that drops them: the cost of listening.
    #[arg(long)]
    listen: bool,
    /// cargo bench passes --bench; accepted and ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

#[derive(Clone, Copy, PartialEq, Debug, clap::ValueEnum)]
enum Pact {
    Exchange,
    Key,
    Pkg,
    #[value(name = "dchoices")]
    DChoices,
    #[value(name = "wchoices")]
    WChoices,
    PkgSlack,
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

    fn name(self) -> &'static str {
        match self {
            Fingerprint::Identity => "identity",
            Fingerprint::Hashed => "key_hash",
        }
    }
}

#[derive(Clone, Copy, PartialEq, Debug, clap::ValueEnum)]
enum Receiver {
    Count,
    #[value(name = "per-key")]
    CountPerKey,
}

impl Receiver {
    fn name(self) -> &'static str {
        match self {
            Receiver::Count => "count records",
            Receiver::CountPerKey => "count per key",
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Setup {
    fingerprint: Fingerprint,
    receiver: Receiver,
    workers: usize,
}

/// Records per second through `pact` into `setup.receiver` at `setup.workers` workers.
fn measure(pact: Pact, setup: Setup, args: &Args) -> f64 {
    let Setup {
        fingerprint,
        receiver,
        workers,
    } = setup;
    let (records, batch, distinct, slack, listen) = (args.records, args.batch, args.distinct, args.slack, args.listen);
    let elapsed = timely::execute(timely::Config::process(workers), move |worker| {
        let (index, peers) = (worker.index() as u64, worker.peers() as u64);
        if listen {
            let mut registry = worker.log_register().expect("timely's workers have a log registry");
            registry.insert::<PkgEventBuilder, _>(LOG_NAME, |_time, batch| {
                if let Some(batch) = batch {
                    batch.clear();
                }
            });
        }
        let mut input = InputHandle::new();
        let probe = worker.dataflow::<u64, _, _>(|scope| {
            let stream = scope.input_from(&mut input);
            // Every pact routes on the same fingerprint.
            let key = move |key: &u64| fingerprint.of(key);
            let received = match pact {
                Pact::Exchange => receive(stream, Exchange::new(key), receiver),
                Pact::Key => receive(stream, KeyGrouping::new(key), receiver),
                Pact::Pkg => receive(stream, PartialKeyGrouping::new(key), receiver),
                Pact::DChoices => receive(stream, Grouped::d_choices(key), receiver),
                Pact::WChoices => receive(stream, Grouped::w_choices(key), receiver),
                Pact::PkgSlack => receive(
                    stream,
                    PartialKeyGrouping::with_grouping(Pkg::with_slack(slack), key),
                    receiver,
                ),
            };
            received.probe().0
        });
        let start = Instant::now();
        let mut record = index;
        for epoch in 0..records.div_ceil(batch) {
            let end = records.min((epoch + 1) * batch);
            while record < end {
                input.send(splitmix64(splitmix64(record) % distinct));
                record += peers;
            }
            input.advance_to(epoch + 1);
            while probe.less_than(&epoch) {
                worker.step_or_park(None);
            }
        }
        drop(input);
        while !probe.done() {
            worker.step_or_park(None);
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

/// Routes through `pact` into an operator that counts records or keys.
fn receive<'s, P: ParallelizationContract<u64, Vec<u64>>>(
    stream: StreamVec<'s, u64, u64>,
    pact: P,
    receiver: Receiver,
) -> StreamVec<'s, u64, u64> {
    stream.unary::<CapacityContainerBuilder<Vec<u64>>, _, _, _>(pact, "Receive", move |_, _| {
        let mut records = 0u64;
        let mut per_key: HashMap<u64, u64> = HashMap::new();
        move |input, _output| {
            input.for_each(|_, data| {
                match receiver {
                    Receiver::Count => records += data.len() as u64,
                    Receiver::CountPerKey => {
                        for key in data.iter() {
                            *per_key.entry(*key).or_default() += 1;
                        }
                    }
                }
                data.clear();
            });
        }
    })
}

/// The pacts of each setup, in the order of the table's columns.
const PACTS: [Pact; 6] = [
    Pact::Exchange,
    Pact::Key,
    Pact::Pkg,
    Pact::DChoices,
    Pact::WChoices,
    Pact::PkgSlack,
];

fn main() {
    let args = Args::parse();
    let mut setups = Vec::new();
    for &receiver in &args.receivers {
        for fingerprint in [Fingerprint::Identity, Fingerprint::Hashed] {
            for &workers in &args.workers {
                setups.push(Setup {
                    fingerprint,
                    receiver,
                    workers,
                });
            }
        }
    }
    let runs: Vec<(Pact, Setup)> = setups
        .iter()
        .flat_map(|&setup| PACTS.map(|pact| (pact, setup)))
        .filter(|(pact, _)| args.pacts.contains(pact))
        .collect();
    let mut samples: Vec<Vec<f64>> = vec![Vec::new(); runs.len()];
    for round in 0..args.rounds {
        for offset in 0..runs.len() {
            let index = (offset + round) % runs.len();
            let (pact, setup) = runs[index];
            samples[index].push(measure(pact, setup, &args));
        }
    }
    let mut samples = runs.into_iter().zip(samples);
    println!(
        "pact overhead: {} records per run, keys uniform over {}, {} rounds{}; Mrec/s median [min, max]",
        args.records,
        args.distinct,
        args.rounds,
        if args.listen {
            ", the pacts' log listened to"
        } else {
            ""
        }
    );
    println!(
        "| receiver | key function | workers | Exchange | PKG | PKG / Exchange (medians) | key grouping | key grouping / Exchange | D-Choices | D-Choices / PKG | W-Choices | W-Choices / PKG | PKG (slack {}) | PKG (slack) / Exchange |",
        args.slack
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for setup in &setups {
        // Each pact's (min, median, max), if it ran.
        let [exchange, key, pkg, d, w, sticky] = PACTS.map(|pact| {
            if args.pacts.contains(&pact) {
                let (_, rates) = samples.next().expect("a run per pact and setup");
                Some(spread(rates))
            } else {
                None
            }
        });
        let mrec = |rates: Option<(f64, f64, f64)>| {
            rates.map_or("-".into(), |(min, med, max)| {
                format!("{:.0} [{:.0}, {:.0}]", med / 1e6, min / 1e6, max / 1e6)
            })
        };
        let ratio = |a: Option<(f64, f64, f64)>, b: Option<(f64, f64, f64)>| match (a, b) {
            (Some(a), Some(b)) => format!("{:.3}", a.1 / b.1),
            _ => "-".into(),
        };
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            setup.receiver.name(),
            setup.fingerprint.name(),
            setup.workers,
            mrec(exchange),
            mrec(pkg),
            ratio(pkg, exchange),
            mrec(key),
            ratio(key, exchange),
            mrec(d),
            ratio(d, pkg),
            mrec(w),
            ratio(w, pkg),
            mrec(sticky),
            ratio(sticky, exchange)
        );
    }
}

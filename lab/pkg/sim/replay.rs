//! Replaying a key stream through every scheme: S sources, each with its own
//! router (the pacts' routers), split evenly or unevenly, into n workers.

use std::fmt;
use std::str::FromStr;

use crate::common::Error;
use equipoise::common::hash::splitmix64;

use super::greedy::{offline_greedy, OnlineGreedy};
use equipoise::pkg::sim::{less_loaded, two_choices, SchemeRouter};
use equipoise::pkg::sim::{Grouping, Router};
use equipoise::pkg::Scheme;

use super::stream::Dataset;

/// A scheme of the simulator: the pacts' schemes and the baselines that
/// exist only here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SimScheme {
    /// A pact's scheme (key, shuffle, potc, pkg, dchoices, wchoices).
    Pact(Scheme),
    /// On-Greedy: a new key to the least loaded of all workers, then fixed.
    OnGreedy,
    /// Off-Greedy: keys by total frequency, each to the least loaded.
    OffGreedy,
    /// PKG choosing by the true global loads instead of its own sends.
    PkgGlobal,
}

impl SimScheme {
    /// Every scheme, in the order of reports.
    pub const ALL: [SimScheme; 9] = [
        SimScheme::Pact(Scheme::Key),
        SimScheme::Pact(Scheme::Shuffle),
        SimScheme::Pact(Scheme::Potc),
        SimScheme::OnGreedy,
        SimScheme::OffGreedy,
        SimScheme::Pact(Scheme::Pkg),
        SimScheme::PkgGlobal,
        SimScheme::Pact(Scheme::DChoices),
        SimScheme::Pact(Scheme::WChoices),
    ];

    /// The scheme's name in reports and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            SimScheme::Pact(scheme) => scheme.name(),
            SimScheme::OnGreedy => "on-greedy",
            SimScheme::OffGreedy => "off-greedy",
            SimScheme::PkgGlobal => "pkg-global",
        }
    }
}

impl fmt::Display for SimScheme {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for SimScheme {
    type Err = Error;
    fn from_str(text: &str) -> Result<Self, Error> {
        SimScheme::ALL
            .into_iter()
            .find(|scheme| scheme.name() == text)
            .ok_or_else(|| {
                let names: Vec<&str> = SimScheme::ALL.iter().map(|s| s.name()).collect();
                Error::invalid("--schemes", format!("`{text}`: expected one of {}", names.join(", ")))
            })
    }
}

/// How the stream is divided among the sources.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Split {
    /// Message i to source i mod S.
    Even,
    /// Source s gets a share proportional to 1/(s + 1), at random.
    Uneven,
}

/// The result of one replay.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// Messages each worker received.
    pub loads: Vec<u64>,
    /// (max − mean load) ÷ messages, at the end.
    pub imbalance_fraction: f64,
    /// The largest (max − mean load) ÷ messages so far, over the checkpoints.
    pub max_imbalance_fraction: f64,
    /// (messages so far, imbalance fraction then) at each checkpoint.
    pub series: Vec<(u64, f64)>,
    /// The most workers a head key may reach at the end (source 0's d for
    /// D-Choices; n for W-Choices and shuffle; 2 for PKG; 1 for key grouping).
    pub head_choices: usize,
}

/// Number of checkpoints over a replay.
const CHECKPOINTS: u64 = 100;

fn imbalance(loads: &[u64], messages: u64) -> f64 {
    let max = loads.iter().copied().max().unwrap_or(0) as f64;
    let mean = loads.iter().sum::<u64>() as f64 / loads.len().max(1) as f64;
    (max - mean) / messages.max(1) as f64
}

/// Each source's router, or none when routing reads the global loads.
enum Routing {
    Pact(Vec<SchemeRouter>),
    Table(Vec<Box<dyn Router>>),
    Global,
}

/// Replays `data` through `scheme` from `sources` sources into `workers`
/// workers.
pub fn replay(data: &Dataset, scheme: SimScheme, workers: usize, sources: usize, split: Split) -> Outcome {
    let (workers, sources) = (workers.max(1), sources.max(1));
    let mut routing = match scheme {
        SimScheme::Pact(pact) => Routing::Pact((0..sources).map(|s| pact.router(workers, s)).collect()),
        SimScheme::OnGreedy => Routing::Table(
            (0..sources)
                .map(|s| Box::new(OnlineGreedy.router(workers, s)) as Box<dyn Router>)
                .collect(),
        ),
        SimScheme::OffGreedy => {
            let table = offline_greedy(&data.frequencies(), workers);
            Routing::Table(
                (0..sources)
                    .map(|_| Box::new(table.clone()) as Box<dyn Router>)
                    .collect(),
            )
        }
        SimScheme::PkgGlobal => Routing::Global,
    };
    let weights: Vec<f64> = (0..sources)
        .scan(0.0, |total, s| {
            *total += 1.0 / (s + 1) as f64;
            Some(*total)
        })
        .collect();
    let total_weight = *weights.last().expect("at least one source");
    let messages = data.keys.len() as u64;
    let every = (messages / CHECKPOINTS).max(1);
    let mut loads = vec![0u64; workers];
    let mut series = Vec::new();
    let mut max_imbalance = 0.0f64;
    // Message i's source under an even split, i mod sources, counted
    // rather than divided: a division per message would cost more than
    // some schemes' routing.
    let mut even_source = 0;
    for (i, &key) in data.keys.iter().enumerate() {
        let this_even_source = even_source;
        even_source = if even_source + 1 == sources { 0 } else { even_source + 1 };
        let source = || match split {
            Split::Even => this_even_source,
            Split::Uneven => {
                let u = (splitmix64(i as u64) >> 11) as f64 / (1u64 << 53) as f64 * total_weight;
                weights.partition_point(|&bound| bound <= u).min(sources - 1)
            }
        };
        let destination = match &mut routing {
            Routing::Pact(routers) => routers[source()].route(key, 1),
            Routing::Table(routers) => routers[source()].route(key, 1),
            Routing::Global => less_loaded(two_choices(key, workers), &loads).0,
        };
        loads[destination] += 1;
        let seen = i as u64 + 1;
        if seen.is_multiple_of(every) {
            let now = imbalance(&loads, seen);
            max_imbalance = max_imbalance.max(now);
            series.push((seen, now));
        }
    }
    let head_choices = match (&routing, scheme) {
        (Routing::Pact(routers), _) => routers[0].key_spread(workers),
        (_, SimScheme::PkgGlobal) => 2.min(workers),
        _ => 1,
    };
    Outcome {
        imbalance_fraction: imbalance(&loads, messages),
        max_imbalance_fraction: max_imbalance,
        loads,
        series,
        head_choices,
    }
}

//! The report: each operator's figures over every worker, how uneven each
//! is (the busiest worker over the mean), what that costs (the busiest
//! worker's excess over the mean), where the skew comes from, and where an
//! equipoise operator would help; with the dataflow's scopes and edges,
//! the figures per window of time, and the keys sampled.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::edges::{self, ChannelReport, Origin, UNEVEN};
use super::figures::{OperatorFigures, WorkerFigures};
use super::heads::HeadReport;
use super::key_shares::{self, KeysReport};
use super::keys::KeysEvent;
use super::spread::Spread;
use super::timeline::{self, OperatorWindow, Window};

/// One operator over every worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OperatorReport {
    /// Its name, as timely logs it.
    pub name: String,
    /// Its address in the dataflow (the dataflow's index first).
    pub address: Vec<usize>,
    /// Records its input channels delivered to each worker.
    pub records: Vec<u64>,
    /// Seconds it was scheduled on each worker.
    pub busy_s: Vec<f64>,
    /// The most records its arrangement held at once on each worker, if
    /// it arranges.
    pub arranged: Option<Vec<i64>>,
    /// The records its arrangement holds on each worker at the report.
    pub arranged_now: Option<Vec<i64>>,
    /// How uneven the records are.
    pub records_spread: Spread,
    /// How uneven the time is.
    pub busy_spread: Spread,
    /// How uneven the most arranged records are, if it arranges.
    pub arranged_spread: Option<Spread>,
    /// The busiest worker's records over the mean (the time's, for an
    /// operator that receives none).
    pub busiest_over_mean: f64,
    /// Where its skew comes from, where its records are uneven.
    #[serde(default)]
    pub origin: Option<Origin>,
    /// An equipoise operator that would even it out, where its input's
    /// exchange makes its records uneven.
    pub hint: Option<String>,
    /// Its figures in each of the report's windows.
    #[serde(default)]
    pub series: Vec<OperatorWindow>,
}

/// Every operator's figures over every worker, the costliest skew first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// The workers reported on.
    pub workers: usize,
    /// The operators (scopes left out), by their busiest worker's excess
    /// time over the mean, then excess records, the largest first.
    pub operators: Vec<OperatorReport>,
    /// Hot keys the skew-proof operators found (their hashes, as
    /// differential's exchange routes them), each with the workers it was
    /// split over or combined on.
    pub hot_keys: Vec<(u64, Vec<usize>)>,
    /// The hot keys' names (their `Debug` forms), by hash, where the
    /// operator that found them gave them (the joins and the two-level
    /// reductions do; `skew_count` and `skew_distinct` find hashes only).
    #[serde(default)]
    pub hot_key_names: Vec<(u64, String)>,
    /// The scopes the operators are in (each dataflow's included), by
    /// address, with their names.
    #[serde(default)]
    pub scopes: Vec<(Vec<usize>, String)>,
    /// Every channel that carried records, with the records between each
    /// pair of workers.
    #[serde(default)]
    pub channels: Vec<ChannelReport>,
    /// The windows of time of every operator's `series`, the oldest first:
    /// of the period the doctor was registered with, the older ones
    /// merged into longer ones.
    #[serde(default)]
    pub windows: Vec<Window>,
    /// The places whose keys were sampled (`SampleKeys`), with their
    /// heaviest keys.
    #[serde(default)]
    pub keys: Vec<KeysReport>,
    /// The heads PKG's D-Choices and W-Choices pacts spread wider, by the
    /// operator they feed.
    #[serde(default)]
    pub heads: Vec<HeadReport>,
}

/// The operators the table shows: the costliest.
const SHOWN: usize = 12;

impl Report {
    /// The report of `workers`' figures (each worker's, in worker order),
    /// the hot keys found and the key samplers' latest events.
    pub(crate) fn new(
        workers: Vec<WorkerFigures>,
        hot_keys: Vec<(u64, Vec<usize>)>,
        samples: Vec<KeysEvent>,
    ) -> Report {
        let peers = workers.len();
        let (windows, mut series) = timeline::align(&workers);
        let channels = edges::channels(&workers);
        let mut scopes: Vec<(Vec<usize>, String)> = workers.iter().flat_map(|w| w.scopes.iter().cloned()).collect();
        scopes.sort();
        scopes.dedup_by(|a, b| a.0 == b.0);
        let mut operators: Vec<OperatorReport> = merge(workers.into_iter().map(|w| w.operators).collect())
            .into_values()
            .map(|mut report| {
                report.series = series.remove(&report.address).unwrap_or_default();
                report.origin = edges::origin(&report.address, &channels, peers);
                spread(report)
            })
            .collect();
        // A hint only where the records matter: a hundredth of the most
        // any operator received, or more.
        let most = operators
            .iter()
            .map(|op| op.records.iter().sum::<u64>())
            .max()
            .unwrap_or(0);
        for op in operators
            .iter_mut()
            .filter(|op| op.records.iter().sum::<u64>().saturating_mul(100) < most)
        {
            op.hint = None;
        }
        operators.sort_by(|a, b| {
            (b.busy_spread.excess, b.records_spread.excess)
                .partial_cmp(&(a.busy_spread.excess, a.records_spread.excess))
                .unwrap_or(std::cmp::Ordering::Equal)
        });
        Report {
            workers: peers,
            operators,
            hot_keys,
            hot_key_names: Vec::new(),
            scopes,
            channels,
            windows,
            keys: key_shares::merge(samples, peers),
            heads: Vec::new(),
        }
    }

    /// The name of the operator or scope at `address` (empty if neither).
    pub(crate) fn name_of(&self, address: &[usize]) -> String {
        let operators = self.operators.iter().map(|op| (op.address.as_slice(), &op.name));
        let scopes = self.scopes.iter().map(|(at, name)| (at.as_slice(), name));
        operators
            .chain(scopes)
            .find(|(at, _)| *at == address)
            .map_or_else(String::new, |(_, name)| name.clone())
    }

    /// The operator named `name` (the first, costliest, of that name).
    pub fn operator(&self, name: &str) -> Option<&OperatorReport> {
        self.operators.iter().find(|op| op.name == name)
    }

    /// The keys sampled at the place named `place` (the first of that
    /// name).
    pub fn keys(&self, place: &str) -> Option<&KeysReport> {
        self.keys.iter().find(|keys| keys.place == place)
    }
}

/// Each operator's figures over the workers, by address, from each
/// worker's (in worker order).
fn merge(workers: Vec<Vec<OperatorFigures>>) -> BTreeMap<Vec<usize>, OperatorReport> {
    let peers = workers.len();
    let mut by_address: BTreeMap<Vec<usize>, OperatorReport> = BTreeMap::new();
    for (worker, figures) in workers.into_iter().enumerate() {
        for figure in figures {
            let report = by_address
                .entry(figure.address.clone())
                .or_insert_with(|| OperatorReport {
                    name: figure.name.clone(),
                    address: figure.address.clone(),
                    records: vec![0; peers],
                    busy_s: vec![0.0; peers],
                    arranged: None,
                    arranged_now: None,
                    records_spread: Spread::of(&[]),
                    busy_spread: Spread::of(&[]),
                    arranged_spread: None,
                    busiest_over_mean: 1.0,
                    origin: None,
                    hint: hint(&figure),
                    series: Vec::new(),
                });
            report.records[worker] = figure.records;
            report.busy_s[worker] = figure.busy_ns as f64 / 1e9;
            if let Some((now, most)) = figure.arranged {
                report.arranged.get_or_insert_with(|| vec![0; peers])[worker] = most;
                report.arranged_now.get_or_insert_with(|| vec![0; peers])[worker] = now;
            }
            report.hint = report.hint.take().or_else(|| hint(&figure));
        }
    }
    by_address
}

/// `report` with its spreads, and its hint kept only where it is uneven.
fn spread(mut report: OperatorReport) -> OperatorReport {
    let records: Vec<f64> = report.records.iter().map(|&r| r as f64).collect();
    report.records_spread = Spread::of(&records);
    report.busy_spread = Spread::of(&report.busy_s);
    report.arranged_spread = report
        .arranged
        .as_ref()
        .map(|held| Spread::of(&held.iter().map(|&r| r.max(0) as f64).collect::<Vec<_>>()));
    report.busiest_over_mean = if records.iter().any(|&r| r > 0.0) {
        report.records_spread.busiest_over_mean
    } else {
        report.busy_spread.busiest_over_mean
    };
    // Only skew made at its own exchange gets a hint: not an even
    // operator, one that inherits its skew, or a gather by design.
    if report.records_spread.busiest_over_mean < UNEVEN || report.origin != Some(Origin::Exchange) {
        report.hint = None;
    }
    report
}

/// Whether an operator of this name is one of equipoise's.
fn equipoise(name: &str) -> bool {
    ["Skew", "Pkg", "Swarm"].iter().any(|prefix| name.starts_with(prefix))
}

/// The equipoise operator that would even out the operator of `figure`,
/// if any does.
fn hint(figure: &OperatorFigures) -> Option<String> {
    let (name, feeds) = (figure.name.as_str(), &figure.feeds);
    if equipoise(name) || figure.fed_by.iter().any(|source| equipoise(source)) {
        // One of equipoise's, or part of one: already the fix.
        return None;
    }
    let named = |what: &str| name.contains(what) || feeds.iter().any(|feed| feed.contains(what));
    let hint = if named("Join") {
        "a skewed join: `skew_join` (equipoise::skew::SkewJoin) splits its hot keys; in a loop, \
         `skew_arrange_by_key` (SkewArrange) splits the collection entering it, to join inside"
    } else if named("Count") {
        "a skewed count: `skew_count` (equipoise::skew::SkewReduce) sums hot keys where they arise"
    } else if named("Distinct") {
        "a skewed distinct: `skew_distinct` (equipoise::skew::SkewReduce) sums hot keys where they arise"
    } else if named("Reduce") {
        "a skewed reduce: `skew_min`/`skew_max` or `skew_reduce_associative` reduce hot keys in two levels; \
         in a loop, `skew_combine` (SkewReduce) sums equal records before it"
    } else if name.contains("Arrange") {
        "a skewed arrangement: the skew-proof operator in place of what reads it"
    } else {
        "records keyed for aggregation: a PKG pact (equipoise::pkg) splits each key over two workers; \
         spatial data: SWARM (equipoise::swarm)"
    };
    Some(hint.to_owned())
}

impl fmt::Display for Report {
    /// A table, the costliest skew first: each operator's busiest worker
    /// and its excess over the mean, in records and in seconds.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "skew over {} workers, costliest first (busiest worker: its excess over the mean)",
            self.workers
        )?;
        writeln!(
            f,
            "| operator | address | records busiest ÷ mean (worker) | excess records | busy busiest ÷ mean (worker) | excess s | arranged busiest ÷ mean |"
        )?;
        writeln!(f, "|---|---|---|---|---|---|---|")?;
        for op in self.operators.iter().take(SHOWN) {
            let arranged = op.arranged_spread.map_or_else(String::new, |spread| {
                format!("{:.2} ({})", spread.busiest_over_mean, spread.busiest)
            });
            writeln!(
                f,
                "| {} | {:?} | {:.2} ({}) | {:.0} | {:.2} ({}) | {:.4} | {} |",
                op.name,
                op.address,
                op.records_spread.busiest_over_mean,
                op.records_spread.busiest,
                op.records_spread.excess,
                op.busy_spread.busiest_over_mean,
                op.busy_spread.busiest,
                op.busy_spread.excess,
                arranged
            )?;
        }
        if self.operators.len() > SHOWN {
            writeln!(
                f,
                "({} more, each costing less, in the JSON form)",
                self.operators.len() - SHOWN
            )?;
        }
        for op in self.operators.iter().filter(|op| op.hint.is_some()) {
            writeln!(
                f,
                "{} {:?}: {}",
                op.name,
                op.address,
                op.hint.as_deref().unwrap_or_default()
            )?;
        }
        if !self.hot_keys.is_empty() {
            let named: Vec<&str> = self
                .hot_key_names
                .iter()
                .take(8)
                .map(|(_, name)| name.as_str())
                .collect();
            write!(f, "hot keys found by equipoise's operators: {}", self.hot_keys.len())?;
            if named.is_empty() {
                writeln!(f)?;
            } else {
                writeln!(f, " (among them {})", named.join(", "))?;
            }
        }
        self.keys_lines(f)
    }
}

impl Report {
    /// The sampled places' and the PKG heads' lines of the table form.
    fn keys_lines(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for place in &self.keys {
            let keys: Vec<String> = place
                .keys
                .iter()
                .take(5)
                .map(|key| format!("{} {:.3} on worker {}", key.key, key.share, key.worker))
                .collect();
            writeln!(
                f,
                "keys at \"{}\" {:?}: {} records, landing {:.2}x the mean on worker {}; heaviest: {}",
                place.place,
                place.address,
                place.records,
                place.landed_spread.busiest_over_mean,
                place.landed_spread.busiest,
                keys.join(", ")
            )?;
        }
        for head in &self.heads {
            let keys: Vec<String> = head
                .keys
                .iter()
                .take(5)
                .map(|key| key.name.clone().unwrap_or_else(|| format!("{:#x}", key.key)))
                .collect();
            writeln!(
                f,
                "PKG head into \"{}\" {:?}: {} keys over up to {} workers: {}",
                head.operator,
                head.target.0,
                head.keys.len(),
                head.choices,
                keys.join(", ")
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures(name: &str, address: &[usize], records: u64, feeds: &[&str]) -> OperatorFigures {
        OperatorFigures {
            address: address.to_vec(),
            name: name.to_owned(),
            records,
            busy_ns: records * 1000,
            arranged: None,
            feeds: feeds.iter().map(|feed| feed.to_string()).collect(),
            fed_by: Vec::new(),
        }
    }

    #[test]
    fn operators_merge_by_address_and_the_costliest_comes_first() {
        // Each worker sends 200 records to the arrangement; worker 1
        // receives 300 of them.
        let worker = |arranged: u64, from: Vec<u64>| WorkerFigures {
            operators: vec![
                figures("ArrangeByKey", &[0, 2], arranged, &["Join"]),
                figures("Map", &[0, 1], 50, &[]),
            ],
            scopes: vec![(vec![0], "Dataflow".into())],
            channels: vec![super::super::figures::ChannelFigures {
                source: (vec![0, 1], 0),
                target: (vec![0, 2], 0),
                from,
            }],
            period_s: 1.0,
            windows: Vec::new(),
        };
        let workers = vec![worker(100, vec![50, 50]), worker(300, vec![150, 150])];
        let report = Report::new(workers, Vec::new(), Vec::new());
        assert_eq!(report.operators[0].origin, Some(Origin::Exchange));
        assert_eq!(report.channels[0].sent, [200, 200]);
        assert_eq!(report.operators[0].name, "ArrangeByKey");
        assert_eq!(report.operators[0].records, vec![100, 300]);
        assert_eq!(report.operators[0].records_spread.busiest, 1);
        assert!((report.operators[0].busiest_over_mean - 1.5).abs() < 1e-9);
        assert!(report.operators[0].hint.as_deref().unwrap().contains("skew_join"));
        // Even: no hint.
        assert_eq!(report.operators[1].hint, None);
    }
}

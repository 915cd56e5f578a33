//! The report: each operator's figures over every worker, how uneven each
//! is (the busiest worker over the mean), what that costs (the busiest
//! worker's excess over the mean), and where an equipoise operator would
//! help.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::figures::OperatorFigures;

/// How uneven one figure is over the workers.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    /// The worker with the most.
    pub busiest: usize,
    /// The busiest worker's over the mean (1 where the mean is 0).
    pub busiest_over_mean: f64,
    /// The busiest worker's excess over the mean, in the figure's unit:
    /// what the unevenness costs, as the other workers wait for it.
    pub excess: f64,
}

impl Spread {
    /// The spread of `values`, one per worker.
    pub fn of(values: &[f64]) -> Spread {
        let (busiest, most) =
            values.iter().copied().enumerate().fold(
                (0, f64::MIN),
                |best, (worker, value)| if value > best.1 { (worker, value) } else { best },
            );
        let mean = values.iter().sum::<f64>() / values.len().max(1) as f64;
        if values.is_empty() || mean <= 0.0 {
            return Spread {
                busiest,
                busiest_over_mean: 1.0,
                excess: 0.0,
            };
        }
        Spread {
            busiest,
            busiest_over_mean: most / mean,
            excess: most - mean,
        }
    }
}

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
    /// An equipoise operator that would even it out, where its records
    /// are uneven.
    pub hint: Option<String>,
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
}

/// The operators the table shows: the costliest.
const SHOWN: usize = 12;

/// Above this busiest over mean, an operator is uneven enough for a hint.
const UNEVEN: f64 = 1.2;

impl Report {
    /// The report of `workers`' figures (each worker's, in worker order)
    /// and the hot keys found.
    pub(crate) fn new(workers: Vec<Vec<OperatorFigures>>, hot_keys: Vec<(u64, Vec<usize>)>) -> Report {
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
                        hint: hint(&figure),
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
        let mut operators: Vec<OperatorReport> = by_address.into_values().map(spread).collect();
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
        }
    }

    /// The operator named `name` (the first, costliest, of that name).
    pub fn operator(&self, name: &str) -> Option<&OperatorReport> {
        self.operators.iter().find(|op| op.name == name)
    }
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
    // Even, or every record on one worker: a gather by design (a
    // coordinator, a final merge), which no repartitioning evens out.
    let receivers = report.records.iter().filter(|&&r| r > 0).count();
    if report.records_spread.busiest_over_mean < UNEVEN || receivers == 1 {
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
    } else if figure.exchanged {
        "records keyed for aggregation: a PKG pact (equipoise::pkg) splits each key over two workers; \
         spatial data: SWARM (equipoise::swarm)"
    } else {
        // Uneven where its input was produced: the skew is upstream.
        return None;
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
            writeln!(f, "hot keys found by equipoise's operators: {}", self.hot_keys.len())?;
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
            exchanged: true,
            feeds: feeds.iter().map(|feed| feed.to_string()).collect(),
            fed_by: Vec::new(),
        }
    }

    #[test]
    fn the_busiest_worker_and_its_excess() {
        let spread = Spread::of(&[1.0, 5.0, 2.0, 0.0]);
        assert_eq!(spread.busiest, 1);
        assert!((spread.busiest_over_mean - 2.5).abs() < 1e-9);
        assert!((spread.excess - 3.0).abs() < 1e-9);
        assert_eq!(Spread::of(&[0.0, 0.0]).busiest_over_mean, 1.0);
    }

    #[test]
    fn operators_merge_by_address_and_the_costliest_comes_first() {
        let workers = vec![
            vec![
                figures("ArrangeByKey", &[0, 2], 100, &["Join"]),
                figures("Map", &[0, 1], 50, &[]),
            ],
            vec![
                figures("ArrangeByKey", &[0, 2], 300, &["Join"]),
                figures("Map", &[0, 1], 50, &[]),
            ],
        ];
        let report = Report::new(workers, Vec::new());
        assert_eq!(report.operators[0].name, "ArrangeByKey");
        assert_eq!(report.operators[0].records, vec![100, 300]);
        assert_eq!(report.operators[0].records_spread.busiest, 1);
        assert!((report.operators[0].busiest_over_mean - 1.5).abs() < 1e-9);
        assert!(report.operators[0].hint.as_deref().unwrap().contains("skew_join"));
        // Even: no hint.
        assert_eq!(report.operators[1].hint, None);
    }
}

//! The skewed word count, end to end: the job behind `examples/wordcount.rs`,
//! the tour and the benchmarks.
//!
//! Keys flow from an input (synthetic or a file) through a grouping pact into
//! the partial-count stage, where each record costs `work` of real CPU time,
//! then through the keyed merge into running counts and a streaming top-k.
//! Every worker's figures are gathered at worker 0 into a [`WordcountReport`].

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::Exchange;
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::vec::{Input, Map};
use timely::dataflow::operators::{Capability, Inspect, Probe};
use timely::dataflow::{InputHandle, ProbeHandle, StreamVec};

use crate::common::cluster::ClusterArgs;
use crate::common::driver::{drive_epochs, run_diagnosed};
use crate::common::keys::{key_name, KeySampler};
use crate::common::latency::LatencySummary;
use crate::common::lines::KeyLines;
use crate::common::log_file::LogFile;
use crate::common::Error;
use equipoise::common::busy_work::BusyWork;
use equipoise::common::hash::{fnv1a64, key_hash, splitmix64};

use equipoise::pkg::events::PkgEvent;
use equipoise::pkg::Grouped;
use equipoise::pkg::Scheme;
use equipoise::pkg::TopK;
use equipoise::pkg::LOG_NAME;
use equipoise::pkg::{Aggregate, MergePartials};

/// Where the keys come from. Record `i` is the same whatever the number of
/// workers; worker `w` of `W` feeds the records with `i % W == w`.
#[derive(Debug, Clone)]
pub enum KeySource {
    /// `records` keys drawn from a seeded sampler.
    Synthetic {
        /// The key distribution and seed.
        sampler: Arc<KeySampler>,
        /// How many records.
        records: u64,
    },
    /// The keys of a file, in file order.
    Lines(Arc<KeyLines>),
}

impl KeySource {
    /// Number of records.
    pub fn len(&self) -> u64 {
        match self {
            KeySource::Synthetic { records, .. } => *records,
            KeySource::Lines(lines) => lines.keys.len() as u64,
        }
    }

    /// Whether there are no records.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The key of record `index`.
    pub fn key(&self, index: u64) -> String {
        match self {
            KeySource::Synthetic { sampler, .. } => key_name(sampler.rank(index)),
            KeySource::Lines(lines) => lines.keys[index as usize].clone(),
        }
    }
}

/// Settings of one word-count run.
#[derive(Debug, Clone)]
pub struct WordcountConfig {
    /// The routing scheme of the partial-count stage.
    pub grouping: Scheme,
    /// PKG's slack when `grouping` is PKG, or D-/W-Choices for their tail
    /// (see [`Pkg`](equipoise::pkg::Pkg)); 0 otherwise.
    pub slack: u64,
    /// The keys.
    pub source: KeySource,
    /// Records per epoch (over all workers).
    pub batch: u64,
    /// Busy work per record in the partial-count stage: computation worth
    /// this long on an idle core.
    pub work: Duration,
    /// Length of the top-k list.
    pub top: usize,
    /// Epochs a worker may have open before it waits for the oldest.
    pub max_in_flight: u64,
    /// Print a progress line to stderr about once a second.
    pub progress: bool,
    /// Where the pact's decisions (timely log events, `equipoise/pkg`)
    /// go, one JSON object a line; `None`: nowhere.
    pub log: Option<LogFile>,
    /// Where to write the skew report of the dataflow, if anywhere.
    pub doctor: crate::common::doctor_args::DoctorArgs,
    /// Count on timely's own operators instead (`--timely-exchange`): every
    /// record exchanged to its key's worker (`Exchange`) and counted there
    /// in one stage, with no grouping pact and no merge.
    pub timely_exchange: bool,
}

impl WordcountConfig {
    /// `grouping` over `source` with the word-count example's defaults:
    /// 10 000 records per epoch, no busy work, the top 10, 2 epochs in
    /// flight, no progress lines.
    pub fn new(grouping: Scheme, source: KeySource) -> Self {
        WordcountConfig {
            grouping,
            slack: 0,
            source,
            batch: 10_000,
            work: Duration::ZERO,
            top: 10,
            max_in_flight: 2,
            progress: false,
            log: None,
            doctor: Default::default(),
            timely_exchange: false,
        }
    }
}

/// The report of a run: the contract of `wordcount --report`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct WordcountReport {
    /// Routing scheme.
    pub grouping: Scheme,
    /// Counted on timely's own operators (`--timely-exchange`): exchanged
    /// by key and counted in one stage (`grouping` is then `key`).
    #[serde(default)]
    pub timely_exchange: bool,
    /// PKG's slack (0: the paper's PKG, and every other scheme).
    #[serde(default)]
    pub slack: u64,
    /// Workers in all processes.
    pub workers: usize,
    /// Processes.
    pub processes: usize,
    /// Records counted.
    pub records: u64,
    /// Keys with a final count.
    pub distinct_keys: u64,
    /// Records each worker's partial-count stage received, by worker index.
    pub per_worker_records: Vec<u64>,
    /// Wall-clock seconds each worker spent folding records (including
    /// `--work-us`; time preempted counts, so on an oversubscribed machine it
    /// exceeds the CPU time).
    pub per_worker_busy_s: Vec<f64>,
    /// max − mean of `per_worker_records`.
    pub imbalance: f64,
    /// `imbalance` ÷ `records`.
    pub imbalance_fraction: f64,
    /// max ÷ mean of `per_worker_records` (1 is perfect balance).
    pub max_over_mean: f64,
    /// Most workers any key reached.
    pub max_key_replication: usize,
    /// Distinct (key, worker) pairs over the run: the per-key partial states a
    /// running aggregation would keep (memory).
    pub partial_states: u64,
    /// Wall-clock seconds from the first record to the last result.
    pub elapsed_s: f64,
    /// `records` ÷ `elapsed_s`.
    pub records_per_s: f64,
    /// Epoch completion latency (from an epoch's first record to its last
    /// result), over the epochs of every worker.
    pub latency_ms: LatencySummary,
    /// The final top-k, largest count first.
    pub top: Vec<(String, u64)>,
    /// Wrapping sum over final (key, count) pairs of
    /// splitmix64(fnv1a64(key) XOR splitmix64(count)): the same for every
    /// grouping, worker count and process count.
    pub counts_digest: u64,
    /// Empty input lines skipped.
    pub empty_lines: usize,
    /// Malformed input lines skipped under `--on-error skip`.
    pub skipped_lines: usize,
}

/// One term of [`WordcountReport::counts_digest`].
pub fn count_digest(key: &str, count: u64) -> u64 {
    splitmix64(fnv1a64(key.as_bytes()) ^ splitmix64(count))
}

/// What each worker contributes to the report.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct WorkerFigures {
    received: u64,
    busy_ns: u64,
    partial_keys: Vec<u64>,
    final_keys: u64,
    digest: u64,
    latencies_us: Vec<u64>,
    top: Vec<(String, u64)>,
    elapsed_s: f64,
}

/// Runs the word count on the cluster `cluster` describes. Returns the report
/// in the process that hosts worker 0, `None` in the others.
pub fn run_wordcount(config: WordcountConfig, cluster: &ClusterArgs) -> Result<Option<WordcountReport>, Error> {
    if config.batch == 0 {
        return Err(Error::invalid("--batch", "must be at least 1"));
    }
    if config.slack > 0 && !config.grouping.takes_slack() {
        return Err(Error::invalid(
            "--slack",
            "applies to --grouping pkg, dchoices or wchoices only",
        ));
    }
    let (processes, doctor) = (cluster.processes, config.doctor.clone());
    let shared = config.clone();
    let Some((report, diagnosed)) = run_diagnosed(
        cluster,
        doctor.settings()?,
        move |worker| run_worker(worker, &shared),
        move |figures| assemble(&config, processes, figures),
    )?
    else {
        return Ok(None);
    };
    doctor.write(diagnosed.as_ref())?;
    Ok(Some(report))
}

fn run_worker(worker: &mut timely::worker::Worker, config: &WordcountConfig) -> WorkerFigures {
    // Before the dataflow is built: the pact looks its logger up then.
    if let Some(log) = &config.log {
        log.register::<PkgEvent>(worker, LOG_NAME);
    }
    let (index, peers) = (worker.index(), worker.peers());
    let received = Rc::new(Cell::new(0u64));
    let busy_ns = Rc::new(Cell::new(0u64));
    let partial_keys = Rc::new(RefCell::new(HashSet::new()));
    let finals = Rc::new(RefCell::new(HashMap::<String, u64>::new()));
    let top = Rc::new(RefCell::new(Vec::new()));
    let mut input = InputHandle::new();
    let probe = ProbeHandle::new();
    let work = BusyWork::new(config.work);
    worker.dataflow::<u64, _, _>(|scope| {
        let (received, busy_ns) = (Rc::clone(&received), Rc::clone(&busy_ns));
        let partial_keys = Rc::clone(&partial_keys);
        let count = move |count: &mut u64, ()| {
            let start = Instant::now();
            work.run();
            *count += 1;
            received.set(received.get() + 1);
            busy_ns.set(busy_ns.get() + start.elapsed().as_nanos() as u64);
        };
        let keys = scope.input_from(&mut input).map(|key| (key, ()));
        let partials = match config.timely_exchange {
            true => exchange_and_count(keys, count),
            false => {
                let grouping = config.grouping.with_slack(config.slack);
                // Head keys named in the log (and the report) by their word.
                let pact = Grouped::with_grouping(grouping, |(key, ()): &(String, ())| key_hash(key))
                    .with_key_names(|(key, ()): &(String, ())| key.clone());
                keys.pkg_partials(pact, count)
            }
        }
        .inspect(move |(key, _)| {
            partial_keys.borrow_mut().insert(key_hash(key));
        });
        let counts = match config.timely_exchange {
            true => partials,
            false => partials.pkg_merge_running(|count, other| *count += other),
        };
        let finals = Rc::clone(&finals);
        let top_sink = Rc::clone(&top);
        counts
            .clone()
            .inspect(move |(key, count)| {
                finals.borrow_mut().insert(key.clone(), *count);
            })
            .probe_with(&probe);
        counts
            .top_k(config.top)
            .inspect(move |list| *top_sink.borrow_mut() = list.clone())
            .probe_with(&probe);
    });

    let records = config.source.len();
    let progress = config.progress.then_some("wordcount");
    let times = drive_epochs(
        worker,
        input,
        &probe,
        records.div_ceil(config.batch),
        config.max_in_flight,
        progress,
        |epoch, input| {
            let (first, end) = (epoch * config.batch, records.min((epoch + 1) * config.batch));
            // The first record of this epoch that is this worker's share.
            let mut next = first + (index as u64 + peers as u64 - first % peers as u64) % peers as u64;
            while next < end {
                input.send(config.source.key(next));
                next += peers as u64;
            }
        },
    );

    let finals = finals.take();
    WorkerFigures {
        received: received.get(),
        busy_ns: busy_ns.get(),
        partial_keys: partial_keys.take().into_iter().collect(),
        final_keys: finals.len() as u64,
        digest: finals
            .iter()
            .fold(0u64, |sum, (key, &count)| sum.wrapping_add(count_digest(key, count))),
        latencies_us: times.latencies_us,
        top: top.take(),
        elapsed_s: times.elapsed_s,
    }
}

/// The baseline on timely's own operators: each record exchanged to its
/// key's worker and folded by `count` there; at each epoch's end, every key
/// seen in it with its count so far (what `pkg_merge_running` emits).
fn exchange_and_count<'scope>(
    keys: StreamVec<'scope, u64, (String, ())>,
    mut count: impl FnMut(&mut u64, ()) + 'static,
) -> StreamVec<'scope, u64, (String, u64)> {
    keys.unary_frontier::<CapacityContainerBuilder<Vec<(String, u64)>>, _, _, _>(
        Exchange::new(|(key, ()): &(String, ())| key_hash(key)),
        "CountByKey",
        move |_, _| {
            let mut totals: HashMap<String, u64> = HashMap::new();
            let mut seen: BTreeMap<u64, (Capability<u64>, HashSet<String>)> = BTreeMap::new();
            move |(input, frontier), output| {
                input.for_each_stamp(|cap, batches| {
                    let Some(&time) = cap.least() else { return };
                    let (_, seen) = seen.entry(time).or_insert_with(|| {
                        let cap = cap.retain_least(0).expect("a time was delivered");
                        (cap, HashSet::new())
                    });
                    for (key, ()) in batches.flat_map(|batch| batch.drain(..)) {
                        match totals.get_mut(&key) {
                            Some(total) => count(total, ()),
                            None => count(totals.entry(key.clone()).or_default(), ()),
                        }
                        seen.insert(key);
                    }
                });
                while let Some(entry) = seen.first_entry() {
                    if frontier.less_equal(entry.key()) {
                        break;
                    }
                    let (cap, keys) = entry.remove();
                    let counts = keys.into_iter().map(|key| {
                        let total = totals[&key];
                        (key, total)
                    });
                    output.session(&cap).give_iterator(counts);
                }
            }
        },
    )
}

fn assemble(config: &WordcountConfig, processes: usize, figures: Vec<WorkerFigures>) -> WordcountReport {
    let workers = figures.len();
    let records = config.source.len();
    let per_worker_records: Vec<u64> = figures.iter().map(|f| f.received).collect();
    let max = per_worker_records.iter().copied().max().unwrap_or(0) as f64;
    let mean = records as f64 / workers as f64;
    let mut replication: HashMap<u64, usize> = HashMap::new();
    for f in &figures {
        for &key in &f.partial_keys {
            *replication.entry(key).or_default() += 1;
        }
    }
    let latencies: Vec<u64> = figures.iter().flat_map(|f| f.latencies_us.iter().copied()).collect();
    let elapsed_s = figures.iter().map(|f| f.elapsed_s).fold(0.0, f64::max);
    let (empty_lines, skipped_lines) = match &config.source {
        KeySource::Lines(lines) => (lines.empty_lines, lines.skipped_lines),
        KeySource::Synthetic { .. } => (0, 0),
    };
    WordcountReport {
        grouping: if config.timely_exchange {
            Scheme::Key
        } else {
            config.grouping
        },
        timely_exchange: config.timely_exchange,
        slack: config.slack,
        workers,
        processes,
        records,
        distinct_keys: figures.iter().map(|f| f.final_keys).sum(),
        per_worker_busy_s: figures.iter().map(|f| f.busy_ns as f64 / 1e9).collect(),
        imbalance: max - mean,
        imbalance_fraction: if records == 0 {
            0.0
        } else {
            (max - mean) / records as f64
        },
        max_over_mean: if records == 0 { 1.0 } else { max / mean },
        per_worker_records,
        max_key_replication: replication.values().copied().max().unwrap_or(0),
        partial_states: replication.values().map(|&n| n as u64).sum(),
        elapsed_s,
        records_per_s: if elapsed_s > 0.0 {
            records as f64 / elapsed_s
        } else {
            0.0
        },
        latency_ms: LatencySummary::from_micros(&latencies),
        top: figures[0].top.clone(),
        counts_digest: figures.iter().fold(0u64, |sum, f| sum.wrapping_add(f.digest)),
        empty_lines,
        skipped_lines,
    }
}

/// A Markdown table comparing runs side by side, one row per report.
pub fn comparison_table(reports: &[WordcountReport]) -> String {
    let mut table = String::from(
        "| grouping | workers | records/s | p50 ms | p99 ms | per-worker records | max/mean | busy s per worker | partial states | max replication |\n\
         |---|---|---|---|---|---|---|---|---|---|\n",
    );
    for report in reports {
        let busy: Vec<String> = report.per_worker_busy_s.iter().map(|s| format!("{s:.2}")).collect();
        let grouping = match report.slack {
            0 => report.grouping.to_string(),
            slack => format!("{} (slack {slack})", report.grouping),
        };
        table.push_str(&format!(
            "| {} | {} | {:.0} | {:.1} | {:.1} | {:?} | {:.3} | {} | {} | {} |\n",
            grouping,
            report.workers,
            report.records_per_s,
            report.latency_ms.p50,
            report.latency_ms.p99,
            report.per_worker_records,
            report.max_over_mean,
            busy.join(" "),
            report.partial_states,
            report.max_key_replication,
        ));
    }
    table
}

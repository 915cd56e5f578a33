//! The spatial job behind `examples/spatial.rs`, the tour and the
//! benchmarks: continuous range queries over a point stream, balanced by
//! SWARM (or not), with every worker's figures gathered into a
//! [`SpatialReport`] at worker 0.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use serde::{Deserialize, Serialize};
use timely::container::CapacityContainerBuilder;
use timely::dataflow::operators::vec::Input;
use timely::dataflow::operators::Inspect;
use timely::dataflow::{InputHandle, ProbeHandle, StreamVec};
use timely::ExchangeData;

use crate::common::cluster::ClusterArgs;
use crate::common::driver::{drive_epochs, run_gathered, EpochTimes};
use crate::common::latency::LatencySummary;
use crate::common::log_file::LogFile;
use crate::common::median::Quantiles;
use crate::common::memory::check_fits;
use crate::common::Error;
use equipoise::common::busy_work::BusyWork;
use equipoise::swarm::events::SwarmEvent;
use equipoise::swarm::LOG_NAME;

use super::forced::forced_changes;
use super::input::SpatialInput;
use super::shape::{shape, WorkloadShape};
use equipoise::swarm::cost::CostModel;
use equipoise::swarm::figures::Orders;
use equipoise::swarm::figures::Refused;
use equipoise::swarm::figures::{ExecutorFigures, RECENT_EPOCHS};
use equipoise::swarm::Grid;
use equipoise::swarm::Policy;
use equipoise::swarm::{InitialPlan, Swarm, SwarmConfig, SwarmHandles};
use equipoise::swarm::{Item, Record};
use equipoise::swarm::{Match, PartitionState, Point, Query};

/// How the coordinator decides, for `--decision`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum DecisionSpec {
    /// `paper`: the five-stage mechanism with β = 20.
    Paper,
    /// `threshold:<tau>`: rebalance when max/mean cost exceeds τ.
    Threshold(f64),
}

impl FromStr for DecisionSpec {
    type Err = Error;
    fn from_str(text: &str) -> Result<Self, Error> {
        match text.split_once(':') {
            None if text == "paper" => Ok(DecisionSpec::Paper),
            Some(("threshold", tau)) => match tau.parse::<f64>() {
                Ok(tau) if tau.is_finite() && tau >= 1.0 => Ok(DecisionSpec::Threshold(tau)),
                _ => Err(Error::invalid(
                    "--decision",
                    format!("threshold `{tau}` is not a number ≥ 1"),
                )),
            },
            _ => Err(Error::invalid(
                "--decision",
                format!("`{text}`: expected paper or threshold:<tau>"),
            )),
        }
    }
}

impl fmt::Display for DecisionSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecisionSpec::Paper => f.write_str("paper"),
            DecisionSpec::Threshold(tau) => write!(f, "threshold:{tau}"),
        }
    }
}

/// How the plan evolves, for `--policy`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum PolicySpec {
    /// `static`: one partition per worker, never changed.
    Static,
    /// `static:<k>`: k cell-aligned blocks per worker spread over the space,
    /// never changed.
    StaticBlocks(usize),
    /// `swarm`: SWARM's load balancing, deciding by the given rule, from
    /// its default start (as fine as the grid allows).
    Swarm(DecisionSpec),
    /// `swarm:<k>`: SWARM starting from the plan of `static:<k>` (k blocks
    /// per worker) instead of its default start.
    SwarmFrom(DecisionSpec, usize),
    /// `forced:<seed>`: a random move, split, merge, share or unshare every
    /// round, to test migrations.
    Forced(u64),
}

impl PolicySpec {
    fn build(&self) -> Policy {
        match *self {
            // A forced schedule's plan comes on a control stream instead
            // (`SpatialJob::swarm`).
            PolicySpec::Static | PolicySpec::StaticBlocks(_) | PolicySpec::Forced(_) => Policy::Static,
            PolicySpec::Swarm(DecisionSpec::Paper) | PolicySpec::SwarmFrom(DecisionSpec::Paper, _) => Policy::paper(),
            PolicySpec::Swarm(DecisionSpec::Threshold(tau))
            | PolicySpec::SwarmFrom(DecisionSpec::Threshold(tau), _) => Policy::threshold(tau),
        }
    }

    fn initial(&self) -> InitialPlan {
        match *self {
            PolicySpec::StaticBlocks(k) | PolicySpec::SwarmFrom(_, k) => InitialPlan::Blocks(k),
            PolicySpec::Swarm(_) => InitialPlan::Fine,
            PolicySpec::Static | PolicySpec::Forced(_) => InitialPlan::OnePerWorker,
        }
    }
}

impl FromStr for PolicySpec {
    type Err = Error;
    /// `static`, `static:<k>` or `forced:<seed>`; `swarm` and `swarm:<k>`
    /// need their decision rule, so they are built by the caller.
    fn from_str(text: &str) -> Result<Self, Error> {
        match text.split_once(':') {
            None if text == "static" => Ok(PolicySpec::Static),
            Some(("static", k)) => match k.parse::<usize>() {
                Ok(k) if k >= 1 => Ok(PolicySpec::StaticBlocks(k)),
                _ => Err(Error::invalid(
                    "--policy",
                    format!("static:`{k}`: partitions per worker must be an integer ≥ 1"),
                )),
            },
            Some(("forced", seed)) => seed
                .parse()
                .map(PolicySpec::Forced)
                .map_err(|_| Error::invalid("--policy", format!("forced seed `{seed}` is not an integer"))),
            _ => Err(Error::invalid(
                "--policy",
                format!("`{text}`: expected swarm, swarm:<k>, static, static:<k> or forced:<seed>"),
            )),
        }
    }
}

impl fmt::Display for PolicySpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PolicySpec::Static => f.write_str("static"),
            PolicySpec::StaticBlocks(k) => write!(f, "static:{k}"),
            PolicySpec::Swarm(_) => f.write_str("swarm"),
            PolicySpec::SwarmFrom(_, k) => write!(f, "swarm:{k}"),
            PolicySpec::Forced(seed) => write!(f, "forced:{seed}"),
        }
    }
}

/// Settings of one spatial run.
#[derive(Debug, Clone)]
pub struct SpatialJob<P = (), Q = ()> {
    /// The space and its cells.
    pub grid: Grid,
    /// The validated records.
    pub input: Arc<SpatialInput<P, Q>>,
    /// Lines per epoch.
    pub batch: u64,
    /// Epochs per load-balancing round (`None`: SWARM's default for the
    /// number of workers, see `SwarmConfig::round_for`).
    pub round: Option<u64>,
    /// Rounds ahead that plan updates are concluded (see
    /// `SwarmConfig::plan_depth`).
    pub plan_depth: u64,
    /// Merge adjacent partitions every this many rounds.
    pub merge_every: u64,
    /// SWARM's split gain (see `SwarmConfig::split_gain`).
    pub split_gain: Option<f64>,
    /// Whether SWARM plans epoch 0 from its own records (see `SwarmConfig::opening`).
    pub opening: bool,
    /// Busy work per point–query check (calibrated on an idle core).
    pub work_per_check: Duration,
    /// The plan's policy.
    pub policy: PolicySpec,
    /// Epochs a worker may have open before it waits for the oldest.
    pub max_in_flight: u64,
    /// Print a progress line to stderr about once a second.
    pub progress: bool,
    /// Where the coordinator's decisions are logged (`--log`).
    pub log: Option<LogFile>,
}

/// Counts of migrations.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Migrations {
    /// Whole-partition moves ordered.
    pub moves: u64,
    /// Splits ordered.
    pub splits: u64,
    /// Merges ordered.
    pub merges: u64,
    /// Holders added to shared partitions.
    pub shares: u64,
    /// Holders that left shared partitions.
    pub unshares: u64,
    /// Partitions sent between workers.
    pub partitions_moved: u64,
    /// Bytes of state sent between workers.
    pub bytes_moved: u64,
}

/// The report of a spatial run: the contract of `spatial --report`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpatialReport {
    /// `static`, `swarm` or `forced:<seed>`.
    pub policy: String,
    /// The decision rule (for `swarm`).
    pub decision: String,
    /// Workers in all processes.
    pub workers: usize,
    /// Processes.
    pub processes: usize,
    /// Lines per epoch.
    #[serde(default)]
    pub batch: u64,
    /// Rounds ahead that plan updates were concluded.
    #[serde(default)]
    pub plan_depth: u64,
    /// Epochs a worker could have open.
    #[serde(default)]
    pub max_in_flight: u64,
    /// Points read.
    pub points: u64,
    /// Queries registered.
    pub queries: u64,
    /// Queries removed.
    pub removals: u64,
    /// (query, point) matches.
    pub matches: u64,
    /// Wrapping sum over matches of splitmix64(query id XOR splitmix64(point id)).
    pub matches_digest: u64,
    /// Point–query checks per worker.
    pub per_worker_work: Vec<u64>,
    /// Wall-clock seconds each worker spent evaluating points.
    pub per_worker_busy_s: Vec<f64>,
    /// max ÷ mean of `per_worker_work`.
    pub max_over_mean_work: f64,
    /// The speed-up the run's balance allows at most: all workers' checks ÷
    /// the busiest worker's (`workers ÷ max_over_mean_work`).
    #[serde(default)]
    pub speedup_bound: f64,
    /// The same with every epoch a barrier: the epochs' checks summed ÷ the
    /// epochs' busiest worker's checks summed.
    #[serde(default)]
    pub speedup_bound_epochs: f64,
    /// Per epoch, the busiest worker's checks over the mean worker's (epochs
    /// with no check left out): its median, 99th percentile and maximum.
    #[serde(default)]
    pub per_epoch_max_over_mean: Quantiles,
    /// The same over the epochs from the tenth round on, once the plan has
    /// had time to settle from its start.
    #[serde(default)]
    pub per_epoch_max_over_mean_steady: Quantiles,
    /// The same over the epochs before any round's update can hold (the
    /// first round · (plan depth + 1)): the plan the run started from,
    /// opened from epoch 0's records or not.
    #[serde(default)]
    pub per_epoch_max_over_mean_start: Quantiles,
    /// Load-balancing rounds concluded.
    pub rounds: u64,
    /// Rounds whose update moved or split partitions.
    pub rebalanced_rounds: u64,
    /// What migrated.
    pub migrations: Migrations,
    /// Partitions held at the end (a shared partition once per holder).
    pub partitions_final: u64,
    /// Epoch completion latency over every worker's epochs.
    pub latency_ms: LatencySummary,
    /// The same, over the epochs within one of a plan change taking effect.
    pub latency_around_changes_ms: LatencySummary,
    /// The same, over the other epochs.
    pub latency_steady_ms: LatencySummary,
    /// Registrations refused because their id was already active.
    pub duplicate_queries: u64,
    /// Removals refused because their id was not active.
    pub unknown_removals: u64,
    /// Wall-clock seconds from the first record to the last result.
    pub elapsed_s: f64,
    /// Points per second.
    pub points_per_s: f64,
    /// Malformed lines skipped under `--on-error skip`.
    pub skipped_lines: usize,
    /// The input's shape over the grid, in epochs of `batch` lines: how
    /// much of an epoch its busiest cell holds, and how that cell moves.
    #[serde(default)]
    pub workload_shape: Option<WorkloadShape>,
}

/// What one worker measured, gathered at worker 0 into the report.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct WorkerFigures {
    /// The executor's figures.
    pub executor: ExecutorFigures,
    /// What the dispatcher refused.
    pub refused: Refused,
    /// Matches seen on the output stream.
    pub matches: u64,
    /// Wrapping sum of their digests.
    pub digest: u64,
    /// What the coordinator ordered (on worker 0).
    pub orders: Orders,
    /// Completion latency of each epoch, µs.
    pub latencies_us: Vec<u64>,
    /// Checks made in each epoch this worker processed: (epoch, checks).
    pub epoch_checks: Vec<(u64, u64)>,
    /// Seconds from the first record to the last result.
    pub elapsed_s: f64,
}

impl WorkerFigures {
    /// The figures of a worker whose SWARM had `handles`, whose output
    /// stream held `matches` with digests summing to `digest`, and whose
    /// epochs went as `times` says.
    pub fn of(handles: &SwarmHandles, (matches, digest): (u64, u64), times: Fed) -> Self {
        WorkerFigures {
            executor: handles.figures(),
            epoch_checks: times.epoch_checks,
            refused: handles.refused(),
            matches,
            digest,
            orders: handles.orders(),
            latencies_us: times.epochs.latencies_us,
            elapsed_s: times.epochs.elapsed_s,
        }
    }
}

/// How feeding one worker went: its epochs' latencies, and the checks it
/// made in each.
#[derive(Debug, Clone, Default)]
pub struct Fed {
    /// Each epoch's completion latency.
    pub epochs: EpochTimes,
    /// (epoch, checks) of every epoch this worker's executor processed.
    pub epoch_checks: Vec<(u64, u64)>,
}

impl<P, Q> SpatialJob<P, Q> {
    /// Sends the coordinator's decisions on `worker` to the job's log, if
    /// any: before the dataflow is built.
    pub fn log_to(&self, worker: &mut timely::worker::Worker) {
        if let Some(log) = &self.log {
            log.register::<SwarmEvent>(worker, LOG_NAME);
        }
    }
}

impl SpatialJob {
    /// The same settings over another input.
    pub fn with_input<P, Q>(&self, input: SpatialInput<P, Q>) -> SpatialJob<P, Q> {
        SpatialJob {
            grid: self.grid.clone(),
            input: Arc::new(input),
            batch: self.batch,
            round: self.round,
            plan_depth: self.plan_depth,
            merge_every: self.merge_every,
            split_gain: self.split_gain,
            opening: self.opening,
            work_per_check: self.work_per_check,
            policy: self.policy,
            max_in_flight: self.max_in_flight,
            progress: self.progress,
            log: self.log.clone(),
        }
    }
}

impl<P: Clone + 'static, Q: Clone + 'static> SpatialJob<P, Q> {
    /// `input` on `grid` with the spatial example's defaults: 1 000 lines
    /// per epoch, SWARM's default rounds, a plan depth of 1, merges every 10
    /// rounds, a split gain of 0.2, the opening, no busy work, SWARM deciding by
    /// threshold 1.2, 4 epochs in flight, no progress lines.
    pub fn new(grid: Grid, input: Arc<SpatialInput<P, Q>>) -> Self {
        SpatialJob {
            grid,
            input,
            batch: 1000,
            round: None,
            plan_depth: 1,
            merge_every: 10,
            split_gain: Some(0.2),
            opening: true,
            work_per_check: Duration::ZERO,
            policy: PolicySpec::Swarm(DecisionSpec::Threshold(1.2)),
            max_in_flight: 4,
            progress: false,
            log: None,
        }
    }

    /// Checks the settings for the cluster `cluster` describes, and refuses
    /// a grid whose index cannot fit in a process's memory.
    pub fn check(&self, cluster: &ClusterArgs) -> Result<(), Error> {
        if self.batch == 0 {
            return Err(Error::invalid("--batch", "must be at least 1"));
        }
        // Per-epoch figures are drained once an epoch from a window of
        // RECENT_EPOCHS: far more epochs in flight would overflow it.
        let most = RECENT_EPOCHS as u64 / 2;
        if self.max_in_flight > most {
            return Err(Error::invalid(
                "--max-in-flight",
                format!("{}: must be at most {most}", self.max_in_flight),
            ));
        }
        if let PolicySpec::StaticBlocks(k) = self.policy {
            equipoise::swarm::plan::GlobalIndex::blocks(self.grid.clone(), cluster.total_workers(), k)
                .map_err(|e| Error::invalid("--policy", e.to_string()))?;
        }
        self.config().validate()?;
        self.check_memory(cluster.workers)
    }

    /// Refuses a grid whose index cannot fit in memory at `workers` per
    /// process, with the estimate and what is available.
    fn check_memory(&self, workers: usize) -> Result<(), Error> {
        let per_cell = match self.policy {
            PolicySpec::Static | PolicySpec::StaticBlocks(_) => STATIC_BYTES_PER_CELL,
            PolicySpec::Swarm(_) | PolicySpec::SwarmFrom(..) | PolicySpec::Forced(_) => CHANGING_BYTES_PER_CELL,
        };
        let cells = self.grid.cell_count() as u64;
        check_fits(
            "--grid",
            &format!(
                "{}x{} with {workers} workers per process",
                self.grid.columns(),
                self.grid.rows()
            ),
            cells.saturating_mul(per_cell).saturating_mul(workers as u64),
        )
    }

    /// The SWARM configuration these settings ask for.
    pub fn config(&self) -> SwarmConfig {
        SwarmConfig {
            initial: self.policy.initial(),
            round: self.round,
            plan_depth: self.plan_depth,
            merge_every: self.merge_every,
            split_gain: self.split_gain,
            opening: self.opening,
            work_per_check: BusyWork::new(self.work_per_check),
            ..SwarmConfig::new(self.grid.clone())
        }
    }

    /// The plan policy these settings ask for (a static one under
    /// `forced:<seed>`, whose changes come on a control stream: see
    /// [`SpatialJob::swarm`]).
    pub fn policy(&self) -> Policy {
        self.policy.build()
    }

    /// SWARM on `records` under `config` as these settings ask: the
    /// policy's plan, or under `forced:<seed>` the forced schedule's
    /// control stream ([`forced_changes`]).
    #[allow(clippy::type_complexity)]
    pub fn swarm<'scope, S, M>(
        &self,
        records: StreamVec<'scope, u64, Record<P, Q>>,
        config: &SwarmConfig<M>,
    ) -> Result<(StreamVec<'scope, u64, S::Output>, SwarmHandles), Error>
    where
        S: PartitionState<Point = P, Query = Q>,
        P: ExchangeData,
        Q: ExchangeData,
        M: CostModel + Clone + 'static,
    {
        match self.forced() {
            Some(seed) => {
                let control = forced_changes(&records, seed, config)?;
                Ok(records.swarm_controlled::<S>(config, control)?)
            }
            None => Ok(records.swarm::<S>(config, self.policy())?),
        }
    }

    /// The forced schedule's seed, under `forced:<seed>`.
    pub fn forced(&self) -> Option<u64> {
        match self.policy {
            PolicySpec::Forced(seed) => Some(seed),
            _ => None,
        }
    }

    /// Feeds this worker's share of the records (line `l` goes to worker
    /// `l mod workers`), epoch by epoch, into `input` and runs until `probe`
    /// is done, under the SWARM of `handles`: each epoch's completion
    /// latency and checks.
    pub fn feed(
        &self,
        worker: &mut timely::worker::Worker,
        input: InputHandle<u64, CapacityContainerBuilder<Vec<Record<P, Q>>>>,
        probe: &ProbeHandle<u64>,
        handles: &SwarmHandles,
    ) -> Fed {
        let mut epoch_checks: Vec<(u64, u64)> = Vec::new();
        // The epochs completed since the last read (each once: epochs
        // complete in order on a worker).
        let drain = |epoch_checks: &mut Vec<(u64, u64)>| {
            let last = epoch_checks.last().map(|&(epoch, _)| epoch);
            let figures = handles.figures();
            let new = figures
                .recent_epochs
                .iter()
                .filter(|e| last.is_none_or(|last| e.epoch > last));
            epoch_checks.extend(new.map(|e| (e.epoch, e.checks)));
        };
        let (index, peers) = (worker.index() as u64, worker.peers() as u64);
        let records = &self.input.records;
        let mut next = 0usize;
        let epochs = self.input.lines.div_ceil(self.batch);
        let progress = self.progress.then_some("spatial");
        let times = drive_epochs(
            worker,
            input,
            probe,
            epochs,
            self.max_in_flight,
            progress,
            |epoch, input| {
                // At most a few epochs ran since the last call: far fewer
                // than the window keeps.
                drain(&mut epoch_checks);
                let end = (epoch + 1) * self.batch;
                while next < records.len() && records[next].0 < end {
                    let (line, record) = &records[next];
                    if line % peers == index {
                        input.send(record.clone());
                    }
                    next += 1;
                }
            },
        );
        drain(&mut epoch_checks);
        Fed {
            epochs: times,
            epoch_checks,
        }
    }

    /// The report of a run on `processes` processes from every worker's figures.
    pub fn assemble(&self, processes: usize, figures: Vec<WorkerFigures>) -> SpatialReport {
        assemble(self, processes, figures)
    }
}

/// Bytes a worker holds per grid cell under a plan that never changes,
/// and under one that changes every round (more plan versions alive at
/// once): the index keeps 24 bytes per cell, in each plan version a worker
/// still routes with and at the coordinator. Measured as peak resident
/// memory over grids of 512² to 2048² cells at 1 and 2 workers (96 and 159
/// bytes per cell per worker with `static` and `forced:3`).
const STATIC_BYTES_PER_CELL: u64 = 96;
const CHANGING_BYTES_PER_CELL: u64 = 160;

/// Runs application `S` on the job on the cluster `cluster` describes (the
/// matches counted from SWARM's output stream); the report comes back in
/// the process hosting worker 0 (`None` elsewhere).
pub fn run_spatial<S>(
    job: SpatialJob<S::Point, S::Query>,
    cluster: &ClusterArgs,
) -> Result<Option<SpatialReport>, Error>
where
    S: PartitionState<Output = Match>,
    S::Point: Sync,
    S::Query: Sync,
{
    job.check(cluster)?;
    let processes = cluster.processes;
    let shared = job.clone();
    run_gathered(
        cluster,
        move |worker| {
            shared.log_to(worker);
            let mut input = InputHandle::new();
            let seen = Rc::new(RefCell::new((0u64, 0u64)));
            let sink = Rc::clone(&seen);
            let handles = worker.dataflow::<u64, _, _>(|scope| {
                let (matches, handles) = shared
                    .swarm::<S, _>(scope.input_from(&mut input), &shared.config())
                    .expect("checked above");
                matches.inspect(move |m| {
                    let mut seen = sink.borrow_mut();
                    *seen = (seen.0 + 1, seen.1.wrapping_add(m.digest()));
                });
                handles
            });
            let times = shared.feed(worker, input, handles.probe(), &handles);
            let seen = *seen.borrow();
            WorkerFigures::of(&handles, seen, times)
        },
        move |figures| assemble(&job, processes, figures),
    )
}

fn assemble<P, Q>(job: &SpatialJob<P, Q>, processes: usize, figures: Vec<WorkerFigures>) -> SpatialReport {
    let (points, queries, removals) = job.input.counts();
    let per_worker_work: Vec<u64> = figures.iter().map(|f| f.executor.checks).collect();
    let total: u64 = per_worker_work.iter().sum();
    let max = per_worker_work.iter().copied().max().unwrap_or(0);
    let mean = total as f64 / figures.len() as f64;
    let orders = &figures[0].orders;
    let epochs = per_epoch_work(figures.iter().map(|f| f.epoch_checks.as_slice()));
    let per_epoch: Vec<(u64, f64)> = epochs
        .iter()
        .map(|&(epoch, total, max)| (epoch, max as f64 * figures.len() as f64 / total as f64))
        .collect();
    let (epoch_total, epoch_max) = epochs
        .iter()
        .fold((0, 0), |(t, m), &(_, total, max)| (t + total, m + max));
    let round = SwarmConfig {
        round: job.round,
        ..SwarmConfig::new(job.grid.clone())
    }
    .round_for(figures.len());
    let settled = STEADY_FROM_ROUND * round;
    let settled_ratios: Vec<f64> = per_epoch
        .iter()
        .filter(|&&(epoch, _)| epoch >= settled)
        .map(|&(_, ratio)| ratio)
        .collect();
    let start = round * (job.plan_depth + 1);
    let start_ratios: Vec<f64> = per_epoch
        .iter()
        .filter(|&&(epoch, _)| epoch < start)
        .map(|&(_, ratio)| ratio)
        .collect();
    let latencies: Vec<u64> = figures.iter().flat_map(|f| f.latencies_us.iter().copied()).collect();
    // Epoch e of a worker is its e-th latency (epochs complete in order).
    let near_change = |epoch: u64| orders.changed_at.iter().any(|&at| epoch + 1 >= at && epoch <= at + 1);
    let elapsed_s = figures.iter().map(|f| f.elapsed_s).fold(0.0, f64::max);
    let (mut around, mut steady) = (Vec::new(), Vec::new());
    for f in &figures {
        for (epoch, &us) in f.latencies_us.iter().enumerate() {
            if near_change(epoch as u64) {
                around.push(us);
            } else {
                steady.push(us);
            }
        }
    }
    SpatialReport {
        policy: job.policy.to_string(),
        decision: match job.policy {
            PolicySpec::Swarm(decision) | PolicySpec::SwarmFrom(decision, _) => decision.to_string(),
            _ => "none".into(),
        },
        workers: figures.len(),
        processes,
        batch: job.batch,
        plan_depth: job.plan_depth,
        max_in_flight: job.max_in_flight,
        points,
        queries,
        removals,
        matches: figures.iter().map(|f| f.matches).sum(),
        matches_digest: figures.iter().fold(0u64, |sum, f| sum.wrapping_add(f.digest)),
        per_worker_busy_s: figures.iter().map(|f| f.executor.busy_ns as f64 / 1e9).collect(),
        max_over_mean_work: if total == 0 { 1.0 } else { max as f64 / mean },
        speedup_bound: if max == 0 { 1.0 } else { total as f64 / max as f64 },
        speedup_bound_epochs: if epoch_max == 0 {
            1.0
        } else {
            epoch_total as f64 / epoch_max as f64
        },
        per_epoch_max_over_mean: Quantiles::of(per_epoch.iter().map(|(_, r)| *r).collect()),
        per_epoch_max_over_mean_steady: Quantiles::of(settled_ratios),
        per_epoch_max_over_mean_start: Quantiles::of(start_ratios),
        per_worker_work,
        rounds: orders.rounds,
        rebalanced_rounds: orders.rebalanced,
        migrations: Migrations {
            moves: orders.moves,
            splits: orders.splits,
            merges: orders.merges,
            shares: orders.shares,
            unshares: orders.unshares,
            partitions_moved: figures.iter().map(|f| f.executor.partitions_moved).sum(),
            bytes_moved: figures.iter().map(|f| f.executor.bytes_moved).sum(),
        },
        partitions_final: figures.iter().map(|f| f.executor.partitions_held).sum(),
        latency_ms: LatencySummary::from_micros(&latencies),
        latency_around_changes_ms: LatencySummary::from_micros(&around),
        latency_steady_ms: LatencySummary::from_micros(&steady),
        elapsed_s,
        points_per_s: if elapsed_s > 0.0 {
            points as f64 / elapsed_s
        } else {
            0.0
        },
        skipped_lines: job.input.skipped_lines,
        duplicate_queries: figures.iter().map(|f| f.refused.duplicate_queries).sum(),
        unknown_removals: figures.iter().map(|f| f.refused.unknown_removals).sum(),
        workload_shape: Some(shape(&job.input, &job.grid, job.batch)),
    }
}

/// The round from which a run's epochs count as steady in
/// [`SpatialReport::per_epoch_max_over_mean_steady`].
const STEADY_FROM_ROUND: u64 = 10;

/// Per epoch in which any check was made, (epoch, all workers' checks, the
/// busiest worker's), from each worker's (epoch, checks); a worker that did
/// not process an epoch made no check in it.
fn per_epoch_work<'a>(workers: impl ExactSizeIterator<Item = &'a [(u64, u64)]>) -> Vec<(u64, u64, u64)> {
    let count = workers.len();
    let mut by_epoch: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for (w, epochs) in workers.enumerate() {
        for &(epoch, checks) in epochs {
            by_epoch.entry(epoch).or_insert_with(|| vec![0; count])[w] += checks;
        }
    }
    by_epoch
        .into_iter()
        .filter_map(|(epoch, checks)| {
            let total: u64 = checks.iter().sum();
            let max = *checks.iter().max()?;
            (total > 0).then_some((epoch, total, max))
        })
        .collect()
}

/// The matches of `input` by brute force: every point against every query
/// registered at an epoch ≤ the point's and not removed at an epoch ≤ it,
/// matching where `matches` says. The reference the dataflow is tested
/// against: (matches, digest).
pub fn brute_force<P, Q>(
    input: &SpatialInput<P, Q>,
    batch: u64,
    matches: impl Fn(&Query<Q>, &Point<P>) -> bool,
) -> (u64, u64) {
    let epoch = |line: u64| line / batch.max(1);
    let mut active: Vec<&Query<Q>> = Vec::new();
    let (mut count, mut digest) = (0u64, 0u64);
    let mut by_epoch: std::collections::BTreeMap<u64, Vec<&Item<P, Q>>> = std::collections::BTreeMap::new();
    for (line, record) in &input.records {
        by_epoch.entry(epoch(*line)).or_default().push(record.item());
    }
    for items in by_epoch.values() {
        active.extend(items.iter().filter_map(|item| match item {
            Item::Query(query) => Some(query),
            _ => None,
        }));
        for item in items {
            if let Item::Removal(id) = item {
                active.retain(|held| held.id != *id);
            }
        }
        for item in items {
            if let Item::Point(point) = item {
                for query in active.iter().filter(|query| matches(query, point)) {
                    count += 1;
                    digest = digest.wrapping_add(
                        Match {
                            query: query.id,
                            point: point.id,
                        }
                        .digest(),
                    );
                }
            }
        }
    }
    (count, digest)
}

/// [`brute_force`] for continuous range queries.
pub fn brute_force_matches(input: &SpatialInput, batch: u64) -> (u64, u64) {
    brute_force(input, batch, |query, point| query.rect.contains(point.x, point.y))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_epoch_imbalance_counts_absent_workers_as_idle() {
        let a = [(0, 10), (1, 0), (2, 5)];
        let b = [(0, 30), (3, 7)];
        let work = per_epoch_work([&a[..], &b[..]].into_iter());
        // Epoch 0: 30 of 40 on one worker; epoch 1: no check; epochs 2 and 3:
        // one worker alone (max/mean 2 each).
        assert_eq!(work, vec![(0, 40, 30), (2, 5, 5), (3, 7, 7)]);
    }
}

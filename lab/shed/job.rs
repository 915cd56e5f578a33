//! The shedding job behind `examples/shedding.rs` and the benchmarks:
//! records arrive at a profile's rate (timestamped with their arrival
//! millisecond), pass a shedder and cost real CPU in a processing operator;
//! a controller on each worker reads the frontier-measured delay every
//! period and sets the drop fraction.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use timely::dataflow::operators::vec::Input;
use timely::dataflow::operators::{Exchange, Probe};
use timely::dataflow::{InputHandle, ProbeHandle};
use timely::worker::Worker;

use crate::common::cluster::ClusterArgs;
use crate::common::driver::run_diagnosed;
use crate::common::latency::LatencySummary;
use crate::common::Error;
use equipoise::common::busy_work::BusyWork;
use equipoise::common::hash::splitmix64;
use equipoise::doctor;

use super::profile::Profile;
use super::readers::Readers;
use crate::common::log_file::LogFile;
use equipoise::shed::events::LoopEvent;
use equipoise::shed::Auto;
use equipoise::shed::Prediction;
use equipoise::shed::TimeSliced;
use equipoise::shed::LOG_NAME;
use equipoise::shed::{Acting, Actuation, Drops};
use equipoise::shed::{Bounded, Coarse, Controller, NoShedding, Pi, PiParams};
use equipoise::shed::{ExcitationSpec, Excited};
use equipoise::shed::{LoopHandle, LoopSettings, ShedLoop};

/// Which controller runs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum ControllerSpec {
    /// [`Auto`]: the capacity measured, [`Bounded`] designed for it.
    Auto,
    /// The delay target as a bound: PI with these parameters under a
    /// learned margin ([`Bounded`]).
    Bounded(PiParams),
    /// PI with these parameters, holding the delay at the target (the paper's).
    Pi(PiParams),
    /// The coarse algorithm.
    Coarse,
    /// Identification: PI with these parameters, its output dithered.
    Excited(PiParams, ExcitationSpec),
    /// No shedding.
    None,
}

impl ControllerSpec {
    fn build(&self, periods: usize) -> Box<dyn Controller> {
        match *self {
            ControllerSpec::Auto => Box::new(Auto::default()),
            ControllerSpec::Bounded(params) => Box::new(Bounded::new(params)),
            ControllerSpec::Pi(params) => Box::new(Pi::new(params)),
            ControllerSpec::Excited(params, spec) => Box::new(Excited::new(Pi::new(params), spec, periods)),
            ControllerSpec::Coarse => Box::new(Coarse),
            ControllerSpec::None => Box::new(NoShedding),
        }
    }

    /// The name reports use.
    pub fn name(&self) -> &'static str {
        match self {
            ControllerSpec::Auto => "auto",
            ControllerSpec::Bounded(_) => "bound",
            ControllerSpec::Pi(_) => "pi",
            ControllerSpec::Coarse => "ca",
            ControllerSpec::Excited(..) => "identify",
            ControllerSpec::None => "none",
        }
    }
}

/// How the shedder chooses the records it drops (`--shed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum ShedMode {
    /// Each record independently ([`Drops::random`]).
    Random,
    /// The lowest utility first ([`Drops::lowest_utility`]).
    Semantic,
}

/// A step in the per-record cost.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CostStep {
    /// The cost from `at_s` on, µs per record.
    pub cost_us: f64,
    /// When, s.
    pub at_s: f64,
}

impl std::str::FromStr for CostStep {
    type Err = Error;

    /// `<cost_us>:<at_s>`, e.g. `30:5`: 30 µs per record from 5 s on.
    fn from_str(text: &str) -> Result<Self, Error> {
        let invalid = || {
            Error::invalid(
                "--cost-step",
                format!("`{text}`: expected <cost µs>:<at s>, a positive cost and a time from 0 on"),
            )
        };
        let (cost, at) = text.split_once([':', ',']).ok_or_else(invalid)?;
        let (cost_us, at_s) = (cost.trim().parse::<f64>(), at.trim().parse::<f64>());
        match (cost_us, at_s) {
            (Ok(cost_us), Ok(at_s)) if cost_us > 0.0 && cost_us.is_finite() && at_s >= 0.0 && at_s.is_finite() => {
                Ok(CostStep { cost_us, at_s })
            }
            _ => Err(invalid()),
        }
    }
}

/// Settings of one shedding run.
#[derive(Debug, Clone)]
pub struct ShedJob {
    /// The controller.
    pub controller: ControllerSpec,
    /// What delay the controller sees (the coarse algorithm and none ignore it).
    pub prediction: Prediction,
    /// How the controller's output reaches the shedder; `None`: the
    /// controller's own way (a held rate for PI, a fraction for CA and none).
    pub actuation: Option<Actuation>,
    /// D_t, ms.
    pub target_ms: f64,
    /// Sampling period W, ms.
    pub period_ms: f64,
    /// How long records arrive, s.
    pub duration_s: f64,
    /// The arrival rate over time (over all workers).
    pub profile: Profile,
    /// Processing cost per record, µs (calibrated on an idle core).
    pub cost_us: f64,
    /// An optional step in that cost.
    pub cost_step: Option<CostStep>,
    /// How the shedder chooses.
    pub mode: ShedMode,
    /// Seed of the random shedder and of record utilities.
    pub seed: u64,
    /// Print a progress line to stderr about once a second (worker 0).
    pub progress: bool,
    /// Which workers read.
    pub readers: Readers,
    /// Whether the costly stage drops the records that can no longer make
    /// the target ([`TimeSliced::time_sliced_within`]).
    pub drop_late: bool,
    /// Where the loops' decisions are logged (`--log`).
    pub log: Option<LogFile>,
}

impl ShedJob {
    /// `controller` under `profile`, with the defaults of the examples: the
    /// Smith prediction and the controller's own actuation, D_t = 300 ms,
    /// W = 100 ms, 10 s of arrivals, 20 µs per record and no step in it,
    /// random drops, seed 1, no progress lines, every worker reading, late
    /// records dropped before their work.
    pub fn new(controller: ControllerSpec, profile: Profile) -> Self {
        ShedJob {
            controller,
            prediction: Prediction::Smith,
            actuation: None,
            target_ms: 300.0,
            period_ms: 100.0,
            duration_s: 10.0,
            profile,
            cost_us: 20.0,
            cost_step: None,
            mode: ShedMode::Random,
            seed: 1,
            progress: false,
            readers: Readers::Even,
            drop_late: true,
            log: None,
        }
    }

    /// Records per second the workers can process at time `t` (each worker a core).
    pub fn capacity(&self, workers: usize, t: f64) -> f64 {
        workers as f64 * capacity_per_worker(self.cost_at(t))
    }

    fn cost_at(&self, t: f64) -> f64 {
        match self.cost_step {
            Some(step) if t >= step.at_s => step.cost_us,
            _ => self.cost_us,
        }
    }
}

/// Records per second one worker (a core) processes at `cost_us` µs each.
pub fn capacity_per_worker(cost_us: f64) -> f64 {
    1e6 / cost_us.max(1e-3)
}

/// One sampling period, as worker 0 saw it (rates over all workers).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct TraceRow {
    /// End of the period, s.
    pub time_s: f64,
    /// Records arriving per second.
    pub arrival_rate: f64,
    /// Records admitted per second.
    pub admitted_rate: f64,
    /// Records processed per second.
    pub processed_rate: f64,
    /// Fraction dropped during the period.
    pub drop_fraction: f64,
    /// Mean frontier-measured delay over the period, ms.
    pub mean_delay_ms: f64,
    /// The delay the controller saw (the prediction, or the measurement), ms.
    pub controlled_delay_ms: f64,
}

/// The report of a run: the contract of `shedding run --report`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShedReport {
    /// `bound`, `pi`, `ca` or `none`.
    pub controller: String,
    /// D_t, ms.
    pub target_delay_ms: f64,
    /// Seconds of arrivals.
    pub duration_s: f64,
    /// Records that arrived.
    pub arrived: u64,
    /// Records the loop dropped.
    pub dropped: u64,
    /// Admitted records the costly stage dropped, before their work,
    /// because they could no longer make the target.
    #[serde(default)]
    pub late: u64,
    /// Records processed (all the admitted ones, when the run drains).
    pub processed: u64,
    /// (dropped + late) ÷ arrived.
    pub loss_ratio: f64,
    /// The least loss capacity allows: the profile's arrivals beyond
    /// capacity ÷ its arrivals, integrated over the run millisecond by
    /// millisecond (no buffering: a controller that spends its delay budget
    /// on a burst can lose less).
    pub ideal_loss_ratio: f64,
    /// Σ(D − D_t) over processed records with D > D_t, ms.
    pub delay_violation_ms_sum: f64,
    /// Processed records with D > D_t.
    pub delayed_records: u64,
    /// Largest D − D_t, ms (0 if none).
    pub max_overshoot_ms: f64,
    /// Mean per-record delay, ms.
    pub mean_delay_ms: f64,
    /// Per-record delay percentiles.
    pub delay_ms: LatencySummary,
    /// PI parameters (zeros for other controllers).
    pub params: PiParams,
    /// Worker 0's trace, one row per period.
    #[serde(skip)]
    pub trace: Vec<TraceRow>,
    /// Each worker's dropped share of the records it read (0 for a worker
    /// that read none), by worker.
    pub drop_fraction_by_worker: Vec<f64>,
}

impl ShedReport {
    /// Periods after `at_s` until the mean delay is within ±10 % of the
    /// target and stays there for the rest of the trace (None if it never
    /// settles).
    pub fn settling_periods(&self, at_s: f64) -> Option<usize> {
        let target = self.target_delay_ms;
        self.periods_until(at_s, |delay| (delay - target).abs() <= 0.1 * target)
    }

    /// Periods after `at_s` until the mean delay is at or under the target
    /// and stays there for the rest of the trace (None if it never does).
    pub fn periods_until_under(&self, at_s: f64) -> Option<usize> {
        self.periods_until(at_s, |delay| delay <= self.target_delay_ms)
    }

    /// Periods after `at_s` until `holds` is true of every later period's
    /// mean delay.
    fn periods_until(&self, at_s: f64, holds: impl Fn(f64) -> bool) -> Option<usize> {
        let after: Vec<f64> = self
            .trace
            .iter()
            .filter(|row| row.time_s >= at_s)
            .map(|row| row.mean_delay_ms)
            .collect();
        (0..after.len()).find(|&k| after[k..].iter().all(|&d| holds(d)))
    }
}

impl ShedJob {
    /// Refuses settings no run can have: a target, period, cost or duration
    /// that is not a positive number, a malformed cost step, PI parameters
    /// that are not finite.
    pub fn check(&self) -> Result<(), Error> {
        if !(self.target_ms > 0.0 && self.target_ms.is_finite()) {
            return Err(Error::invalid(
                "--target-ms",
                format!("{} is not a positive number", self.target_ms),
            ));
        }
        if !(self.period_ms >= 1.0 && self.period_ms.is_finite()) {
            return Err(Error::invalid(
                "--period-ms",
                format!("{} is below 1 ms", self.period_ms),
            ));
        }
        if !(self.cost_us > 0.0 && self.cost_us.is_finite()) {
            return Err(Error::invalid(
                "--cost-us",
                format!("{} is not a positive number", self.cost_us),
            ));
        }
        if !(self.duration_s > 0.0 && self.duration_s.is_finite()) {
            return Err(Error::invalid(
                "--duration-s",
                format!("{} is not a positive number of seconds", self.duration_s),
            ));
        }
        if let Some(CostStep { cost_us, at_s }) = self.cost_step {
            if !(cost_us > 0.0 && cost_us.is_finite() && at_s >= 0.0 && at_s.is_finite()) {
                return Err(Error::invalid(
                    "--cost-step",
                    format!("{cost_us}:{at_s}: expected a positive cost in µs and a time in s from 0 on"),
                ));
            }
        }
        if let ControllerSpec::Bounded(params) | ControllerSpec::Pi(params) | ControllerSpec::Excited(params, _) =
            self.controller
        {
            let PiParams { u, g, r } = params;
            if ![u, g, r].iter().all(|v| v.is_finite()) {
                return Err(Error::invalid(
                    "--pi",
                    format!("{u},{g},{r}: every value must be finite"),
                ));
            }
        }
        Ok(())
    }
}

/// Longest a processing activation runs before yielding to the driver: the
/// backlog stays visible in the output frontier, and the worker keeps
/// feeding arrivals and running the loop.
pub const PROCESSING_SLICE: Duration = Duration::from_millis(2);

/// What one worker measured: its records and their delays, and (worker 0)
/// the loop's trace.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct WorkerFigures {
    arrived: u64,
    dropped: u64,
    late: u64,
    violation_ms: f64,
    delayed: u64,
    max_overshoot_ms: f64,
    delay_sum_ms: f64,
    processed: u64,
    delays_us: Vec<u64>,
    trace: Vec<TraceRow>,
}

/// A record: its arrival (wall-clock) millisecond, also its timestamp, and
/// its utility (what semantic shedding ranks by).
pub type Record = (u64, f64);

/// What a shedding job supplies around one worker's dataflow: the wall clock
/// records are stamped with (the same in every process, so that the
/// frontier delay agrees), the cost of processing a record, and the delays
/// processed records saw. Clones share it.
#[derive(Clone)]
pub struct Testbed {
    start: Instant,
    base_ms: u64,
    target_ms: f64,
    cost: Rc<Cell<BusyWork>>,
    figures: Rc<RefCell<WorkerFigures>>,
}

impl Testbed {
    fn new(job: &ShedJob) -> Self {
        let start = Instant::now();
        let wall_start = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
        let base_ms = wall_start.as_millis() as u64;
        Testbed {
            start: start - (wall_start - Duration::from_millis(base_ms)),
            base_ms,
            target_ms: job.target_ms,
            cost: Rc::new(Cell::new(busy_work(job.cost_us))),
            figures: Rc::default(),
        }
    }

    /// Milliseconds since the run's first stamp.
    fn now_ms(&self) -> f64 {
        self.start.elapsed().as_secs_f64() * 1000.0
    }

    /// When the stamp `stamp` began, for [`LoopSettings::with_clock`].
    pub fn instant_of(&self, stamp: u64) -> Instant {
        match stamp.checked_sub(self.base_ms) {
            Some(after) => self.start + Duration::from_millis(after),
            None => self
                .start
                .checked_sub(Duration::from_millis(self.base_ms - stamp))
                .unwrap_or(self.start),
        }
    }

    /// Processes `record`: spends its cost, and records its delay.
    pub fn process(&self, record: &Record) {
        self.cost.get().run();
        let delay_ms = self.now_ms() - (record.0 as f64 - self.base_ms as f64);
        self.figures.borrow_mut().record_delay(delay_ms, self.target_ms);
    }
}

fn busy_work(cost_us: f64) -> BusyWork {
    BusyWork::new(Duration::from_secs_f64(cost_us / 1e6))
}

impl ShedJob {
    /// The testbed around one worker's dataflow; its clock starts now.
    pub fn testbed(&self) -> Testbed {
        Testbed::new(self)
    }

    /// Sends the loops' decisions on `worker` to the job's log, if any:
    /// before the dataflow is built.
    pub fn log_to(&self, worker: &mut Worker) {
        if let Some(log) = &self.log {
            log.register::<LoopEvent>(worker, LOG_NAME);
        }
    }

    /// The loop's settings, with the testbed's clock.
    pub fn settings(&self, testbed: &Testbed) -> LoopSettings<u64> {
        let clock = testbed.clone();
        let mut settings = LoopSettings::new(Duration::from_secs_f64(self.target_ms / 1000.0))
            .with_period(Duration::from_secs_f64(self.period_ms / 1000.0))
            .with_clock(move |stamp: &u64| clock.instant_of(*stamp));
        settings.prediction = self.prediction;
        // The report's trace covers the whole run.
        settings.history = settings
            .history
            .max((self.duration_s * 1000.0 / self.period_ms) as usize + 1);
        settings
    }

    /// How the shedder chooses, seeded with the job's seed.
    pub fn drops(&self) -> Drops<Record> {
        match self.mode {
            ShedMode::Random => Drops::random(),
            ShedMode::Semantic => Drops::lowest_utility(|record: &Record| record.1),
        }
        .with_seed(self.seed)
    }

    /// The controller, new.
    pub fn controller(&self) -> Box<dyn Controller> {
        let periods = (self.duration_s * 1000.0 / self.period_ms).ceil() as usize;
        let controller = self.controller.build(periods);
        match self.actuation {
            Some(actuation) => Box::new(Acting::new(controller, actuation)),
            None => controller,
        }
    }

    /// Feeds this worker's share of the profile's arrivals into `input` for
    /// the job's duration, stamped with their arrival millisecond (records
    /// keep arriving while the worker is busy), steps the worker, then
    /// closes the input and runs until `output` is done. Returns what the
    /// worker measured.
    pub fn feed(
        &self,
        worker: &mut Worker,
        testbed: &Testbed,
        mut input: timely::dataflow::operators::vec::input::Handle<u64, Record>,
        shedding: &LoopHandle<u64>,
        output: &ProbeHandle<u64>,
    ) -> WorkerFigures {
        let (index, peers) = (worker.index(), worker.peers());
        let base_ms = testbed.base_ms;
        // Epochs start now, not at 0: the frontier delay of the first period
        // is measured from the start of the run.
        input.advance_to(base_ms);
        let share = self.readers.share(index, peers);
        let (mut owed, mut last) = (0.0f64, 0.0f64);
        let mut utility = self.seed ^ (index as u64).wrapping_mul(0x2545_f491_4f6c_dd1d);
        let duration_ms = self.duration_s * 1000.0;
        let mut reported = 0;
        loop {
            let now = testbed.now_ms().min(duration_ms);
            let t = now / 1000.0;
            if let Some(step) = self.cost_step.filter(|step| t >= step.at_s) {
                testbed.cost.set(busy_work(step.cost_us));
            }
            // The arrivals due since the last iteration (this worker's
            // share), spread evenly over that interval.
            let due = self.profile.rate(t) * share * (now - last) / 1000.0 + owed;
            let count = due.floor();
            owed = due - count;
            for k in 0..count as u64 {
                let arrival = last + (now - last) * (k + 1) as f64 / count;
                let time = (base_ms + arrival as u64).max(*input.time());
                if *input.time() < time {
                    input.advance_to(time);
                }
                utility = splitmix64(utility);
                input.send((time, (utility >> 11) as f64 / (1u64 << 53) as f64));
            }
            // A worker that read nothing still moves its input on: its
            // capability would otherwise hold the output frontier back.
            let stamp = base_ms + now as u64;
            if *input.time() < stamp {
                input.advance_to(stamp);
            }
            last = now;
            if now >= duration_ms {
                break;
            }
            worker.step();
            if index == 0 && self.progress && (now / 1000.0) as u64 > reported {
                reported = (now / 1000.0) as u64;
                if let Some(period) = shedding.figures().periods.last() {
                    eprintln!(
                        "[shedding] {t:.1} s: arrivals {:.0}/s, drop {:.1} %, delay {:.0} ms",
                        period.sample.arrival_rate * peers as f64,
                        100.0 * period.drop_fraction,
                        period.sample.delay_ms
                    );
                }
            }
        }
        drop(input);
        while !output.done() {
            worker.step_or_park(None);
        }
        let shed = shedding.figures();
        let mut figures = testbed.figures.take();
        (figures.arrived, figures.dropped, figures.late) = (shed.arrived, shed.dropped, shed.late);
        if index == 0 {
            figures.trace = shed
                .periods
                .iter()
                .map(|period| TraceRow {
                    time_s: period.end.as_secs_f64(),
                    arrival_rate: period.sample.arrival_rate * peers as f64,
                    admitted_rate: period.sample.admitted_rate * peers as f64,
                    processed_rate: period.sample.processed_rate * peers as f64,
                    drop_fraction: period.drop_fraction,
                    mean_delay_ms: period.sample.delay_ms,
                    controlled_delay_ms: period.controlled_delay_ms,
                })
                .collect();
        }
        figures
    }
}

/// Runs the job on `workers` threads of this process.
pub fn run_shedding(job: ShedJob, workers: usize) -> Result<ShedReport, Error> {
    Ok(run_shedding_on(job, &ClusterArgs::threads(workers))?.expect("worker 0 runs in this process"))
}

/// Runs the job on every worker of `cluster`, each building its dataflow
/// with `dataflow`; the report in the process that hosts worker 0, with
/// the skew report of the dataflow if `diagnose` gives the doctor's
/// settings. The profile's rate is over all workers of all processes.
pub fn run_shedding_with(
    job: ShedJob,
    cluster: &ClusterArgs,
    diagnose: Option<doctor::Settings>,
    dataflow: impl Fn(&mut Worker, &ShedJob) -> WorkerFigures + Send + Sync + 'static,
) -> Result<Option<(ShedReport, Option<doctor::Report>)>, Error> {
    job.check()?;
    let shared = job.clone();
    let workers = cluster.total_workers();
    run_diagnosed(
        cluster,
        diagnose,
        move |worker| dataflow(worker, &shared),
        move |figures| assemble(&job, workers, figures),
    )
}

/// [`run_shedding_with`] the dataflow of `examples/shedding.rs`: the loop,
/// then a processing stage that spends each record's cost.
pub fn run_shedding_on(job: ShedJob, cluster: &ClusterArgs) -> Result<Option<ShedReport>, Error> {
    let ran = run_shedding_with(job, cluster, None, |worker, job| {
        job.log_to(worker);
        let testbed = job.testbed();
        let mut input = InputHandle::new();
        let output = ProbeHandle::new();
        let shedding = worker.dataflow::<u64, _, _>(|scope| {
            let settings = job.settings(&testbed);
            let (admitted, shedding) =
                scope
                    .input_from(&mut input)
                    .shed_loop_with(&settings, job.controller(), &output, job.drops());
            let processing = testbed.clone();
            // Few readers: the admitted records spread over every worker.
            let admitted = if job.readers.exchanged() {
                admitted.exchange(|record: &Record| splitmix64(record.1.to_bits()))
            } else {
                admitted
            };
            let process = move |_: &u64, record: Record| {
                processing.process(&record);
                None::<()>
            };
            if job.drop_late {
                admitted.time_sliced_within("Process", PROCESSING_SLICE, &shedding.deadline(), process)
            } else {
                admitted.time_sliced("Process", PROCESSING_SLICE, process)
            }
            .probe_with(&output);
            shedding
        });
        job.feed(worker, &testbed, input, &shedding, &output)
    })?;
    Ok(ran.map(|(report, _)| report))
}

impl WorkerFigures {
    fn record_delay(&mut self, delay_ms: f64, target_ms: f64) {
        let delay = delay_ms.max(0.0);
        self.processed += 1;
        self.delay_sum_ms += delay;
        if delay > target_ms {
            self.violation_ms += delay - target_ms;
            self.delayed += 1;
            self.max_overshoot_ms = self.max_overshoot_ms.max(delay - target_ms);
        }
        self.delays_us.push((delay * 1000.0) as u64);
    }
}

/// The least loss ratio capacity allows: 1 − capacity/arrival, integrated
/// over the run in steps of a millisecond.
fn ideal_loss_ratio(job: &ShedJob, workers: usize) -> f64 {
    let (mut excess, mut arrivals) = (0.0, 0.0);
    for ms in 0..(job.duration_s * 1000.0).ceil() as u64 {
        let t = (ms as f64 + 0.5) / 1000.0;
        let rate = job.profile.rate(t);
        excess += (rate - job.capacity(workers, t)).max(0.0);
        arrivals += rate;
    }
    if arrivals > 0.0 {
        excess / arrivals
    } else {
        0.0
    }
}

fn assemble(job: &ShedJob, workers: usize, figures: Vec<WorkerFigures>) -> ShedReport {
    let arrived: u64 = figures.iter().map(|f| f.arrived).sum();
    let dropped: u64 = figures.iter().map(|f| f.dropped).sum();
    let late: u64 = figures.iter().map(|f| f.late).sum();
    let processed: u64 = figures.iter().map(|f| f.processed).sum();
    let delays: Vec<u64> = figures.iter().flat_map(|f| f.delays_us.iter().copied()).collect();
    let ratio = |part: f64| if arrived > 0 { part / arrived as f64 } else { 0.0 };
    ShedReport {
        controller: job.controller.name().into(),
        target_delay_ms: job.target_ms,
        duration_s: job.duration_s,
        arrived,
        dropped,
        late,
        processed,
        loss_ratio: ratio((dropped + late) as f64),
        ideal_loss_ratio: ideal_loss_ratio(job, workers),
        delay_violation_ms_sum: figures.iter().map(|f| f.violation_ms).sum(),
        delayed_records: figures.iter().map(|f| f.delayed).sum(),
        max_overshoot_ms: figures.iter().map(|f| f.max_overshoot_ms).fold(0.0, f64::max),
        mean_delay_ms: if processed > 0 {
            figures.iter().map(|f| f.delay_sum_ms).sum::<f64>() / processed as f64
        } else {
            0.0
        },
        delay_ms: LatencySummary::from_micros(&delays),
        params: match job.controller {
            ControllerSpec::Bounded(params) | ControllerSpec::Pi(params) | ControllerSpec::Excited(params, _) => params,
            _ => PiParams { u: 0.0, g: 0.0, r: 0.0 },
        },
        drop_fraction_by_worker: figures
            .iter()
            .map(|f| {
                if f.arrived > 0 {
                    f.dropped as f64 / f.arrived as f64
                } else {
                    0.0
                }
            })
            .collect(),
        trace: figures.into_iter().next().map(|f| f.trace).unwrap_or_default(),
    }
}

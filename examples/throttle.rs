//! Flow control: a source that can wait, slowed by the loop that holds the
//! delay at the output, instead of shed.
//!
//! ```text
//! cargo run --release --example throttle -- --target-ms 300 --cost-us 20 --duration-s 10 -w 2 --report throttle.json
//! cargo run --release --example throttle -- --source unlimited --duration-s 10 -w 2
//! cargo run --release --example throttle -- --file lines.txt --cost-step 30:5
//! ```
//!
//! Each worker builds the dataflow in `worker` below: an input of records
//! (the lines of `--file`, `--records N` generated ones, or generated ones
//! without end) stamped with the wall-clock millisecond they were read,
//! the throttle's loop on it, and a stage that spends each record's cost.
//! The loop watches the frontier at the end of the dataflow (the probe
//! `output`). The input code asks the throttle how many of the records it
//! has ready it may send (`--source throttle`), or sends them all
//! (`unlimited`), or at a fixed rate (`fixed:<records/s>`, over all
//! workers). Nothing is dropped: what a run of `--duration-s` has read and
//! not processed when it ends is reported as `unfinished`.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::path::PathBuf;
use std::process::ExitCode;
use std::rc::Rc;
use std::str::FromStr;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use clap::Parser;
use equipoise::common::hash::key_hash;
use equipoise::common::BusyWork;
use equipoise::doctor;
use equipoise::shed::events::LoopEvent;
use equipoise::shed::figures::ThrottlePeriod;
use equipoise::shed::{Auto, LoopSettings, ThrottleLoop, TimeSliced, LOG_NAME};
use equipoise_lab::common::cluster::ClusterArgs;
use equipoise_lab::common::driver::run_diagnosed;
use equipoise_lab::common::latency::LatencySummary;
use equipoise_lab::common::log_file::LogFile;
use equipoise_lab::common::program::{exit_code, exit_quietly_on_closed_stdout, write_report};
use equipoise_lab::common::Error;
use equipoise_lab::shed::job::CostStep;
use equipoise_lab::shed::readers::Readers;
use serde::{Deserialize, Serialize};
use timely::dataflow::operators::{Exchange, Input, Probe};
use timely::dataflow::{InputHandle, ProbeHandle};
use timely::worker::Worker;

/// Flow control: the shedding loop's controller slowing the source.
#[derive(Parser, Debug, Clone)]
#[command(name = "throttle")]
pub(crate) struct Args {
    /// D_t: the delay, ms, to hold records under from their read to the output.
    #[arg(long, default_value_t = 300.0)]
    target_ms: f64,
    /// W: how often the controller runs, ms (default: a third of the target, at most 100).
    #[arg(long)]
    period_ms: Option<f64>,
    /// Work per record in the costly stage, µs (calibrated on an idle core).
    #[arg(long, default_value_t = 20.0)]
    cost_us: f64,
    /// A step in that cost: <cost_us>:<at_s>.
    #[arg(long)]
    cost_step: Option<CostStep>,
    /// How the input code sends: throttle, unlimited, fixed:<records/s over all workers>.
    #[arg(long, default_value = "throttle")]
    source: Source,
    /// How long the run reads, s (it ends sooner if the data ends and is processed).
    #[arg(long, default_value_t = 10.0)]
    duration_s: f64,
    /// Generate this many records (default: without end).
    #[arg(long, conflicts_with = "file")]
    records: Option<u64>,
    /// Read the records from this file, one a line.
    #[arg(long)]
    file: Option<PathBuf>,
    /// Which workers read: even, one (worker 0), skewed:<share of worker 0>;
    /// under one and skewed the records are exchanged before the stage.
    #[arg(long, default_value = "even")]
    readers: Readers,
    /// Records become ready at most at this rate, records/s over all
    /// workers (each reader its share): a source slower than the dataflow.
    /// Default: as fast as the reader reads.
    #[arg(long)]
    arrival_rate: Option<f64>,
    /// Records a reader has ready at a time (scaled by its share of the readers).
    #[arg(long, default_value_t = 256)]
    batch: usize,
    /// Write the JSON report here.
    #[arg(long)]
    report: Option<PathBuf>,
    /// No summary line on stdout.
    #[arg(long)]
    quiet: bool,
    /// The throttle's decisions (timely log events), one JSON object a
    /// line (with several processes, process p writes FILE.p).
    #[arg(long)]
    log: Option<PathBuf>,
    #[command(flatten)]
    cluster: ClusterArgs,
    /// The skew report's flags.
    #[command(flatten)]
    doctor: equipoise_lab::common::doctor_args::DoctorArgs,
}

/// How the input code sends.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) enum Source {
    /// What the throttle allows.
    Throttle,
    /// Everything it has, as fast as it can.
    Unlimited,
    /// At a fixed rate over all workers (each reader its share of it).
    Fixed(f64),
}

impl FromStr for Source {
    type Err = Error;
    fn from_str(text: &str) -> Result<Self, Error> {
        match text.split_once(':') {
            None if text == "throttle" => Ok(Source::Throttle),
            None if text == "unlimited" => Ok(Source::Unlimited),
            Some(("fixed", rate)) => match rate.parse::<f64>() {
                Ok(rate) if rate > 0.0 && rate.is_finite() => Ok(Source::Fixed(rate)),
                _ => Err(Error::invalid(
                    "--source",
                    format!("`{text}`: the rate must be a positive number"),
                )),
            },
            _ => Err(Error::invalid(
                "--source",
                format!("`{text}`: expected throttle, unlimited or fixed:<records/s>"),
            )),
        }
    }
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Throttle => f.write_str("throttle"),
            Source::Unlimited => f.write_str("unlimited"),
            Source::Fixed(rate) => write!(f, "fixed:{rate}"),
        }
    }
}

fn main() -> ExitCode {
    exit_quietly_on_closed_stdout();
    exit_code("throttle", run(Args::parse()))
}

fn run(args: Args) -> Result<(), Error> {
    let (quiet, path, doctor) = (args.quiet, args.report.clone(), args.doctor.clone());
    if let Some((report, diagnosed)) = execute(args)? {
        if !quiet {
            println!("{report}");
        }
        if let Some(path) = path {
            write_report(&path, &report)?;
        }
        doctor.write(diagnosed.as_ref())?;
    }
    Ok(())
}

/// Runs the flags' experiment on this process's workers; the report in the
/// process that hosts worker 0, with the skew report of the dataflow if
/// `--doctor` or `--doctor-html` asks for it. (`bench/throttle.rs` runs
/// it too.)
pub(crate) fn execute(args: Args) -> Result<Option<(Report, Option<doctor::Report>)>, Error> {
    check(&args)?;
    let diagnose = args.doctor.settings()?;
    let lines = match &args.file {
        Some(path) => Some(Arc::new(read_lines(path)?)),
        None => None,
    };
    // What the processes of a cluster must agree on to run one experiment.
    let mut cluster = args.cluster.clone();
    cluster.agree("--target-ms", args.target_ms);
    cluster.agree("--period-ms", args.period_ms);
    cluster.agree("--cost-us", args.cost_us);
    cluster.agree("--cost-step", args.cost_step);
    cluster.agree("--source", args.source);
    cluster.agree("--duration-s", args.duration_s);
    cluster.agree("--records", args.records);
    cluster.agree("--lines", lines.as_ref().map(|lines| lines.len()));
    cluster.agree("--readers", args.readers);
    cluster.agree("--batch", args.batch);
    cluster.agree("--arrival-rate", args.arrival_rate);
    let log = LogFile::for_flag(args.log.as_deref(), &cluster)?;
    let (shared, workers) = (args.clone(), cluster.total_workers());
    run_diagnosed(
        &cluster,
        diagnose,
        move |worker| {
            // The throttle's decisions, from timely's logging: registered
            // before the dataflow is built.
            if let Some(log) = &log {
                log.register::<LoopEvent>(worker, LOG_NAME);
            }
            self::worker(worker, &shared, lines.clone())
        },
        move |figures| assemble(&args, workers, figures),
    )
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "throttle: source {}, {} workers: {:.0} records/s processed, delay p50 {:.0} / p99 {:.0} / max {:.0} ms \
             (target {:.0}), {} read, {} unfinished, 0 dropped, {} of {} periods limited",
            self.source,
            self.workers,
            self.processed_per_s,
            self.delay_ms.p50,
            self.delay_ms.p99,
            self.delay_ms.max,
            self.target_ms,
            self.read,
            self.unfinished,
            self.limited_periods,
            self.periods.len()
        )
    }
}

fn check(args: &Args) -> Result<(), Error> {
    // A positive number of milliseconds, or microseconds, that is a duration.
    let positive = |flag: &str, value: f64, per_second: f64| {
        if value > 0.0 && Duration::try_from_secs_f64(value / per_second).is_ok() {
            Ok(())
        } else {
            Err(Error::invalid(flag, format!("{value} is not a positive duration")))
        }
    };
    positive("--target-ms", args.target_ms, 1e3)?;
    positive("--cost-us", args.cost_us, 1e6)?;
    positive("--duration-s", args.duration_s, 1.0)?;
    if let Some(period_ms) = args.period_ms {
        positive("--period-ms", period_ms, 1e3)?;
        if period_ms < 1.0 {
            return Err(Error::invalid("--period-ms", format!("{period_ms} is below 1 ms")));
        }
    }
    if let Some(step) = args.cost_step {
        positive("--cost-step", step.cost_us, 1e6)?;
    }
    if let Some(rate) = args.arrival_rate
        && !(rate > 0.0 && rate.is_finite())
    {
        return Err(Error::invalid(
            "--arrival-rate",
            format!("{rate} is not a positive number"),
        ));
    }
    if args.batch == 0 {
        return Err(Error::invalid("--batch", "must be at least 1"));
    }
    Ok(())
}

fn read_lines(path: &PathBuf) -> Result<Vec<String>, Error> {
    let text = std::fs::read(path).map_err(|source| Error::Io {
        path: path.clone(),
        source,
    })?;
    let text = String::from_utf8(text)
        .map_err(|e| Error::invalid("--file", format!("{}: not UTF-8 ({e})", path.display())))?;
    Ok(text.lines().map(str::to_owned).collect())
}

/// Milliseconds since the Unix epoch, the records' timestamps: the same
/// clock in every process of a cluster on one machine (or synchronised).
#[derive(Clone, Copy)]
struct Wall {
    at: Instant,
    unix_ms: f64,
}

impl Wall {
    fn new() -> Self {
        let unix = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
        Wall {
            at: Instant::now(),
            unix_ms: unix.as_secs_f64() * 1000.0,
        }
    }

    fn now_ms(&self) -> f64 {
        self.unix_ms + self.at.elapsed().as_secs_f64() * 1000.0
    }

    /// When the millisecond `stamp` began, for the loop's clock.
    fn instant_of(&self, stamp: u64) -> Instant {
        let offset_ms = stamp as f64 - self.unix_ms;
        if offset_ms >= 0.0 {
            self.at + Duration::from_secs_f64(offset_ms / 1000.0)
        } else {
            self.at
                .checked_sub(Duration::from_secs_f64(-offset_ms / 1000.0))
                .unwrap_or(self.at)
        }
    }
}

/// One period's worth of processing on one worker.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
struct Bin {
    processed: u64,
    delay_sum_ms: f64,
    delay_max_ms: f64,
}

/// What one worker measured.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct WorkerFigures {
    read: u64,
    processed: u64,
    unfinished: u64,
    asked: u64,
    refusals: u64,
    /// Seconds from the start to the last record processed.
    last_processed_s: f64,
    delays_us: Vec<u64>,
    bins: Vec<Bin>,
    /// The loop's periods (worker 0).
    periods: Vec<ThrottlePeriod>,
}

/// The costly stage's books on one worker.
struct Stage {
    started: Instant,
    wall: Wall,
    duration: Duration,
    period: Duration,
    cost: Cell<BusyWork>,
    figures: RefCell<WorkerFigures>,
}

impl Stage {
    /// Spends the record's cost and records its delay; after the run's
    /// duration, counts it as unfinished instead.
    fn work(&self, stamp: u64) {
        let elapsed = self.started.elapsed();
        let mut figures = self.figures.borrow_mut();
        if elapsed >= self.duration {
            figures.unfinished += 1;
            return;
        }
        self.cost.get().run();
        let delay_ms = (self.wall.now_ms() - stamp as f64).max(0.0);
        let bin = (elapsed.as_secs_f64() / self.period.as_secs_f64()) as usize;
        if figures.bins.len() <= bin {
            figures.bins.resize(bin + 1, Bin::default());
        }
        let entry = &mut figures.bins[bin];
        entry.processed += 1;
        entry.delay_sum_ms += delay_ms;
        entry.delay_max_ms = entry.delay_max_ms.max(delay_ms);
        figures.processed += 1;
        figures.last_processed_s = elapsed.as_secs_f64();
        figures.delays_us.push((delay_ms * 1000.0) as u64);
    }
}

/// Longest the stage works per activation: the backlog stays visible in
/// the output frontier, and the worker keeps reading and running the loop.
const SLICE: Duration = Duration::from_millis(2);

/// One worker: the dataflow, then its share of the records.
fn worker(worker: &mut Worker, args: &Args, lines: Option<Arc<Vec<String>>>) -> WorkerFigures {
    let (index, peers) = (worker.index(), worker.peers());
    let wall = Wall::new();
    let target = Duration::from_secs_f64(args.target_ms / 1000.0);
    let mut settings = LoopSettings::new(target).with_clock(move |stamp: &u64| wall.instant_of(*stamp));
    if let Some(period_ms) = args.period_ms {
        settings = settings.with_period(Duration::from_secs_f64(period_ms / 1000.0));
    }
    // The report's periods cover the whole run.
    settings.history = settings
        .history
        .max((args.duration_s / settings.period.as_secs_f64()) as usize + 1);
    let stage = Rc::new(Stage {
        started: Instant::now(),
        wall,
        duration: Duration::from_secs_f64(args.duration_s),
        period: settings.period,
        cost: Cell::new(BusyWork::new(Duration::from_secs_f64(args.cost_us / 1e6))),
        figures: RefCell::default(),
    });
    let mut input = InputHandle::new();
    // The end of the dataflow, whose frontier the loop measures.
    let output = ProbeHandle::new();
    let exchanged = args.readers.exchanged();
    let throttle = worker.dataflow::<u64, _, _>(|scope| {
        let (records, throttle) = scope
            .input_from(&mut input)
            .throttle_loop(&settings, Auto::default(), &output);
        // Few readers: the records spread over every worker.
        let records = if exchanged {
            records.exchange(|line: &String| key_hash(line))
        } else {
            records
        };
        let working = Rc::clone(&stage);
        records
            .time_sliced("Work", SLICE, move |stamp: &u64, _line: String| {
                working.work(*stamp);
                None::<()>
            })
            .probe_with(&output);
        throttle
    });

    // This worker's records: its share of the file or of `--records`, or
    // generated without end while it has a share.
    let share = args.readers.share(index, peers);
    let before: f64 = (0..index).map(|i| args.readers.share(i, peers)).sum();
    let part = |total: u64| {
        let first = (before * total as f64).round() as u64;
        let last = if index + 1 == peers {
            total
        } else {
            ((before + share) * total as f64).round() as u64
        };
        first..last
    };
    let mut source: Box<dyn Iterator<Item = String>> = match (&lines, args.records) {
        (Some(lines), _) => {
            let range = part(lines.len() as u64);
            let lines = Arc::clone(lines);
            Box::new(range.map(move |n| lines[n as usize].clone()))
        }
        (None, Some(total)) => Box::new(part(total).map(|n| n.to_string())),
        (None, None) if share > 0.0 => Box::new((index as u64..).step_by(peers).map(|n| n.to_string())),
        (None, None) => Box::new(std::iter::empty()),
    };
    let batch = ((args.batch as f64 * share * peers as f64).ceil() as usize).max(1);
    let mut pending: VecDeque<String> = VecDeque::with_capacity(batch);
    let (mut read, mut fetched) = (0u64, 0u64);
    // A worker with no share reads nothing.
    let mut exhausted = share == 0.0;
    loop {
        let elapsed = stage.started.elapsed();
        if elapsed >= stage.duration || (exhausted && pending.is_empty()) {
            break;
        }
        if let Some(step) = args.cost_step.filter(|step| elapsed.as_secs_f64() >= step.at_s) {
            stage
                .cost
                .set(BusyWork::new(Duration::from_secs_f64(step.cost_us / 1e6)));
        }
        // What has arrived by now, at most a batch waiting.
        let arrived = args
            .arrival_rate
            .map_or(u64::MAX, |rate| (rate * share * elapsed.as_secs_f64()) as u64);
        while pending.len() < batch && fetched < arrived && !exhausted {
            match source.next() {
                Some(record) => {
                    pending.push_back(record);
                    fetched += 1;
                }
                None => exhausted = true,
            }
        }
        let allowed = match args.source {
            Source::Throttle => throttle.take(pending.len()),
            Source::Unlimited => pending.len(),
            Source::Fixed(rate) => {
                let due = (rate * share * elapsed.as_secs_f64()) as u64;
                (due.saturating_sub(read) as usize).min(pending.len())
            }
        };
        // Sent records are stamped with the millisecond they were read; a
        // worker that sends nothing still moves its input on, or its
        // capability would hold the output frontier back.
        let stamp = wall.now_ms() as u64;
        if *input.time() < stamp {
            input.advance_to(stamp);
        }
        for record in pending.drain(..allowed) {
            input.send(record);
        }
        read += allowed as u64;
        // Held back, with nothing else to do: park until the throttle allows
        // a record (or the dataflow has work).
        let wait = match args.source {
            Source::Throttle if allowed == 0 && !pending.is_empty() => Some(throttle.wait()),
            _ => Some(Duration::ZERO),
        };
        worker.step_or_park(wait);
    }
    drop(input);
    while !output.done() {
        worker.step_or_park(None);
    }
    let throttled = throttle.figures();
    let mut figures = stage.figures.take();
    figures.read = read;
    (figures.asked, figures.refusals) = (throttled.asked, throttled.refusals);
    if index == 0 && args.source == Source::Throttle {
        figures.periods = throttled.periods;
    }
    figures
}

/// The report of one run.
#[derive(Debug, Serialize)]
pub(crate) struct Report {
    pub(crate) source: String,
    pub(crate) target_ms: f64,
    pub(crate) period_ms: f64,
    pub(crate) cost_us: f64,
    pub(crate) cost_step: Option<CostStep>,
    pub(crate) workers: usize,
    pub(crate) readers: String,
    pub(crate) duration_s: f64,
    pub(crate) arrival_rate: Option<f64>,
    /// Records sent into the dataflow.
    pub(crate) read: u64,
    /// Records the costly stage worked on within the run.
    pub(crate) processed: u64,
    /// Records read and not yet processed when the run ended.
    pub(crate) unfinished: u64,
    /// Always 0: a throttle drops nothing.
    pub(crate) dropped: u64,
    /// Processed records per second, from the start to the last processed.
    pub(crate) processed_per_s: f64,
    /// Delays of processed records, from their read to the output, ms.
    pub(crate) delay_ms: LatencySummary,
    pub(crate) mean_delay_ms: f64,
    /// Processed records whose delay was over the target.
    pub(crate) over_target: f64,
    /// Records the sources asked the throttle for (a refused record asked again counts again).
    pub(crate) asked: u64,
    /// Calls of the throttle that allowed fewer records than asked.
    pub(crate) refusals: u64,
    /// Periods in which some reader was refused records.
    pub(crate) limited_periods: usize,
    pub(crate) periods: Vec<PeriodRow>,
}

/// One period of the run, over all workers.
#[derive(Debug, Serialize)]
pub(crate) struct PeriodRow {
    /// When it ended, s since the start.
    pub(crate) end_s: f64,
    /// The rate the controller set for it, records/s over all workers: what
    /// the readers' allowances add up to while the dataflow is overloaded
    /// (the throttle holds nothing back while it keeps up); null: no
    /// decision yet, or not throttled.
    pub(crate) allowance: Option<f64>,
    /// Whether some reader was refused records (in the loop's period that ended last).
    pub(crate) limited: bool,
    /// Records processed in it, per second.
    pub(crate) processed: f64,
    /// The mean and largest delay of the records processed in it, ms.
    pub(crate) delay_ms: f64,
    pub(crate) max_delay_ms: f64,
}

fn assemble(args: &Args, workers: usize, figures: Vec<WorkerFigures>) -> Report {
    let period_s = args
        .period_ms
        .unwrap_or_else(|| (args.target_ms / 3.0).clamp(1.0, 100.0))
        / 1000.0;
    let read: u64 = figures.iter().map(|f| f.read).sum();
    let processed: u64 = figures.iter().map(|f| f.processed).sum();
    let delays: Vec<u64> = figures.iter().flat_map(|f| f.delays_us.iter().copied()).collect();
    let over = delays.iter().filter(|&&d| d as f64 > args.target_ms * 1000.0).count();
    let span_s = figures.iter().map(|f| f.last_processed_s).fold(0.0, f64::max).max(1e-9);
    let loop_periods = figures.first().map(|f| f.periods.clone()).unwrap_or_default();
    let bins = figures.iter().map(|f| f.bins.len()).max().unwrap_or(0);
    let periods = (0..bins)
        .map(|k| {
            let end_s = (k + 1) as f64 * period_s;
            let (mut count, mut sum, mut max) = (0u64, 0.0, 0.0f64);
            for bin in figures.iter().filter_map(|f| f.bins.get(k)) {
                count += bin.processed;
                sum += bin.delay_sum_ms;
                max = max.max(bin.delay_max_ms);
            }
            // The loop's last decision before the period's end.
            let decided = loop_periods.iter().rev().find(|p| p.end.as_secs_f64() <= end_s);
            PeriodRow {
                end_s,
                allowance: loop_periods
                    .iter()
                    .rev()
                    .filter(|p| p.end.as_secs_f64() <= end_s)
                    .find_map(|p| p.allowance),
                limited: decided.is_some_and(|p| p.limited),
                processed: count as f64 / period_s,
                delay_ms: if count > 0 { sum / count as f64 } else { 0.0 },
                max_delay_ms: max,
            }
        })
        .collect();
    Report {
        source: args.source.to_string(),
        target_ms: args.target_ms,
        period_ms: period_s * 1000.0,
        cost_us: args.cost_us,
        cost_step: args.cost_step,
        workers,
        readers: args.readers.to_string(),
        duration_s: args.duration_s,
        arrival_rate: args.arrival_rate,
        read,
        processed,
        unfinished: figures.iter().map(|f| f.unfinished).sum(),
        dropped: 0,
        processed_per_s: processed as f64 / span_s.min(args.duration_s),
        delay_ms: LatencySummary::from_micros(&delays),
        mean_delay_ms: if delays.is_empty() {
            0.0
        } else {
            delays.iter().sum::<u64>() as f64 / delays.len() as f64 / 1000.0
        },
        over_target: if delays.is_empty() {
            0.0
        } else {
            over as f64 / delays.len() as f64
        },
        asked: figures.iter().map(|f| f.asked).sum(),
        refusals: figures.iter().map(|f| f.refusals).sum(),
        limited_periods: loop_periods.iter().filter(|p| p.limited).count(),
        periods,
    }
}

//! The shedding loop as one operator: placed where records enter a
//! dataflow, it drops what its controller asks, measures the delay at the
//! output the program cares about (through that output's probe), and runs
//! the controller every period, waking itself with timely's activations.
//!
//! What it measures, each on its own worker:
//! - **arrivals** and **admitted** records: the records it sees and passes;
//! - **processed** records: those it admitted at times the output frontier
//!   has passed (a record is done when its time is complete at the output);
//! - the **frontier delay**: how long ago the oldest incomplete time at the
//!   output began, sampled at every activation and averaged over the period.
//!   When a time began is the [`Clock`]'s business: by default the moment
//!   this operator saw that time's first record, or a function of the
//!   timestamp (for timestamps that are themselves instants, such as
//!   milliseconds since a known start).

use std::cell::RefCell;
use std::collections::{BTreeMap, VecDeque};
use std::rc::Rc;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::SeedableRng;
use serde::{Deserialize, Serialize};
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::Pipeline;
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::Capability;
use timely::dataflow::{ProbeHandle, StreamVec};
use timely::order::TotalOrder;
use timely::progress::Timestamp;
use timely::Bincode;

use super::actuator::{Actuation, RateTracker};
use super::controller::{drop_fraction, Controller, PeriodSample};
use super::predictor::{DelayPredictor, Prediction};
use super::sharing::{own_part, Combined, Periods, Share};
use super::shedder::{drop_share, ShedMode};

/// When a timestamp began, for the frontier delay.
#[derive(Clone, Default)]
pub enum Clock<T> {
    /// When this operator saw the first record of that time: right for
    /// epochs that are batches, numbered as they open.
    #[default]
    FirstRecord,
    /// A function of the timestamp, e.g. `start + t ms`.
    Stamp(Rc<dyn Fn(&T) -> Instant>),
}

/// Settings of a shedding loop.
#[derive(Clone)]
pub struct LoopSettings<T> {
    /// D_t: the delay the loop keeps admitted records under.
    pub target: Duration,
    /// W: how often the controller runs.
    pub period: Duration,
    /// What delay the controller sees: the measurement or the Smith prediction.
    pub prediction: Prediction,
    /// How records are chosen for dropping.
    pub mode: ShedMode,
    /// Seed of random choices (mixed with the worker index).
    pub seed: u64,
    /// How the controller's rate reaches the drops; `None`: the
    /// controller's own way (see [`Controller::actuation`]).
    pub actuation: Option<Actuation>,
    /// When a timestamp began.
    pub clock: Clock<T>,
    /// One loop across workers (the default): every worker's loop hears
    /// the others' rates each period, on a channel of its own outside
    /// progress tracking, so every controller sees the same sample (the
    /// workers' mean rates) and every worker drops the same fraction of its
    /// arrivals, whichever workers read. `false`: each worker's loop runs
    /// on its own rates alone, and readers that admit more than their
    /// share are not told.
    pub global: bool,
}

impl<T> LoopSettings<T> {
    /// A target delay; a period of a third of it, at most 100 ms; the Smith
    /// prediction, random drops, the first-record clock, one loop across
    /// workers.
    pub fn new(target: Duration) -> Self {
        LoopSettings {
            target,
            period: (target / 3).clamp(Duration::from_millis(1), Duration::from_millis(100)),
            prediction: Prediction::Smith,
            mode: ShedMode::Random,
            seed: 0,
            actuation: None,
            clock: Clock::FirstRecord,
            global: true,
        }
    }

    /// The same with the controller running every `period`.
    pub fn with_period(self, period: Duration) -> Self {
        LoopSettings { period, ..self }
    }

    /// The same with timestamps read by `clock`.
    pub fn with_clock(self, clock: impl Fn(&T) -> Instant + 'static) -> Self {
        LoopSettings {
            clock: Clock::Stamp(Rc::new(clock)),
            ..self
        }
    }
}

/// One period as the loop saw it: the sample its controller got (under
/// [`LoopSettings::global`], the workers' mean rates).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LoopPeriod {
    /// When the period ended, since the loop started.
    pub end: Duration,
    /// What the controller was given.
    pub sample: PeriodSample,
    /// The delay it controlled on (the prediction, or the measurement), ms.
    pub controlled_delay_ms: f64,
    /// The drop fraction during the period.
    pub drop_fraction: f64,
}

/// What a loop did so far on this worker.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LoopFigures {
    /// Records that reached the loop.
    pub arrived: u64,
    /// Records it dropped.
    pub dropped: u64,
    /// Admitted records whose time the output has completed. Read through
    /// [`LoopHandle::figures`], which looks at the output first, it is
    /// exact at any moment: once the output is done,
    /// `arrived = dropped + processed`, however the input ended.
    pub processed: u64,
    /// Admitted records a work stage on this worker dropped under the
    /// loop's [`Deadline`](super::Deadline) because their time began at
    /// least the target ago. They are counted in `processed` by the worker
    /// that admitted them (their time completes like any other), so over
    /// all workers `processed − late` records were worked on and
    /// `dropped + late` lost.
    pub late: u64,
    /// One row per period.
    pub periods: Vec<LoopPeriod>,
}

/// The program's view of a loop.
#[derive(Clone)]
pub struct LoopHandle {
    figures: Rc<RefCell<LoopFigures>>,
    /// Counts what the output has completed since the loop last looked.
    settle: Rc<dyn Fn()>,
}

impl LoopHandle {
    /// What the loop did so far, with every admitted record the output has
    /// completed counted as processed (also after the loop's input has
    /// ended and timely has retired the loop).
    pub fn figures(&self) -> LoopFigures {
        (self.settle)();
        self.figures.borrow().clone()
    }

    /// The figures the loop keeps, for a [`Deadline`](super::Deadline) to count in.
    pub(crate) fn shared_figures(&self) -> Rc<RefCell<LoopFigures>> {
        Rc::clone(&self.figures)
    }
}

/// Admitted records per time not yet complete at the output, with when the
/// loop first saw each time; shared by the loop and its handle, so that
/// completions are counted whoever looks first.
struct Ledger<T> {
    pending: BTreeMap<T, (u64, Instant)>,
    /// Admitted records whose time has completed, since the start.
    processed: u64,
}

impl<T: Timestamp + TotalOrder> Ledger<T> {
    fn admit(&mut self, time: &T, now: Instant, admitted: u64) {
        self.pending.entry(time.clone()).or_insert((0, now)).0 += admitted;
    }

    /// Moves what completed before the output's least time `least` (`None`:
    /// everything) to `processed`; returns how many.
    fn settle(&mut self, least: Option<&T>) -> u64 {
        let still = match least {
            Some(least) => self.pending.split_off(least),
            None => BTreeMap::new(),
        };
        let done: u64 = std::mem::replace(&mut self.pending, still)
            .values()
            .map(|(n, _)| n)
            .sum();
        self.processed += done;
        done
    }
}

/// A closed shedding loop on a stream.
pub trait ShedLoop<'scope, T: Timestamp + TotalOrder, D> {
    /// Admits records under `controller`'s rate so that the delay at the
    /// output probed by `output` stays near `settings.target`, and returns
    /// the admitted records with a handle on the loop's figures. The
    /// controller runs every `settings.period` on each worker, on that
    /// worker's rates and the shared output frontier. `utility` ranks
    /// records under [`ShedMode::Semantic`] (lowest dropped first); it is
    /// not called under [`ShedMode::Random`].
    ///
    /// ```
    /// use std::time::Duration;
    /// use timely::dataflow::operators::{Input, Inspect, Probe};
    /// use timely::dataflow::ProbeHandle;
    /// use equipoise::shed::{default_poles, nominal_pi};
    /// use equipoise::shed::Prediction;
    /// use equipoise::shed::{LoopSettings, Pi, ShedLoop};
    ///
    /// timely::execute(timely::Config::process(2), |worker| {
    ///     let settings = LoopSettings::new(Duration::from_millis(300)).with_period(Duration::from_millis(100));
    ///     // PI designed for 100 ms periods and about 10^6 records/s per worker.
    ///     let params = nominal_pi(100.0, 1e6, default_poles(Prediction::Smith));
    ///     let controller = Pi::new(params, 300.0);
    ///     let mut input = timely::dataflow::InputHandle::new();
    ///     let output = ProbeHandle::new();
    ///     let handle = worker.dataflow::<u64, _, _>(|scope| {
    ///         let (admitted, handle) = scope
    ///             .input_from(&mut input)
    ///             .shed_loop(&settings, controller, &output, |_: &u64| 0.0);
    ///         // The user's own dataflow; its output is what the loop watches.
    ///         admitted.inspect(|x| assert!(*x < 1000)).probe_with(&output);
    ///         handle
    ///     });
    ///     for epoch in 0..10u64 {
    ///         for x in 0..100 {
    ///             input.send(epoch * 100 + x);
    ///         }
    ///         input.advance_to(epoch + 1);
    ///         worker.step_while(|| output.less_than(input.time()));
    ///     }
    ///     let figures = handle.figures();
    ///     assert_eq!(figures.arrived, 1000);
    ///     assert_eq!(figures.dropped, 0); // no overload: nothing dropped
    /// })
    /// .unwrap();
    /// ```
    fn shed_loop(
        self,
        settings: &LoopSettings<T>,
        controller: impl Controller + 'static,
        output: &ProbeHandle<T>,
        utility: impl Fn(&D) -> f64 + 'static,
    ) -> (StreamVec<'scope, T, D>, LoopHandle);
}

/// The time constant of the held-rate actuator's arrival-rate estimate:
/// short against any sampling period, long against a worker's step.
const ARRIVAL_WINDOW_MS: f64 = 10.0;

/// Delay samples per period (the loop also samples at every arrival).
const SAMPLES_PER_PERIOD: u32 = 10;

/// The shortest window the processed rate is measured over. Completions
/// are seen when the output frontier moves, and with several workers it
/// moves in steps of tens of milliseconds: over one short period the rate
/// reads 0 in one and twice capacity in the next.
const RATE_WINDOW: Duration = Duration::from_millis(500);

impl<'scope, T: Timestamp + TotalOrder, D: Clone + 'static> ShedLoop<'scope, T, D> for StreamVec<'scope, T, D> {
    fn shed_loop(
        self,
        settings: &LoopSettings<T>,
        mut controller: impl Controller + 'static,
        output: &ProbeHandle<T>,
        utility: impl Fn(&D) -> f64 + 'static,
    ) -> (StreamVec<'scope, T, D>, LoopHandle) {
        let scope = self.scope();
        let figures = Rc::new(RefCell::new(LoopFigures::default()));
        let ledger = Rc::new(RefCell::new(Ledger {
            pending: BTreeMap::new(),
            processed: 0,
        }));
        let output = output.clone();
        let settle = {
            let (ledger, figures, output) = (Rc::clone(&ledger), Rc::clone(&figures), output.clone());
            move || {
                let least = output.with_frontier(|f| f.first().cloned());
                figures.borrow_mut().processed += ledger.borrow_mut().settle(least.as_ref());
            }
        };
        let handle = LoopHandle {
            figures: Rc::clone(&figures),
            settle: Rc::new(settle.clone()),
        };
        let settings = settings.clone();
        let (me, peers) = (scope.index(), scope.peers());
        let worker = me as u64;
        let stream =
            self.unary_frontier::<CapacityContainerBuilder<Vec<D>>, _, _, _>(Pipeline, "ShedLoop", move |_, info| {
                // The peers' rates, outside progress tracking: arrivals wake the loop.
                let mut channel = settings.global.then(|| {
                    let timely_worker = scope.worker();
                    let identifier = timely_worker.new_identifier();
                    timely_worker.broadcast::<Bincode<Share>>(identifier, Rc::clone(&info.address))
                });
                // Without sharing, a loop of one: it decides on its own periods.
                let (workers, sharer) = if channel.is_some() { (peers, me) } else { (1, 0) };
                let mut periods = Periods::new(workers, sharer, PATIENCE_PERIODS);
                let mut ended = 0u64;
                controller.begin(settings.target, settings.period, settings.prediction);
                let activator = scope.activator_for(info.address);
                let tick = (settings.period / SAMPLES_PER_PERIOD).max(Duration::from_millis(1));
                activator.activate_after(tick);
                let mut rng = SmallRng::seed_from_u64(settings.seed ^ worker.wrapping_mul(0x9e37_79b9_7f4a_7c15));
                let mut ranked = Vec::new();
                let mut arrivals: Vec<(Capability<T>, Vec<D>)> = Vec::new();
                let mut meter = Meter::new(&settings, ledger);
                let actuation = settings.actuation.unwrap_or_else(|| controller.actuation());
                let mut predictor = DelayPredictor::default();
                let mut tracker = RateTracker::new(ARRIVAL_WINDOW_MS);
                let mut fraction = 0.0;
                let threshold_ms = (OVERLOAD_SHARE * settings.target.as_secs_f64()).max(tick.as_secs_f64()) * 1000.0;
                let guarded = controller.guarded();
                let mut last = PeriodSample::default();
                // The longest this operator went unscheduled in the period.
                let (mut previous, mut gap) = (Instant::now(), Duration::ZERO);
                move |(input, frontier), session| {
                    let now = Instant::now();
                    gap = gap.max(now.saturating_duration_since(previous));
                    previous = now;
                    if let Some((_, pull)) = channel.as_mut() {
                        while let Some(share) = pull.recv() {
                            periods.hear(share.payload);
                        }
                    }
                    // All of this activation's arrivals first: the held
                    // rate's arrival estimate must see them as one interval.
                    input.for_each_stamp(|cap, batches| {
                        if let Some(cap) = cap.retain_least(0) {
                            arrivals.extend(batches.map(|batch| (cap.clone(), std::mem::take(batch))));
                        }
                    });
                    if !arrivals.is_empty() && actuation == Actuation::Rate {
                        let count = arrivals.iter().map(|(_, batch)| batch.len()).sum::<usize>();
                        fraction = tracker.observe(count as f64, meter.since_observed(now));
                    }
                    let mut figures_now = figures.borrow_mut();
                    let keeping_up = guarded && !overloaded(meter.age_ms, threshold_ms, &last);
                    let shed = if keeping_up { 0.0 } else { fraction };
                    for (cap, mut batch) in arrivals.drain(..) {
                        let arrived = batch.len() as u64;
                        let dropped =
                            drop_share(&mut batch, shed, settings.mode, &utility, &mut rng, &mut ranked) as u64;
                        figures_now.arrived += arrived;
                        figures_now.dropped += dropped;
                        meter.admit(cap.time(), now, arrived, arrived - dropped);
                        session.session(&cap).give_container(&mut batch);
                    }
                    drop(figures_now);
                    settle();
                    let least = output.with_frontier(|f| f.first().cloned());
                    meter.observe(least.as_ref(), now);
                    let late = figures.borrow().late;
                    if let Some(own) = meter.period_end(now, late) {
                        // A period in which the process stood still measured the
                        // stall, not the dataflow: a guarded controller's decision
                        // stays as it was.
                        let share = Share {
                            worker: sharer,
                            period: ended,
                            sample: own,
                            stalled: std::mem::take(&mut gap) >= tick * STALL_TICKS,
                        };
                        ended += 1;
                        periods.hear(share);
                        if let Some((push, _)) = channel.as_mut() {
                            push.send(Bincode::from(share));
                            push.done();
                        }
                    }
                    while let Some(Combined { sample, own, stalled }) = periods.next_ready(ended) {
                        let mut controlled = sample;
                        if settings.prediction == Prediction::Smith {
                            controlled.delay_ms = predictor.predict(&sample);
                        }
                        if !(guarded && stalled) {
                            let admitted = controller.admitted_rate(&controlled);
                            last = sample;
                            match actuation {
                                // This worker's part of the rate: the same
                                // fraction of its arrivals as every worker drops.
                                Actuation::Rate => tracker.set_admitted(own_part(admitted, &own, &sample)),
                                Actuation::Fraction => fraction = drop_fraction(admitted, sample.arrival_rate),
                            }
                        }
                        figures.borrow_mut().periods.push(LoopPeriod {
                            end: now - meter.started,
                            sample,
                            controlled_delay_ms: controlled.delay_ms,
                            drop_fraction: drop_fraction(sample.admitted_rate, sample.arrival_rate),
                        });
                    }
                    // Keep waking until the input is done and the output has
                    // completed everything admitted.
                    if !(frontier.is_empty() && least.is_none()) {
                        activator.activate_after(tick);
                    }
                }
            });
        (stream, handle)
    }
}

/// Periods a loop waits for a peer's share before deciding without it:
/// the peer has stopped (its input ended), and what it admitted is done.
const PATIENCE_PERIODS: u64 = 3;

/// Sampling ticks the loop may go unscheduled in a period before the
/// period counts as a stall of the process.
const STALL_TICKS: u32 = 5;

/// The share of the target the measured delay must reach before anything
/// is dropped (or one sampling tick, if longer).
const OVERLOAD_SHARE: f64 = 0.05;

/// How much faster than arrivals the dataflow must process, over a period,
/// for the processed rate to say it keeps up: the rate read over a window
/// of frontier steps is noisy, and where arrivals cross the capacity a
/// delay held near the target must stay under control.
const KEEPING_UP_MARGIN: f64 = 0.1;

/// Whether the measurements, not only the controller's prediction, say the
/// dataflow is overloaded now: the frontier delay last sampled is at least
/// `threshold_ms` (it is not keeping up), and over the last period it did
/// not process clearly more records than arrived. Checked at every batch, so a
/// decision made on a period that misled the prediction (a stall of the
/// process leaves a burst of arrivals, a processed rate read low and a
/// stale delay sample at the period's end) drops nothing once the
/// dataflow has caught up, while a real overload, whose delay grows, is
/// shed as soon as the delay passes the threshold.
fn overloaded(age_ms: f64, threshold_ms: f64, last: &PeriodSample) -> bool {
    age_ms >= threshold_ms && last.arrival_rate > last.processed_rate * (1.0 - KEEPING_UP_MARGIN)
}

/// The loop's measurements: the ledger of admitted records, and the
/// running sums of the current period.
struct Meter<T> {
    clock: Clock<T>,
    period: Duration,
    started: Instant,
    last_observed: Instant,
    ledger: Rc<RefCell<Ledger<T>>>,
    period_start: Instant,
    arrived: u64,
    admitted: u64,
    /// Completions so far, at the ends of the periods of the last
    /// [`RATE_WINDOW`] (and one before), oldest first.
    completed: VecDeque<(Instant, f64)>,
    delay_sum_ms: f64,
    samples: u64,
    age_ms: f64,
    max_age_ms: f64,
    /// The delay at the period's start, and each sample of the period with
    /// its time since the start (for the spread around the trend).
    start_age_ms: f64,
    ages: Vec<(f64, f64)>,
}

impl<T: Timestamp + TotalOrder> Meter<T> {
    fn new(settings: &LoopSettings<T>, ledger: Rc<RefCell<Ledger<T>>>) -> Self {
        let now = Instant::now();
        Meter {
            clock: settings.clock.clone(),
            period: settings.period,
            started: now,
            last_observed: now,
            ledger,
            period_start: now,
            arrived: 0,
            admitted: 0,
            completed: VecDeque::from([(now, 0.0)]),
            delay_sum_ms: 0.0,
            samples: 0,
            age_ms: 0.0,
            max_age_ms: 0.0,
            start_age_ms: 0.0,
            ages: Vec::new(),
        }
    }

    /// Milliseconds since the last arrivals were observed.
    fn since_observed(&mut self, now: Instant) -> f64 {
        let elapsed = now.saturating_duration_since(self.last_observed);
        self.last_observed = now;
        elapsed.as_secs_f64() * 1000.0
    }

    fn admit(&mut self, time: &T, now: Instant, arrived: u64, admitted: u64) {
        self.arrived += arrived;
        self.admitted += admitted;
        self.ledger.borrow_mut().admit(time, now, admitted);
    }

    /// Takes in the output frontier's least time (`None`: all done), after
    /// the ledger has settled what completed: samples the delay.
    fn observe(&mut self, least: Option<&T>, now: Instant) {
        let began = match (&self.clock, least) {
            (_, None) => None,
            (Clock::Stamp(clock), Some(least)) => Some(clock(least)),
            (Clock::FirstRecord, Some(_)) => self.ledger.borrow().pending.values().next().map(|(_, seen)| *seen),
        }
        // Nothing entered before the loop did (an input still at its
        // initial time would otherwise read as decades old).
        .map(|began| began.max(self.started));
        self.age_ms = began.map_or(0.0, |began| now.saturating_duration_since(began).as_secs_f64() * 1000.0);
        self.delay_sum_ms += self.age_ms;
        self.max_age_ms = self.max_age_ms.max(self.age_ms);
        let since_start = now.saturating_duration_since(self.period_start).as_secs_f64() * 1000.0;
        self.ages.push((since_start, self.age_ms));
        self.samples += 1;
    }

    /// At a period's end, the sample for the controller; the sums start
    /// again. `late`: the records this worker's work stage has dropped
    /// under the loop's deadline so far, which the processed rate leaves
    /// out (their times complete without costing any work: counted, they
    /// would read as capacity the dataflow does not have).
    fn period_end(&mut self, now: Instant, late: u64) -> Option<PeriodSample> {
        let length = now.saturating_duration_since(self.period_start);
        if length < self.period || self.samples == 0 {
            return None;
        }
        let seconds = length.as_secs_f64();
        let total = self.ledger.borrow().processed as f64 - late as f64;
        self.completed.push_back((now, total));
        while self.completed.len() > 2
            && now.saturating_duration_since(self.completed[1].0) >= RATE_WINDOW.max(2 * self.period)
        {
            self.completed.pop_front();
        }
        let (since, before) = self.completed[0];
        let window = now.saturating_duration_since(since).as_secs_f64().max(seconds);
        let length_ms = seconds * 1000.0;
        let spread_ms = spread_above_trend(self.start_age_ms, self.age_ms, length_ms, &self.ages);
        let sample = PeriodSample {
            delay_ms: self.delay_sum_ms / self.samples as f64,
            arrival_rate: self.arrived as f64 / seconds,
            admitted_rate: self.admitted as f64 / seconds,
            processed_rate: ((total - before) / window).max(0.0),
            age_ms: self.age_ms,
            max_age_ms: self.max_age_ms,
            spread_ms,
            length_ms,
        };
        self.start_age_ms = self.age_ms;
        self.ages.clear();
        self.period_start = now;
        (self.arrived, self.admitted, self.samples) = (0, 0, 0);
        self.delay_sum_ms = 0.0;
        self.max_age_ms = 0.0;
        Some(sample)
    }
}

/// The most any `(ms since the period's start, delay)` sample rose above
/// the straight line from `start` to `end` over `length_ms` (0 if none did).
fn spread_above_trend(start: f64, end: f64, length_ms: f64, ages: &[(f64, f64)]) -> f64 {
    let trend = |at: f64| start + (end - start) * at / length_ms;
    ages.iter().map(|&(at, age)| age - trend(at)).fold(0.0, f64::max)
}

#[cfg(test)]
mod tests {
    use super::spread_above_trend;

    #[test]
    fn the_spread_is_the_noise_around_the_trend_not_the_trend() {
        // A delay falling steadily from 1 700 to 1 000 ms over a 1 s
        // period: its worst sample is 350 ms over its mean, yet no noise.
        let falling: Vec<(f64, f64)> = (0..=10).map(|i| (i as f64 * 100.0, 1700.0 - i as f64 * 70.0)).collect();
        assert!(spread_above_trend(1700.0, 1000.0, 1000.0, &falling) < 1e-9);
        // The same with one stall that held the delay 120 ms above the line.
        let mut stalled = falling.clone();
        stalled[4].1 += 120.0;
        assert!((spread_above_trend(1700.0, 1000.0, 1000.0, &stalled) - 120.0).abs() < 1e-9);
        // A flat delay with samples under and over it: the highest one.
        let flat = [(10.0, 290.0), (50.0, 340.0), (90.0, 300.0)];
        assert_eq!(spread_above_trend(300.0, 300.0, 100.0, &flat), 40.0);
        assert_eq!(spread_above_trend(300.0, 300.0, 100.0, &[]), 0.0);
    }
}

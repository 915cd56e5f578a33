//! The shedding loop as one operator: placed where records enter a
//! dataflow, it drops what its controller asks, measures the delay at the
//! output the program cares about (through that output's probe), and runs
//! the controller every period, waking itself with timely's activations
//! (the measuring, sharing and control it has in common with the throttle
//! are in `loop_core`).
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

use std::cell::{Cell, RefCell};
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

use crate::common::keep_recent;

use super::actuator::{Actuation, RateTracker};
use super::controller::{drop_fraction, Controller, PeriodSample};
use super::events::LoopKind;
use super::loop_core::{settle, Ledger, LoopCore};
use super::predictor::Prediction;
use super::sharing::{own_part, Combined};
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

/// Settings of a loop: a shedding loop, or a throttle's.
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
    /// arrivals (a throttle: the readers' allowances add up to the rate),
    /// whichever workers read. `false`: each worker's loop runs on its own
    /// rates alone, and readers that admit more than their share are not
    /// told.
    pub global: bool,
    /// How many recent periods the loop's figures keep
    /// ([`LoopFigures::periods`], a throttle's `ThrottleFigures::periods`):
    /// at least this many, at most twice as many, so that a loop on a
    /// stream that never ends keeps a bounded history (a row is about
    /// 100 bytes). Every period decided is also a [`LoopEvent`](super::LoopEvent)
    /// in timely's logging, for a program that keeps them all.
    pub history: usize,
}

/// The periods a loop's figures keep by default: a minute at 100 ms.
pub const DEFAULT_HISTORY: usize = 600;

impl<T> LoopSettings<T> {
    /// A target delay; a period of a third of it, at most 100 ms; the Smith
    /// prediction, random drops, the first-record clock, one loop across
    /// workers, the last [`DEFAULT_HISTORY`] periods kept.
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
            history: DEFAULT_HISTORY,
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
    /// One row per period: the most recent [`LoopSettings::history`].
    pub periods: Vec<LoopPeriod>,
}

/// The program's view of a loop.
#[derive(Clone)]
pub struct LoopHandle {
    /// What the loop counts (`processed` is left at 0 here: it is the
    /// ledger's, filled in by [`LoopHandle::figures`]).
    figures: Rc<RefCell<LoopFigures>>,
    /// Counts what the output has completed since the loop last looked;
    /// returns all it has completed.
    settle: Rc<dyn Fn() -> u64>,
    /// Whether the loop's input is more than the output takes now.
    overloaded: Rc<Cell<bool>>,
}

impl LoopHandle {
    /// Whether the loop's input is more than the output takes now: the loop
    /// drops records arriving now (its last decision admits fewer than
    /// arrive, and the measurements do not say the dataflow keeps up), or
    /// the delay it last sampled is over 5 % of the target (at least a
    /// sampling tick) while, over the last period, the dataflow processed
    /// no more of the loop's records than arrived. It stays so until the
    /// delay is under that threshold again (what the loop let in has
    /// drained), and is so until the loop has decided its first period. A
    /// [`Throttle`](super::Throttle) that yields to this loop holds its
    /// source back while this is true.
    pub fn overloaded(&self) -> bool {
        self.overloaded.get()
    }

    pub(crate) fn overloaded_flag(&self) -> Rc<Cell<bool>> {
        Rc::clone(&self.overloaded)
    }

    /// What the loop did so far, with every admitted record the output has
    /// completed counted as processed (also after the loop's input has
    /// ended and timely has retired the loop).
    pub fn figures(&self) -> LoopFigures {
        let processed = (self.settle)();
        LoopFigures {
            processed,
            ..self.figures.borrow().clone()
        }
    }

    /// The figures the loop keeps, for a [`Deadline`](super::Deadline) to count in.
    pub(crate) fn shared_figures(&self) -> Rc<RefCell<LoopFigures>> {
        Rc::clone(&self.figures)
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

impl<'scope, T: Timestamp + TotalOrder, D: Clone + 'static> ShedLoop<'scope, T, D> for StreamVec<'scope, T, D> {
    fn shed_loop(
        self,
        settings: &LoopSettings<T>,
        controller: impl Controller + 'static,
        output: &ProbeHandle<T>,
        utility: impl Fn(&D) -> f64 + 'static,
    ) -> (StreamVec<'scope, T, D>, LoopHandle) {
        let scope = self.scope();
        let figures = Rc::new(RefCell::new(LoopFigures::default()));
        let ledger = Ledger::shared();
        let handle = {
            let (ledger, output) = (Rc::clone(&ledger), output.clone());
            LoopHandle {
                figures: Rc::clone(&figures),
                settle: Rc::new(move || settle(&ledger, &output)),
                overloaded: Rc::new(Cell::new(true)),
            }
        };
        let overloaded = handle.overloaded_flag();
        let (settings, output) = (settings.clone(), output.clone());
        let worker = scope.index() as u64;
        let stream =
            self.unary_frontier::<CapacityContainerBuilder<Vec<D>>, _, _, _>(Pipeline, "ShedLoop", move |_, info| {
                let mut core = LoopCore::new(LoopKind::Shed, scope, &info, &settings, controller, &output, ledger);
                let mut rng = SmallRng::seed_from_u64(settings.seed ^ worker.wrapping_mul(0x9e37_79b9_7f4a_7c15));
                let mut ranked = Vec::new();
                let mut arrivals: Vec<(Capability<T>, Vec<D>)> = Vec::new();
                let actuation = settings.actuation.unwrap_or_else(|| core.controller().actuation());
                let mut tracker = RateTracker::new(ARRIVAL_WINDOW_MS);
                let mut fraction = 0.0;
                // The share of the arrivals the last decision drops; none
                // decided yet: a throttle yielding to this loop waits for
                // the first period's measurements.
                let mut decided = None;
                move |(input, frontier), session| {
                    let now = Instant::now();
                    core.wake(now);
                    // All of this activation's arrivals first: the held
                    // rate's arrival estimate must see them as one interval.
                    input.for_each_stamp(|cap, batches| {
                        if let Some(cap) = cap.retain_least(0) {
                            arrivals.extend(batches.map(|batch| (cap.clone(), std::mem::take(batch))));
                        }
                    });
                    if !arrivals.is_empty() && actuation == Actuation::Rate {
                        let count = arrivals.iter().map(|(_, batch)| batch.len()).sum::<usize>();
                        fraction = tracker.observe(count as f64, core.since_observed(now));
                    }
                    let shed = if core.keeping_up() { 0.0 } else { fraction };
                    let mut figures_now = figures.borrow_mut();
                    for (cap, mut batch) in arrivals.drain(..) {
                        let arrived = batch.len() as u64;
                        let dropped =
                            drop_share(&mut batch, shed, settings.mode, &utility, &mut rng, &mut ranked) as u64;
                        figures_now.arrived += arrived;
                        figures_now.dropped += dropped;
                        core.admit(cap.time(), now, arrived, arrived - dropped);
                        session.session(&cap).give_container(&mut batch);
                    }
                    let late = figures_now.late;
                    drop(figures_now);
                    for decision in core.conclude(now, late, frontier.is_empty()) {
                        let Combined { sample, own, .. } = decision.combined;
                        match (decision.admitted, actuation) {
                            // This worker's part of the rate: the same
                            // fraction of its arrivals as every worker drops.
                            (Some(admitted), Actuation::Rate) => {
                                tracker.set_admitted(own_part(admitted, &own, &sample))
                            }
                            (Some(admitted), Actuation::Fraction) => {
                                fraction = drop_fraction(admitted, sample.arrival_rate)
                            }
                            (None, _) => {}
                        }
                        if let Some(admitted) = decision.admitted {
                            decided = Some(drop_fraction(admitted, sample.arrival_rate));
                        }
                        let period = LoopPeriod {
                            end: decision.end,
                            sample,
                            controlled_delay_ms: decision.controlled_delay_ms,
                            drop_fraction: drop_fraction(sample.admitted_rate, sample.arrival_rate),
                        };
                        keep_recent(&mut figures.borrow_mut().periods, period, settings.history);
                    }
                    // Once overloaded, until what it let in has drained.
                    let dropping = decided.is_none_or(|decided| decided > 0.0 && !core.keeping_up());
                    overloaded.set(dropping || core.overloaded() || overloaded.get() && core.delayed());
                }
            });
        (stream, handle)
    }
}

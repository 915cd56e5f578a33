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

use timely::dataflow::operators::Capability;
use timely::dataflow::{ProbeHandle, StreamVec};
use timely::order::TotalOrder;
use timely::progress::Timestamp;

use crate::common::keep_recent;

use super::actuator::{drop_fraction, Actuation, RateTracker};
use super::controller::Controller;
use super::deadline::Deadline;
use super::drops::{Chooser, Drops};
use super::events::LoopKind;
use super::loop_core::{completion, loop_operator, Act, Decision, Ledger, LoopCore, Passed};
use super::loop_figures::{LoopFigures, LoopPeriod};
use super::settings::{Clock, LoopSettings};
use super::sharing::{own_part, Combined};

/// The program's view of a loop.
pub struct LoopHandle<T> {
    /// What the loop counts (`processed` is left at 0 here: it is the
    /// ledger's, filled in by [`LoopHandle::figures`]).
    figures: Rc<RefCell<LoopFigures>>,
    /// Counts what the output has completed since the loop last looked;
    /// returns all it has completed.
    completed: Rc<dyn Fn() -> u64>,
    /// Whether the loop's input is more than the output takes now.
    overloaded: Rc<Cell<bool>>,
    /// The loop's target and clock, for its [`Deadline`].
    target: Duration,
    clock: Clock<T>,
}

impl<T> Clone for LoopHandle<T> {
    fn clone(&self) -> Self {
        LoopHandle {
            figures: Rc::clone(&self.figures),
            completed: Rc::clone(&self.completed),
            overloaded: Rc::clone(&self.overloaded),
            target: self.target,
            clock: self.clock.clone(),
        }
    }
}

impl<T> LoopHandle<T> {
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
        let processed = (self.completed)();
        LoopFigures {
            processed,
            ..self.figures.borrow().clone()
        }
    }

    /// The loop's target as a [`Deadline`] for a work stage on this worker
    /// ([`TimeSliced::time_sliced_within`](super::TimeSliced::time_sliced_within)):
    /// the stage drops an admitted record whose time began the target ago
    /// by the loop's clock, and counts it as [`LoopFigures::late`].
    pub fn deadline(&self) -> Deadline<T> {
        Deadline::new(self.target, self.clock.clone(), Rc::clone(&self.figures))
    }
}

/// A closed shedding loop on a stream.
pub trait ShedLoop<'scope, T: Timestamp + TotalOrder, D> {
    /// Admits records under `controller`'s rate so that the delay at the
    /// output probed by `output` stays near `settings.target`, dropping
    /// the rest at random ([`Drops::random`]), and returns the admitted
    /// records with a handle on the loop's figures. The controller runs
    /// every `settings.period`, under a shared loop (the default) on the
    /// workers' rates and the shared output frontier.
    ///
    /// ```
    /// use std::time::Duration;
    /// use timely::dataflow::operators::{Input, Inspect, Probe};
    /// use timely::dataflow::ProbeHandle;
    /// use equipoise::shed::design::{default_poles, nominal_pi};
    /// use equipoise::shed::Prediction;
    /// use equipoise::shed::{LoopSettings, Pi, ShedLoop};
    ///
    /// timely::execute(timely::Config::process(2), |worker| {
    ///     let settings = LoopSettings::new(Duration::from_millis(300)).with_period(Duration::from_millis(100));
    ///     // PI designed for 100 ms periods and about 10^6 records/s per worker.
    ///     let controller = Pi::new(nominal_pi(100.0, 1e6, default_poles(Prediction::Smith)));
    ///     let mut input = timely::dataflow::InputHandle::new();
    ///     let output = ProbeHandle::new();
    ///     let handle = worker.dataflow::<u64, _, _>(|scope| {
    ///         let (admitted, handle) = scope.input_from(&mut input).shed_loop(&settings, controller, &output);
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
    ) -> (StreamVec<'scope, T, D>, LoopHandle<T>);

    /// [`ShedLoop::shed_loop`], with the records to drop chosen by `drops`
    /// (e.g. [`Drops::lowest_utility`]).
    fn shed_loop_with(
        self,
        settings: &LoopSettings<T>,
        controller: impl Controller + 'static,
        output: &ProbeHandle<T>,
        drops: Drops<D>,
    ) -> (StreamVec<'scope, T, D>, LoopHandle<T>);
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
    ) -> (StreamVec<'scope, T, D>, LoopHandle<T>) {
        self.shed_loop_with(settings, controller, output, Drops::random())
    }

    fn shed_loop_with(
        self,
        settings: &LoopSettings<T>,
        controller: impl Controller + 'static,
        output: &ProbeHandle<T>,
        drops: Drops<D>,
    ) -> (StreamVec<'scope, T, D>, LoopHandle<T>) {
        let ledger = Ledger::shared();
        let handle = LoopHandle {
            figures: Rc::new(RefCell::new(LoopFigures::default())),
            completed: completion(&ledger, output),
            overloaded: Rc::new(Cell::new(true)),
            // The target the loop runs with (see `LoopSettings`).
            target: settings.sanitized().target,
            clock: settings.clock.clone(),
        };
        let (figures, overloaded) = (Rc::clone(&handle.figures), handle.overloaded_flag());
        let (chooser, history) = (drops.chooser(self.scope().index()), settings.history);
        let stream = loop_operator(
            self,
            LoopKind::Shed,
            settings,
            controller,
            output,
            ledger,
            move |core| Shedding {
                actuation: core.controller().actuation(),
                tracker: RateTracker::new(ARRIVAL_WINDOW_MS),
                fraction: 0.0,
                decided: None,
                chooser,
                figures,
                overloaded,
                history,
            },
        );
        (stream, handle)
    }
}

/// A shedding loop's way of acting: it drops a share of the arrivals.
struct Shedding<D> {
    actuation: Actuation,
    /// The arrival rate, for a held rate's share to drop.
    tracker: RateTracker,
    /// The share of the arrivals to drop while the loop holds anything back.
    fraction: f64,
    /// The share of the arrivals the last decision drops; none decided
    /// yet: a throttle yielding to this loop waits for the first period's
    /// measurements.
    decided: Option<f64>,
    chooser: Chooser<D>,
    figures: Rc<RefCell<LoopFigures>>,
    /// See [`LoopHandle::overloaded`].
    overloaded: Rc<Cell<bool>>,
    /// Periods kept in the figures.
    history: usize,
}

impl<T: Timestamp + TotalOrder, D: 'static, C: Controller> Act<T, D, C> for Shedding<D> {
    fn pass(
        &mut self,
        core: &mut LoopCore<T, C>,
        now: Instant,
        arrivals: &mut Vec<(Capability<T>, Vec<D>)>,
        output: &mut Passed<'_, T, D>,
    ) -> u64 {
        if !arrivals.is_empty() && self.actuation == Actuation::Rate {
            let count = arrivals.iter().map(|(_, batch)| batch.len()).sum::<usize>();
            self.fraction = self.tracker.observe(count as f64, core.since_observed(now));
        }
        let shed = if core.keeping_up() { 0.0 } else { self.fraction };
        let mut figures = self.figures.borrow_mut();
        for (cap, mut batch) in arrivals.drain(..) {
            let arrived = batch.len() as u64;
            let dropped = self.chooser.drop_share(&mut batch, shed) as u64;
            figures.arrived += arrived;
            figures.dropped += dropped;
            core.admit(cap.time(), now, arrived, arrived - dropped);
            output.session(&cap).give_container(&mut batch);
        }
        figures.late
    }

    fn decide(&mut self, decision: Decision) {
        let Combined { sample, own, .. } = decision.combined;
        // A rate that is not a number (a user's controller) keeps the last
        // decision, as over a stall.
        match (decision.admitted.filter(|admitted| !admitted.is_nan()), self.actuation) {
            // This worker's part of the rate: the same fraction of its
            // arrivals as every worker drops.
            (Some(admitted), Actuation::Rate) => {
                self.tracker.set_admitted(own_part(admitted, &own, &sample));
                self.decided = Some(drop_fraction(admitted, sample.arrival_rate));
            }
            (Some(admitted), Actuation::Fraction) => {
                self.fraction = drop_fraction(admitted, sample.arrival_rate);
                self.decided = Some(self.fraction);
            }
            (None, _) => {}
        }
        let period = LoopPeriod {
            end: decision.end,
            sample,
            controlled_delay_ms: decision.controlled_delay_ms,
            drop_fraction: drop_fraction(sample.admitted_rate, sample.arrival_rate),
        };
        keep_recent(&mut self.figures.borrow_mut().periods, period, self.history);
    }

    fn settle(&mut self, core: &LoopCore<T, C>, _now: Instant) {
        // Once overloaded, until what it let in has drained.
        let dropping = self.decided.is_none_or(|decided| decided > 0.0 && !core.keeping_up());
        let overloaded = &self.overloaded;
        overloaded.set(dropping || core.overloaded() || overloaded.get() && core.delayed());
    }
}

//! Flow control: the shedding loop's controller slowing a source that can
//! wait, instead of dropping what it sends.
//!
//! The loop measures the delay at the output as a shedding loop does and
//! its controller sets the rate to let in; a [`Throttle`] hands that rate
//! to the program's input code as a token bucket. The code asks
//! [`Throttle::take`] how many of the records it has ready it may send now
//! and keeps the rest for later (a file, a Kafka partition, a socket with
//! its own buffer). Nothing is dropped.
//!
//! Under a loop shared by workers (the default) the workers' allowances add
//! up to the rate the controller sets for the dataflow, whichever workers
//! read: a reader whose source was not held back is allowed what it sent
//! and a quarter more, and the rest is split evenly among the readers held
//! back (max-min fair).
//!
//! A throttle and a shedding loop on the same output split its capacity
//! unless the throttle yields ([`Throttle::yield_to`]): then the records
//! that can wait wait while the shedder's input is more than the output
//! takes, and the throttle's own loop decides only while it is not.
//!
//! The loop holds the delay under half the target, not under the target:
//! the dataflow is as busy with the shorter queue, and when the cost of a
//! record steps up, the records already let in (which a throttle cannot
//! drop) still make the target. While the measurements say the dataflow
//! keeps up, the throttle holds nothing back. Before the controller has
//! seen a period of backlog, when the delay is over a sampling tick (or
//! 5 % of the half target) and the records waiting would take a quarter of
//! the target at the rate the output has completed records so far, it
//! holds every record back until the period ends, so that a source much
//! faster than the dataflow cannot pile up more than that before the
//! controller knows.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use timely::dataflow::operators::Capability;
use timely::dataflow::{ProbeHandle, StreamVec};
use timely::order::TotalOrder;
use timely::progress::Timestamp;

use crate::common::keep_recent;

use super::closed_loop::LoopHandle;
use super::controller::Controller;
use super::events::LoopKind;
use super::loop_core::{completion, loop_operator, Act, Decision, Ledger, LoopCore, Passed, STALL_TICKS};
use super::sample::PeriodSample;
use super::settings::LoopSettings;
use super::sharing::allowance;

/// How much longer a record may take than the throttle's loop plans for:
/// the loop holds the delay under the target divided by this. A throttle
/// gains nothing from a longer queue (the dataflow is as busy with a short
/// one, and nothing is dropped either way), while the records already let
/// in cannot be held back when the cost of a record steps up: under half
/// the target, they still make it through a doubling of the cost.
const STEP_ROOM: f64 = 2.0;

/// One period as a throttle's loop saw it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ThrottlePeriod {
    /// When the period ended, since the loop started.
    pub end: Duration,
    /// What the controller was given: under a shared loop the workers'
    /// mean rates, with the records the sources asked for as the arrival
    /// rate (a refused record counted at every ask: a source held back
    /// wants more than it is allowed, by an amount no throttle can know,
    /// and its asks say so) and the records sent as the admitted rate.
    pub sample: PeriodSample,
    /// The delay it controlled on (the prediction, or the measurement), ms.
    pub controlled_delay_ms: f64,
    /// The rate the controller set for the next period, records/s over
    /// all workers (`None`: kept as it was, over a stall of the process).
    pub allowance: Option<f64>,
    /// Whether any worker's source was refused records in the period.
    pub limited: bool,
}

/// What a throttle did so far on this worker.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ThrottleFigures {
    /// Records the source asked to send, over all calls of
    /// [`Throttle::take`] (a record refused and asked for again counts
    /// again).
    pub asked: u64,
    /// Records it was allowed to send.
    pub granted: u64,
    /// Calls of [`Throttle::take`] that allowed fewer records than asked.
    pub refusals: u64,
    /// Records that passed the loop whose time the output has completed.
    pub processed: u64,
    /// One row per period: the most recent [`LoopSettings::history`].
    pub periods: Vec<ThrottlePeriod>,
}

/// The token bucket between the loop and the source.
struct Bucket {
    /// Records/s; `None`: hold nothing back.
    rate: Option<f64>,
    tokens: f64,
    /// The most tokens saved up, as seconds of the rate.
    depth: f64,
    refilled: Instant,
    /// Asked since the loop last collected, whether any was refused, and
    /// whether the bucket has limited before.
    asked: u64,
    refused: bool,
    limited_before: bool,
    /// The shedding loops this throttle yields to: it holds every record
    /// back while any of them is overloaded.
    yields_to: Vec<Rc<Cell<bool>>>,
    figures: ThrottleFigures,
}

impl Bucket {
    fn yielding(&self) -> bool {
        self.yields_to.iter().any(|overloaded| overloaded.get())
    }

    fn refill(&mut self, now: Instant) {
        if let Some(rate) = self.rate {
            let elapsed = now.saturating_duration_since(self.refilled).as_secs_f64();
            self.tokens = (self.tokens + rate * elapsed).min((rate * self.depth).max(1.0));
        }
        self.refilled = now;
    }

    fn take(&mut self, wanted: usize, now: Instant) -> usize {
        self.refill(now);
        let granted = match self.rate {
            _ if self.yielding() => 0,
            None => wanted,
            Some(_) => {
                let granted = (self.tokens.floor().max(0.0) as usize).min(wanted);
                self.tokens -= granted as f64;
                granted
            }
        };
        let refused = granted < wanted;
        self.asked += wanted as u64;
        self.refused |= refused;
        self.figures.asked += wanted as u64;
        self.figures.granted += granted as u64;
        self.figures.refusals += refused as u64;
        granted
    }

    fn set(&mut self, rate: Option<f64>, now: Instant) {
        self.refill(now);
        match (self.rate, rate) {
            // A pause holds back every record, saved tokens too.
            (_, Some(rate)) if rate <= 0.0 => self.tokens = 0.0,
            // The first limit starts from a full bucket: a source that sends
            // within its allowance is not refused the moment it begins.
            (None, Some(rate)) if !self.limited_before => self.tokens = (rate * self.depth).max(1.0),
            _ => {}
        }
        self.limited_before |= rate.is_some();
        self.rate = rate;
    }

    /// What the source asked for since the last call, and whether it was
    /// refused any.
    fn collect(&mut self) -> (u64, bool) {
        (std::mem::take(&mut self.asked), std::mem::take(&mut self.refused))
    }

    fn wait(&mut self, now: Instant) -> Duration {
        self.refill(now);
        match self.rate {
            _ if self.yielding() => Duration::from_secs_f64(self.depth),
            Some(rate) if self.tokens < 1.0 => {
                let seconds = if rate > 0.0 {
                    (1.0 - self.tokens) / rate
                } else {
                    self.depth
                };
                Duration::from_secs_f64(seconds.min(self.depth))
            }
            _ => Duration::ZERO,
        }
    }
}

/// The input code's view of a throttle: how many records it may send.
/// Clones share the throttle.
#[derive(Clone)]
pub struct Throttle {
    bucket: Rc<RefCell<Bucket>>,
    /// Counts what the output has completed; returns all it has completed.
    completed: Rc<dyn Fn() -> u64>,
}

impl Throttle {
    /// Of `wanted` records the source has ready, how many it may send now
    /// (at most `wanted`); it keeps the rest for a later call. Asking is
    /// also how the loop learns that the source wants more than it gets.
    pub fn take(&self, wanted: usize) -> usize {
        self.bucket.borrow_mut().take(wanted, Instant::now())
    }

    /// How long until the next record may be sent (zero: now), at most a
    /// few sampling ticks: e.g. how long a worker with nothing else to do
    /// may park (`worker.step_or_park(Some(throttle.wait()))`).
    pub fn wait(&self) -> Duration {
        self.bucket.borrow_mut().wait(Instant::now())
    }

    /// Yields the capacity to `shedder`, a shedding loop closed on the same
    /// output: while the shedder's input is more than the output takes
    /// (see [`LoopHandle::overloaded`]: it drops, or its delay grows), this
    /// throttle allows nothing, so that records of a source that can wait
    /// wait, rather than push out records of one that cannot. Otherwise
    /// the throttle's own loop lets in what the output can take beside the
    /// shedder's input. Call it on each worker, after both loops are built.
    pub fn yield_to<T>(&self, shedder: &LoopHandle<T>) {
        self.bucket.borrow_mut().yields_to.push(shedder.overloaded_flag());
    }

    /// What the throttle did so far, with every record sent that the output
    /// has completed counted as processed.
    pub fn figures(&self) -> ThrottleFigures {
        let processed = (self.completed)();
        ThrottleFigures {
            processed,
            ..self.bucket.borrow().figures.clone()
        }
    }
}

/// A throttling loop on a stream.
pub trait ThrottleLoop<'scope, T: Timestamp + TotalOrder, D> {
    /// Passes every record on, and returns a [`Throttle`] that tells the
    /// input code how many records it may send, at the rate `controller`
    /// sets so that the delay at the output probed by `output` stays under
    /// `settings.target` (the loop holds it under half the target: see the
    /// module docs). The controller runs every `settings.period`, on
    /// the workers' rates under a shared loop.
    ///
    /// ```
    /// use std::time::Duration;
    /// use timely::dataflow::operators::vec::Map;
    /// use timely::dataflow::operators::{Input, Probe};
    /// use timely::dataflow::ProbeHandle;
    /// use equipoise::shed::{Auto, LoopSettings, ThrottleLoop};
    ///
    /// timely::execute(timely::Config::process(2), |worker| {
    ///     let mut input = timely::dataflow::InputHandle::new();
    ///     let output = ProbeHandle::new();
    ///     let throttle = worker.dataflow::<u64, _, _>(|scope| {
    ///         let settings = LoopSettings::new(Duration::from_millis(300));
    ///         let (records, throttle) = scope.input_from(&mut input).throttle_loop(&settings, Auto::default(), &output);
    ///         records.map(|x: u64| x * 2).probe_with(&output);
    ///         throttle
    ///     });
    ///     // A source that can wait: it sends what the throttle allows.
    ///     let mut next = 0u64;
    ///     while next < 10_000 {
    ///         let allowed = throttle.take((10_000 - next).min(100) as usize) as u64;
    ///         for x in next..next + allowed {
    ///             input.send(x);
    ///         }
    ///         next += allowed;
    ///         input.advance_to(next);
    ///         worker.step();
    ///     }
    ///     drop(input);
    ///     while !output.done() {
    ///         worker.step();
    ///     }
    ///     assert_eq!(throttle.figures().processed, 10_000); // nothing dropped
    /// })
    /// .unwrap();
    /// ```
    fn throttle_loop(
        self,
        settings: &LoopSettings<T>,
        controller: impl Controller + 'static,
        output: &ProbeHandle<T>,
    ) -> (StreamVec<'scope, T, D>, Throttle);
}

impl<'scope, T: Timestamp + TotalOrder, D: Clone + 'static> ThrottleLoop<'scope, T, D> for StreamVec<'scope, T, D> {
    fn throttle_loop(
        self,
        settings: &LoopSettings<T>,
        controller: impl Controller + 'static,
        output: &ProbeHandle<T>,
    ) -> (StreamVec<'scope, T, D>, Throttle) {
        let ledger = Ledger::shared();
        let bucket = Rc::new(RefCell::new(Bucket {
            rate: None,
            tokens: 0.0,
            // Set with the loop's sampling tick.
            depth: 0.0,
            refilled: Instant::now(),
            asked: 0,
            refused: false,
            limited_before: false,
            yields_to: Vec::new(),
            figures: ThrottleFigures::default(),
        }));
        let throttle = Throttle {
            bucket: Rc::clone(&bucket),
            completed: completion(&ledger, output),
        };
        // The loop holds the delay under the target divided by STEP_ROOM.
        let settings = LoopSettings {
            target: settings.target.div_f64(STEP_ROOM),
            ..settings.clone()
        };
        let scope = self.scope();
        // Without sharing, each worker's loop is a loop of one.
        let (me, workers) = if settings.global {
            (scope.index(), scope.peers())
        } else {
            (0, 1)
        };
        let history = settings.history;
        let stream = loop_operator(
            self,
            LoopKind::Throttle,
            &settings,
            controller,
            output,
            ledger,
            move |core| {
                // Half a period: what a source that went unscheduled for
                // less than a stall may still send at the rate when it is back.
                bucket.borrow_mut().depth = core.tick().as_secs_f64() * STALL_TICKS as f64;
                Throttling {
                    bucket,
                    me,
                    workers,
                    rate: f64::INFINITY,
                    history,
                }
            },
        );
        (stream, throttle)
    }
}

/// A throttle's way of acting: it passes every record on and sets the
/// bucket the source takes from.
struct Throttling {
    bucket: Rc<RefCell<Bucket>>,
    /// This worker and how many share the loop (a loop of one unshared).
    me: usize,
    workers: usize,
    /// This worker's allowance, records/s, from the last decision.
    rate: f64,
    /// Periods kept in the figures.
    history: usize,
}

impl<T: Timestamp + TotalOrder, D: 'static, C: Controller> Act<T, D, C> for Throttling {
    fn pass(
        &mut self,
        core: &mut LoopCore<T, C>,
        now: Instant,
        arrivals: &mut Vec<(Capability<T>, Vec<D>)>,
        output: &mut Passed<'_, T, D>,
    ) -> u64 {
        for (cap, mut batch) in arrivals.drain(..) {
            core.admit(cap.time(), now, 0, batch.len() as u64);
            output.session(&cap).give_container(&mut batch);
        }
        let (asked, refused) = self.bucket.borrow_mut().collect();
        core.offered(asked, refused);
        // What a period of yielding measures is the shedder's.
        if self.bucket.borrow().yielding() {
            core.hold();
        }
        0
    }

    fn decide(&mut self, decision: Decision) {
        let combined = &decision.combined;
        // A rate that is not a number keeps the last one.
        if let Some(admitted) = decision.admitted.filter(|admitted| !admitted.is_nan()) {
            self.rate = allowance(admitted, &combined.shares, self.workers, self.me);
        }
        let period = ThrottlePeriod {
            end: decision.end,
            sample: combined.sample,
            controlled_delay_ms: decision.controlled_delay_ms,
            allowance: decision.admitted.map(|admitted| admitted * self.workers as f64),
            limited: combined.shares.iter().any(|share| share.limited),
        };
        keep_recent(&mut self.bucket.borrow_mut().figures.periods, period, self.history);
    }

    fn settle(&mut self, core: &LoopCore<T, C>, now: Instant) {
        let limit = if core.unmeasured_overload(now) {
            Some(0.0)
        } else if core.keeping_up() {
            None
        } else {
            Some(self.rate).filter(|rate| rate.is_finite())
        };
        self.bucket.borrow_mut().set(limit, now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bucket(start: Instant) -> Bucket {
        Bucket {
            rate: None,
            tokens: 0.0,
            depth: 0.05,
            refilled: start,
            asked: 0,
            refused: false,
            limited_before: false,
            yields_to: Vec::new(),
            figures: ThrottleFigures::default(),
        }
    }

    #[test]
    fn the_bucket_grants_at_its_rate_and_saves_at_most_its_depth() {
        let start = Instant::now();
        let at = |ms: u64| start + Duration::from_millis(ms);
        let mut bucket = bucket(start);
        // Unlimited: everything asked.
        assert_eq!(bucket.take(5000, at(0)), 5000);
        // The first limit starts full: 50 ms of 10 000/s.
        bucket.set(Some(10_000.0), at(0));
        assert_eq!(bucket.take(800, at(0)), 500);
        assert_eq!(bucket.wait(at(0)), Duration::from_micros(100));
        // 20 ms later, 200 more; long after, no more than the depth.
        assert_eq!(bucket.take(800, at(20)), 200);
        assert_eq!(bucket.take(800, at(10_000)), 500);
        // A pause holds everything back, saved tokens too.
        bucket.set(None, at(10_000));
        bucket.set(Some(0.0), at(10_050));
        assert_eq!(bucket.take(10, at(10_060)), 0);
        assert_eq!(bucket.wait(at(10_060)), Duration::from_millis(50));
        let (asked, refused) = bucket.collect();
        assert_eq!((asked, refused), (5000 + 3 * 800 + 10, true));
        assert_eq!(bucket.collect(), (0, false));
        let figures = &bucket.figures;
        assert_eq!((figures.granted, figures.refusals), (5000 + 500 + 200 + 500, 4));
        // Yielding to a shedder that is overloaded: nothing, however full.
        let overloaded = Rc::new(Cell::new(true));
        bucket.yields_to.push(Rc::clone(&overloaded));
        bucket.set(None, at(20_000));
        assert_eq!(bucket.take(10, at(20_000)), 0);
        overloaded.set(false);
        assert_eq!(bucket.take(10, at(20_000)), 10);
    }
}

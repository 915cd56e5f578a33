//! What every loop on the output frontier does, whatever acts on its
//! decisions (a shedder drops, a throttle slows the source): it keeps a
//! ledger of the records let in, measures the frontier delay and the rates
//! over each period, shares its measurements with the other workers'
//! loops, and runs the controller on their combination, waking itself with
//! timely's activations.

use std::cell::RefCell;
use std::collections::{BTreeMap, VecDeque};
use std::rc::Rc;
use std::time::{Duration, Instant};

use timely::communication::{Pull, Push};
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::Pipeline;
use timely::dataflow::operators::generic::{Operator, OperatorInfo, OutputBuilderSession};
use timely::dataflow::operators::Capability;
use timely::dataflow::{ProbeHandle, Scope, StreamVec};
use timely::logging_core::Logger;
use timely::order::TotalOrder;
use timely::progress::Timestamp;
use timely::scheduling::Activator;
use timely::Bincode;

use super::actuator::drop_fraction;
use super::controller::Controller;
use super::events::{LoopEvent, LoopEventBuilder, LoopKind, LOG_NAME};
use super::predictor::{DelayPredictor, Prediction};
use super::sample::PeriodSample;
use super::settings::{Clock, LoopSettings};
use super::sharing::{Combined, Message, Periods, Share};

/// Records let in per time not yet complete at the output, with when the
/// loop first saw each time; shared by the loop and its handle, so that
/// completions are counted whoever looks first.
pub(crate) struct Ledger<T> {
    pending: BTreeMap<T, (u64, Instant)>,
    /// Records let in since the start, and when the first was.
    admitted: u64,
    first: Option<Instant>,
    /// Records let in whose time has completed, since the start.
    processed: u64,
}

impl<T: Timestamp + TotalOrder> Ledger<T> {
    /// An empty ledger, shared.
    pub(crate) fn shared() -> Rc<RefCell<Self>> {
        Rc::new(RefCell::new(Ledger {
            pending: BTreeMap::new(),
            admitted: 0,
            first: None,
            processed: 0,
        }))
    }

    fn admit(&mut self, time: &T, now: Instant, admitted: u64) {
        self.pending.entry(time.clone()).or_insert((0, now)).0 += admitted;
        self.admitted += admitted;
        self.first = self.first.or((admitted > 0).then_some(now));
    }

    /// Records let in whose time the output has not completed.
    fn waiting(&self) -> u64 {
        self.admitted.saturating_sub(self.processed)
    }

    /// Moves what completed before the output's least time `least` (`None`:
    /// everything) to `processed`.
    fn settle(&mut self, least: Option<&T>) {
        let still = match least {
            Some(least) => self.pending.split_off(least),
            None => BTreeMap::new(),
        };
        let done: u64 = std::mem::replace(&mut self.pending, still)
            .values()
            .map(|(n, _)| n)
            .sum();
        self.processed += done;
    }
}

/// Counts, in `ledger`, what the output probed by `output` has completed;
/// returns the records let in whose time has completed, since the start.
pub(crate) fn completed<T: Timestamp + TotalOrder>(ledger: &RefCell<Ledger<T>>, output: &ProbeHandle<T>) -> u64 {
    let least = output.with_frontier(|f| f.first().cloned());
    let mut ledger = ledger.borrow_mut();
    ledger.settle(least.as_ref());
    ledger.processed
}

/// [`completed`] for a loop's handle: it counts whenever the program asks,
/// also once the loop's input has ended and timely has retired the loop.
pub(crate) fn completion<T: Timestamp + TotalOrder>(
    ledger: &Rc<RefCell<Ledger<T>>>,
    output: &ProbeHandle<T>,
) -> Rc<dyn Fn() -> u64> {
    let (ledger, output) = (Rc::clone(ledger), output.clone());
    Rc::new(move || completed(&ledger, &output))
}

/// Where a loop passes on the records it lets in.
pub(crate) type Passed<'a, T, D> = OutputBuilderSession<'a, T, CapacityContainerBuilder<Vec<D>>>;

/// What a loop does with its arrivals and its controller's decisions: the
/// part of its operator that a shedder (which drops records) and a throttle
/// (which slows the source) do differently. [`loop_operator`] is the rest.
pub(crate) trait Act<T: Timestamp + TotalOrder, D: 'static, C> {
    /// Passes on this activation's `arrivals` (each batch with the
    /// capability to emit it at), counting them in `core`; returns the
    /// records dropped late on this worker so far (see [`LoopCore::conclude`]).
    fn pass(
        &mut self,
        core: &mut LoopCore<T, C>,
        now: Instant,
        arrivals: &mut Vec<(Capability<T>, Vec<D>)>,
        output: &mut Passed<'_, T, D>,
    ) -> u64;

    /// Acts on the decision of a period every worker's shares have decided,
    /// and keeps the period in the figures.
    fn decide(&mut self, decision: Decision);

    /// Once the activation's decisions are in: what holds until the next
    /// activation, by what `core` measures now.
    fn settle(&mut self, core: &LoopCore<T, C>, now: Instant);
}

/// The operator of a loop of `kind` on `stream`, its records in `ledger`:
/// at every activation it wakes the loop's core, passes the arrivals to the
/// [`Act`] that `act` makes from the core, and hands it the decisions of
/// the periods that have ended.
pub(crate) fn loop_operator<'scope, T, D, C, A>(
    stream: StreamVec<'scope, T, D>,
    kind: LoopKind,
    settings: &LoopSettings<T>,
    controller: C,
    output: &ProbeHandle<T>,
    ledger: Rc<RefCell<Ledger<T>>>,
    act: impl FnOnce(&LoopCore<T, C>) -> A + 'static,
) -> StreamVec<'scope, T, D>
where
    T: Timestamp + TotalOrder,
    D: Clone + 'static,
    C: Controller + 'static,
    A: Act<T, D, C> + 'static,
{
    let scope = stream.scope();
    let name = match kind {
        LoopKind::Shed => "ShedLoop",
        LoopKind::Throttle => "ThrottleLoop",
    };
    let (settings, output) = (settings.clone(), output.clone());
    stream.unary_frontier::<CapacityContainerBuilder<Vec<D>>, _, _, _>(Pipeline, name, move |_, info| {
        let mut core = LoopCore::new(kind, scope, &info, &settings, controller, &output, ledger);
        let mut act = act(&core);
        let mut arrivals: Vec<(Capability<T>, Vec<D>)> = Vec::new();
        move |(input, frontier), session| {
            let now = Instant::now();
            core.wake(now);
            // All of this activation's arrivals first: a held rate's
            // arrival estimate must see them as one interval.
            input.for_each_stamp(|cap, batches| {
                if let Some(cap) = cap.retain_least(0) {
                    arrivals.extend(batches.map(|batch| (cap.clone(), std::mem::take(batch))));
                }
            });
            let late = act.pass(&mut core, now, &mut arrivals, session);
            for decision in core.conclude(now, late, frontier.is_empty()) {
                act.decide(decision);
            }
            act.settle(&core, now);
        }
    })
}

/// Delay samples per period (the loop also samples at every other activation).
const SAMPLES_PER_PERIOD: u32 = 10;

/// The shortest window the processed rate is measured over. Completions
/// are seen when the output frontier moves, and with several workers it
/// moves in steps of tens of milliseconds: over one short period the rate
/// reads 0 in one and twice capacity in the next.
const RATE_WINDOW: Duration = Duration::from_millis(500);

/// Periods a loop waits at least for a peer's share before deciding
/// without it (and at least the target's worth): the peer is stuck, and
/// the loop acts without it rather than stop with it.
const PATIENCE_PERIODS: u64 = 3;

/// Sampling ticks the loop may go unscheduled in a period before the
/// period counts as a stall of the process.
pub(crate) const STALL_TICKS: u32 = 5;

/// The share of the target the measured delay must reach before the loop
/// holds anything back (or one sampling tick, if longer).
const OVERLOAD_SHARE: f64 = 0.05;

/// The share of the target the records waiting must take, before any
/// backlog was measured, for the loop to count the dataflow as overloaded.
const UNMEASURED_SHARE: f64 = 0.5;

/// How much faster than arrivals the dataflow must process, over a period,
/// for the processed rate to say it keeps up: the rate read over a window
/// of frontier steps is noisy, and where arrivals cross the capacity a
/// delay held near the target must stay under control.
const KEEPING_UP_MARGIN: f64 = 0.1;

/// Whether the measurements, not only the controller's prediction, say the
/// dataflow is overloaded now: the frontier delay last sampled is at least
/// `threshold_ms` (it is not keeping up), and over the last period it did
/// not process clearly more records than arrived. Checked at every batch,
/// so a decision made on a period that misled the prediction (a stall of
/// the process leaves a burst of arrivals, a processed rate read low and a
/// stale delay sample at the period's end) holds nothing back once the
/// dataflow has caught up, while a real overload, whose delay grows, is
/// acted on as soon as the delay passes the threshold.
fn overloaded(age_ms: f64, threshold_ms: f64, last: &PeriodSample) -> bool {
    age_ms >= threshold_ms && last.arrival_rate > last.processed_rate * (1.0 - KEEPING_UP_MARGIN)
}

/// One period decided: what the controller saw and set.
pub(crate) struct Decision {
    /// When the period ended, since the loop started.
    pub end: Duration,
    /// The workers' combined measurements, this worker's own, and every
    /// share heard.
    pub combined: Combined,
    /// The delay the controller was given (the prediction, or the measurement), ms.
    pub controlled_delay_ms: f64,
    /// The rate it set (a mean over workers under a shared loop); `None`:
    /// the period measured a stall of the process, and a guarded
    /// controller's decision stays as it was.
    pub admitted: Option<f64>,
}

/// The channel of the workers' shares, outside progress tracking.
type Channel = (Box<dyn Push<Bincode<Message>>>, Box<dyn Pull<Bincode<Message>>>);

/// A loop's measurements, sharing and controller, on one worker.
pub(crate) struct LoopCore<T: Timestamp + TotalOrder, C> {
    controller: C,
    kind: LoopKind,
    /// Where decisions are logged, if anyone listens.
    logger: Option<Logger<LoopEventBuilder>>,
    worker: usize,
    target: Duration,
    prediction: Prediction,
    channel: Option<Channel>,
    periods: Periods,
    sharer: usize,
    /// This worker's periods ended so far.
    ended: u64,
    /// Whether this worker's loop has told its peers it stopped.
    left: bool,
    meter: Meter<T>,
    predictor: DelayPredictor,
    output: ProbeHandle<T>,
    activator: Activator,
    tick: Duration,
    threshold_ms: f64,
    guarded: bool,
    /// The combined sample of the last period decided on.
    last: PeriodSample,
    /// Whether any period decided on ended with the delay over the
    /// threshold while the loop's records completed.
    backlogged: bool,
    /// When this operator last ran, and the longest it went unscheduled in
    /// the period.
    previous: Instant,
    gap: Duration,
    /// Whether the period is to be held like a stall (see [`LoopCore::hold`]).
    held: bool,
}

impl<T: Timestamp + TotalOrder, C: Controller> LoopCore<T, C> {
    /// The loop of the operator `info` in `scope`, watching `output`, its
    /// records in `ledger`.
    pub(crate) fn new(
        kind: LoopKind,
        scope: Scope<'_, T>,
        info: &OperatorInfo,
        settings: &LoopSettings<T>,
        mut controller: C,
        output: &ProbeHandle<T>,
        ledger: Rc<RefCell<Ledger<T>>>,
    ) -> Self {
        let settings = &settings.sanitized();
        let channel = settings.global.then(|| {
            let worker = scope.worker();
            worker.broadcast::<Bincode<Message>>(worker.new_identifier(), Rc::clone(&info.address))
        });
        // Without sharing, a loop of one: it decides on its own periods.
        let (workers, sharer) = if channel.is_some() {
            (scope.peers(), scope.index())
        } else {
            (1, 0)
        };
        controller.begin(settings.target, settings.period, settings.prediction);
        let activator = scope.activator_for(Rc::clone(&info.address));
        let tick = (settings.period / SAMPLES_PER_PERIOD).max(Duration::from_millis(1));
        activator.activate_after(tick);
        let guarded = controller.guarded();
        LoopCore {
            controller,
            kind,
            logger: scope.worker().logger_for::<LoopEventBuilder>(LOG_NAME),
            worker: scope.index(),
            target: settings.target,
            prediction: settings.prediction,
            channel,
            periods: Periods::new(workers, sharer, patience(settings.target, settings.period)),
            sharer,
            ended: 0,
            left: false,
            meter: Meter::new(settings, ledger),
            predictor: DelayPredictor::default(),
            output: output.clone(),
            activator,
            tick,
            threshold_ms: (OVERLOAD_SHARE * settings.target.as_secs_f64()).max(tick.as_secs_f64()) * 1000.0,
            guarded,
            last: PeriodSample::default(),
            backlogged: false,
            previous: Instant::now(),
            gap: Duration::ZERO,
            held: false,
        }
    }

    /// Marks the current period as one a guarded controller learns nothing
    /// from, as a stall: what it measured is not the loop's own doing (a
    /// throttle yielding to a shedder sends nothing, whatever it decides).
    pub(crate) fn hold(&mut self) {
        self.held = true;
    }

    /// The controller (for its way of acting, [`Controller::actuation`]).
    pub(crate) fn controller(&self) -> &C {
        &self.controller
    }

    /// How often the loop samples the delay.
    pub(crate) fn tick(&self) -> Duration {
        self.tick
    }

    /// At the start of an activation: hears the peers' shares.
    pub(crate) fn wake(&mut self, now: Instant) {
        self.gap = self.gap.max(now.saturating_duration_since(self.previous));
        self.previous = now;
        if let Some((_, pull)) = self.channel.as_mut() {
            while let Some(share) = pull.recv() {
                self.periods.hear(share.payload);
            }
        }
    }

    /// Whether the loop must hold nothing back now: its controller holds a
    /// delay, and the measurements say the dataflow keeps up.
    pub(crate) fn keeping_up(&self) -> bool {
        self.guarded && !self.overloaded()
    }

    /// Whether the measurements say the dataflow is overloaded now (see
    /// [`overloaded`]), whatever the controller.
    pub(crate) fn overloaded(&self) -> bool {
        overloaded(self.meter.age_ms, self.threshold_ms, &self.last)
    }

    /// Whether the delay last sampled is over the threshold.
    pub(crate) fn delayed(&self) -> bool {
        self.meter.age_ms >= self.threshold_ms
    }

    /// Whether the dataflow is overloaded while no period decided on has
    /// shown a backlog, so that the controller (one that holds a delay)
    /// has not measured it yet: the delay last sampled is over the
    /// threshold, and the records let in and not yet done would take half
    /// the target at the rate the output has completed records since the
    /// first was let in (all of them, if none has completed). A slow start
    /// of the dataflow raises the delay too, but leaves few records waiting.
    pub(crate) fn unmeasured_overload(&self, now: Instant) -> bool {
        if !self.guarded || self.backlogged || !self.delayed() {
            return false;
        }
        let ledger = self.meter.ledger.borrow();
        let since = ledger
            .first
            .map_or(0.0, |first| now.saturating_duration_since(first).as_secs_f64());
        let rate = ledger.processed as f64 / since.max(1e-3);
        ledger.waiting() as f64 >= rate * UNMEASURED_SHARE * self.target.as_secs_f64()
    }

    /// Milliseconds since arrivals were last observed.
    pub(crate) fn since_observed(&mut self, now: Instant) -> f64 {
        self.meter.since_observed(now)
    }

    /// Counts `arrived` records offered to the loop, `admitted` of them at
    /// `time` let in.
    pub(crate) fn admit(&mut self, time: &T, now: Instant, arrived: u64, admitted: u64) {
        self.meter.arrive(arrived, false);
        self.meter.admit(time, now, admitted);
    }

    /// Counts `asked` records a throttled source asked for outside the
    /// loop's input, and whether any ask was `refused`.
    pub(crate) fn offered(&mut self, asked: u64, refused: bool) {
        self.meter.arrive(asked, refused);
    }

    /// At the end of an activation: samples the delay, ends the period if
    /// it is over and shares it, and returns the periods every worker's
    /// shares have now decided, in order. `late`: records dropped under the
    /// loop's deadline so far on this worker, which the processed rate
    /// leaves out. `input_done`: the loop's input frontier is empty; once
    /// the output has completed everything too, the loop stops waking.
    pub(crate) fn conclude(&mut self, now: Instant, late: u64, input_done: bool) -> Vec<Decision> {
        completed(&self.meter.ledger, &self.output);
        let least = self.output.with_frontier(|f| f.first().cloned());
        self.meter.observe(least.as_ref(), now);
        self.share_ended(now, late);
        let finished = input_done && least.is_none();
        if finished && !self.left {
            self.left = true;
            self.tell(Message::Left {
                worker: self.sharer,
                from: self.ended,
            });
        }
        let mut decisions = Vec::new();
        while let Some(combined) = self.periods.next_ready(self.ended) {
            decisions.push(self.decide(combined, now));
        }
        // Keep waking until the input is done and the output has
        // completed everything let in.
        if !finished {
            self.activator.activate_after(self.tick);
        }
        decisions
    }

    /// Ends the periods that are over and shares this worker's measurements
    /// of them, so that every worker decides on the same combination.
    fn share_ended(&mut self, now: Instant, late: u64) {
        // Period k ends k + 1 periods after the start, however late the
        // loop wakes: one share covers every period that has ended since,
        // and the current one too if less than half of it is left (a
        // period of a few milliseconds would read a burst's rates as many
        // times what they are).
        let (elapsed, period) = (
            now.saturating_duration_since(self.meter.started).as_nanos(),
            self.meter.period.as_nanos(),
        );
        let mut due = (elapsed / period) as u64;
        if due > self.ended && (u128::from(due) + 1) * period - elapsed < period / 2 {
            due += 1;
        }
        if due > self.ended {
            let (own, limited) = self.meter.period_end(now, late);
            let waiting = self.meter.ledger.borrow().waiting() as f64;
            // Both flags start again with the next period.
            let gap = std::mem::take(&mut self.gap);
            let held = std::mem::take(&mut self.held);
            let share = Share {
                worker: self.sharer,
                period: self.ended,
                span: due - self.ended,
                sample: own,
                waiting,
                stalled: gap >= self.tick * STALL_TICKS || held,
                limited,
            };
            self.ended = due;
            self.tell(Message::Share(share));
        }
    }

    /// Runs the controller on a period every worker's shares have decided
    /// (unless a guarded controller is to learn nothing from it: a stall),
    /// on the predicted delay under a Smith predictor.
    fn decide(&mut self, combined: Combined, now: Instant) -> Decision {
        let mut controlled = combined.sample;
        if self.prediction == Prediction::Smith {
            controlled.delay_ms = self
                .predictor
                .predict(&combined.sample, combined.waiting, combined.stalled);
        }
        let admitted = (!(self.guarded && combined.stalled)).then(|| {
            self.last = combined.sample;
            // A backlog while none of the loop's records completed (a
            // throttle resuming behind a shedder's drain) measures
            // nothing of what the loop lets in.
            self.backlogged |= combined.sample.age_ms >= self.threshold_ms && combined.sample.processed_rate > 0.0;
            self.controller.admitted_rate(&controlled)
        });
        self.log(&combined, controlled.delay_ms, admitted, now);
        Decision {
            end: now - self.meter.started,
            combined,
            controlled_delay_ms: controlled.delay_ms,
            admitted,
        }
    }

    /// Logs a period decided, if anyone listens.
    fn log(&self, combined: &Combined, controlled_delay_ms: f64, admitted: Option<f64>, now: Instant) {
        if let Some(logger) = &self.logger {
            let dropped = match self.kind {
                LoopKind::Shed => drop_fraction(combined.sample.admitted_rate, combined.sample.arrival_rate),
                LoopKind::Throttle => 0.0,
            };
            logger.log(LoopEvent {
                worker: self.worker,
                kind: self.kind,
                period: combined.period,
                period_end: now - self.meter.started,
                shares: combined.shares.len(),
                sample: combined.sample,
                controlled_delay_ms,
                rate: admitted,
                drop_fraction: dropped,
            });
        }
    }

    /// Hears this worker's own `message` and sends it to the peers.
    fn tell(&mut self, message: Message) {
        self.periods.hear(message);
        if let Some((push, _)) = self.channel.as_mut() {
            push.send(Bincode::from(message));
            push.done();
        }
    }
}

/// How many periods a loop waits for a peer's share: [`PATIENCE_PERIODS`],
/// or the target's worth of periods if more.
fn patience(target: Duration, period: Duration) -> u64 {
    let periods = target.as_nanos().div_ceil(period.as_nanos().max(1)) as u64;
    periods.max(PATIENCE_PERIODS)
}

/// The loop's measurements: the ledger of records let in, and the running
/// sums of the current period.
struct Meter<T> {
    clock: Clock<T>,
    period: Duration,
    started: Instant,
    last_observed: Instant,
    ledger: Rc<RefCell<Ledger<T>>>,
    period_start: Instant,
    arrived: u64,
    admitted: u64,
    refused: bool,
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
            refused: false,
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

    fn arrive(&mut self, arrived: u64, refused: bool) {
        self.arrived += arrived;
        self.refused |= refused;
    }

    fn admit(&mut self, time: &T, now: Instant, admitted: u64) {
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

    /// At a period's end, the sample for the controller and whether any
    /// arrival was refused; the sums start again. `late`: the records this
    /// worker's work stage has dropped under the loop's deadline so far,
    /// which the processed rate leaves out (their times complete without
    /// costing any work: counted, they would read as capacity the dataflow
    /// does not have).
    fn period_end(&mut self, now: Instant, late: u64) -> (PeriodSample, bool) {
        let seconds = now.saturating_duration_since(self.period_start).as_secs_f64().max(1e-6);
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
            delay_ms: self.delay_sum_ms / self.samples.max(1) as f64,
            arrival_rate: self.arrived as f64 / seconds,
            admitted_rate: self.admitted as f64 / seconds,
            processed_rate: ((total - before) / window).max(0.0),
            age_ms: self.age_ms,
            max_age_ms: self.max_age_ms,
            spread_ms,
            length_ms,
        };
        let refused = std::mem::take(&mut self.refused);
        self.start_age_ms = self.age_ms;
        self.ages.clear();
        self.period_start = now;
        (self.arrived, self.admitted, self.samples) = (0, 0, 0);
        self.delay_sum_ms = 0.0;
        self.max_age_ms = 0.0;
        (sample, refused)
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

//! Exchange pacts driven by a routing policy: partial key grouping and its
//! baselines, usable wherever timely accepts a pact.

use std::fmt::Debug;
use std::marker::PhantomData;
use std::rc::Rc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use timely::communication::{Pull, Push};
use timely::dataflow::channels::pact::{DistributorPact, LogPuller, LogPusher, ParallelizationContract};
use timely::dataflow::channels::pushers::exchange::Distributor;
use timely::dataflow::channels::pushers::Exchange;
use timely::dataflow::channels::{Message, Stamp};
use timely::logging::TimelyLogger;
use timely::progress::Timestamp;
use timely::worker::Worker;

use super::events::{PactLog, PkgEventBuilder, DEFAULT_LOG_PERIOD, LOG_NAME};
use super::grouping::{Grouping, Router, SendCounts};
use super::head_aware::HeadAware;
use super::head_names::{HeadNames, NameFn};
use super::key::Key;
use super::partial_key::Pkg;
use super::potc::Potc;
use super::scheme::Scheme;
use super::shuffle::Shuffle;

type CostFn<D> = Box<dyn FnMut(&D) -> u64>;

/// A pact that routes each record by a [`Grouping`] policy applied to a key
/// fingerprint (`key`, like the function of timely's `Exchange`).
///
/// Use it through its aliases: [`PartialKeyGrouping`], [`KeyGrouping`],
/// [`ShuffleGrouping`], [`PotcGrouping`], or [`Grouped::with_grouping`] with a
/// [`Scheme`] chosen at run time.
///
/// ```
/// use timely::dataflow::operators::{ToStream, Inspect};
/// use timely::dataflow::operators::generic::Operator;
/// use equipoise::pkg::key_hash;
/// use equipoise::pkg::PartialKeyGrouping;
///
/// timely::example(|scope| {
///     let pact = PartialKeyGrouping::new(|word: &String| key_hash(word));
///     let sent = pact.send_counts();
///     ["a", "b", "a", "a"].map(String::from).to_stream(scope)
///         .unary(pact, "Receive", |_, _| |input, output| {
///             input.for_each_stamp(|cap, data| {
///                 output.session(&cap).give_containers(data);
///             });
///         })
///         .container::<Vec<String>>()
///         .inspect(|word| println!("{word}"));
/// });
/// ```
pub struct Grouped<G, D, F> {
    grouping: G,
    key: F,
    cost: Option<CostFn<D>>,
    name: Option<NameFn<D>>,
    counts: SendCounts,
    log_period: Duration,
    _data: PhantomData<D>,
}

/// Partial key grouping: each record to the less loaded of its key's two
/// candidate workers, by this sender's own load estimate.
pub type PartialKeyGrouping<D, F> = Grouped<Pkg, D, F>;
/// Key grouping: each key to one worker (the first candidate of PKG).
pub type KeyGrouping<D, F> = Grouped<Key, D, F>;
/// Shuffle grouping: round-robin, whatever the key.
pub type ShuffleGrouping<D, F> = Grouped<Shuffle, D, F>;
/// Power of two choices: a key's first record fixes its worker (no splitting).
pub type PotcGrouping<D, F> = Grouped<Potc, D, F>;
/// A scheme chosen at run time.
pub type SchemeGrouping<D, F> = Grouped<Scheme, D, F>;
/// D-Choices or W-Choices: PKG for the tail, head keys (found by each
/// sender's SpaceSaving sketch) spread wider; see [`HeadAware`].
pub type HeadAwareGrouping<D, F> = Grouped<HeadAware, D, F>;

impl<D, F: FnMut(&D) -> u64> Grouped<HeadAware, D, F> {
    /// D-Choices: head keys to the least loaded of d hashed candidates,
    /// d from the head's shape; tail keys as PKG.
    ///
    /// ```
    /// use timely::dataflow::operators::{Inspect, ToStream};
    /// use equipoise::pkg::key_hash;
    /// use equipoise::pkg::{Grouped, PkgCount};
    ///
    /// timely::example(|scope| {
    ///     ["a", "a", "a", "b"].map(String::from).to_stream(scope)
    ///         .pkg_count_running(Grouped::d_choices(|word: &String| key_hash(word)))
    ///         .inspect(|(word, count)| println!("{word}: {count}"));
    /// });
    /// ```
    pub fn d_choices(key: F) -> Self {
        Self::with_grouping(HeadAware::d_choices(), key)
    }

    /// W-Choices: head keys to the least loaded of all workers; tail keys
    /// as PKG.
    pub fn w_choices(key: F) -> Self {
        Self::with_grouping(HeadAware::w_choices(), key)
    }
}

impl<G: Grouping + Default, D, F: FnMut(&D) -> u64> Grouped<G, D, F> {
    /// A pact routing records by the fingerprint `key` returns; each record
    /// costs 1. The fingerprint is taken as a well-mixed 64-bit hash, as
    /// `Exchange` takes its hash, and not mixed again: use
    /// [`key_hash`](crate::common::hash::key_hash) for keys without one.
    pub fn new(key: F) -> Self {
        Self::with_grouping(G::default(), key)
    }
}

impl<G: Grouping, D, F: FnMut(&D) -> u64> Grouped<G, D, F> {
    /// A pact for an explicit policy value: a [`Scheme`] chosen at run
    /// time, or a policy with settings of its own, such as PKG with a
    /// slack, which keeps a key on its first worker until this sender's
    /// load there exceeds the second's by more than the slack (a receiver
    /// that keeps per-key state then holds most keys once).
    ///
    /// ```
    /// use timely::dataflow::operators::{Inspect, ToStream};
    /// use equipoise::pkg::key_hash;
    /// use equipoise::pkg::{PartialKeyGrouping, Pkg, PkgCount};
    ///
    /// timely::example(|scope| {
    ///     let pact = PartialKeyGrouping::with_grouping(Pkg::with_slack(1024), |word: &String| key_hash(word));
    ///     ["a", "b", "a"].map(String::from).to_stream(scope)
    ///         .pkg_count_running(pact)
    ///         .inspect(|(word, count)| println!("{word}: {count}"));
    /// });
    /// ```
    pub fn with_grouping(grouping: G, key: F) -> Self {
        Grouped {
            grouping,
            key,
            cost: None,
            name: None,
            counts: SendCounts::default(),
            log_period: DEFAULT_LOG_PERIOD,
            _data: PhantomData,
        }
    }

    /// Weighs each record by `cost` in the load estimate (default: 1 each).
    pub fn with_cost(mut self, cost: impl FnMut(&D) -> u64 + 'static) -> Self {
        self.cost = Some(Box::new(cost));
        self
    }

    /// Names the head keys D-Choices and W-Choices spread wider, in the
    /// pact's log ([`PkgEvent::Head`](super::events::PkgEvent::Head)) and so in the
    /// skew report ([`doctor`](crate::doctor)), by the `Debug` form of
    /// `name` of one of their records (the key the fingerprint is of).
    /// Costs nothing while nobody listens, and a look-up per record only
    /// while a head key is unnamed.
    ///
    /// ```
    /// use timely::dataflow::operators::{Inspect, ToStream};
    /// use equipoise::pkg::key_hash;
    /// use equipoise::pkg::{Grouped, PkgCount};
    ///
    /// timely::example(|scope| {
    ///     let pact = Grouped::d_choices(|(word, _): &(String, u64)| key_hash(word))
    ///         .with_key_names(|(word, _): &(String, u64)| word.clone());
    ///     [("a", 1), ("b", 2)].map(|(w, n)| (w.to_owned(), n)).to_stream(scope)
    ///         .pkg_count_running(pact)
    ///         .inspect(|((word, _), count)| println!("{word}: {count}"));
    /// });
    /// ```
    pub fn with_key_names<N: Debug>(mut self, mut name: impl FnMut(&D) -> N + 'static) -> Self {
        self.name = Some(Box::new(move |record| format!("{:?}", name(record))));
        self
    }

    /// A handle on the per-destination send counts of this worker.
    pub fn send_counts(&self) -> SendCounts {
        self.counts.clone()
    }

    /// How often the pact logs what it sent (a
    /// [`PkgEvent::Period`](super::events::PkgEvent::Period)), when a logger is
    /// registered under [`LOG_NAME`](super::LOG_NAME); default 1 s.
    pub fn with_log_period(mut self, period: Duration) -> Self {
        self.log_period = period;
        self
    }
}

/// A pusher to one worker, logged as timely's own pacts log theirs.
type LoggedPusher<T, D> = LogPusher<Box<dyn Push<Message<T, Vec<D>>>>>;

impl<T, D, G, F> ParallelizationContract<T, Vec<D>> for Grouped<G, D, F>
where
    T: Timestamp,
    D: Serialize + for<'a> Deserialize<'a> + Send + 'static,
    G: Grouping,
    F: FnMut(&D) -> u64 + 'static,
{
    type Pusher = GroupedPusher<T, D, G::Router, F>;
    type Puller = LogPuller<Box<dyn Pull<Message<T, Vec<D>>>>>;

    fn connect(
        self,
        worker: &Worker,
        identifier: usize,
        address: Rc<[usize]>,
        logging: Option<TimelyLogger>,
    ) -> (Self::Pusher, Self::Puller) {
        let peers = worker.peers();
        *self.counts.0.borrow_mut() = vec![0; peers];
        let log = worker
            .logger_for::<PkgEventBuilder>(LOG_NAME)
            .map(|logger| PactLog::new(logger, worker.index(), identifier, self.log_period, self.counts.clone()));
        // With one worker the distributor is never called: the pusher logs.
        let (distributor_log, pusher_log) = if peers == 1 { (None, log) } else { (log, None) };
        // Names only for a listener.
        let names = self.name.filter(|_| distributor_log.is_some()).map(HeadNames::new);
        let distributor = RoutingDistributor {
            router: self.grouping.router(peers, worker.index()),
            names,
            key: self.key,
            cost: self.cost,
            destinations: Vec::new(),
            buffers: (0..peers).map(|_| Vec::new()).collect(),
            sent: vec![0; peers],
            counts: self.counts.clone(),
            log: distributor_log,
        };
        // Timely's exchange keeps the stamps, flushes and closes; the
        // distributor only routes.
        let (exchange, puller) =
            DistributorPact(move |_peers| distributor).connect(worker, identifier, address, logging);
        let pusher = GroupedPusher {
            exchange,
            single: (peers == 1).then_some(self.counts),
            log: pusher_log,
        };
        (pusher, puller)
    }
}

/// The sending end of a [`Grouped`] pact: timely's exchange pusher, routing
/// each record by the policy and batching per destination.
pub struct GroupedPusher<T, D, R: Router, F> {
    exchange: Exchange<T, LoggedPusher<T, D>, RoutingDistributor<D, R, F>>,
    // With one worker timely's exchange passes batches through unrouted:
    // count them here.
    single: Option<SendCounts>,
    log: Option<PactLog>,
}

impl<T, D, R, F> Push<Message<T, Vec<D>>> for GroupedPusher<T, D, R, F>
where
    T: Eq + Clone,
    R: Router,
    F: FnMut(&D) -> u64,
{
    fn push(&mut self, message: &mut Option<Message<T, Vec<D>>>) {
        if let (Some(counts), Some(message)) = (&self.single, message.as_ref()) {
            counts.0.borrow_mut()[0] += message.data.len() as u64;
        }
        self.exchange.push(message);
        if let Some(log) = &mut self.log
            && log.due()
        {
            log.log_period();
        }
    }
}

/// Routes each record of a batch by the policy into per-destination
/// buffers, and sends a buffer when it fills or the stamp changes.
struct RoutingDistributor<D, R: Router, F> {
    router: R,
    names: Option<HeadNames<D>>,
    key: F,
    cost: Option<CostFn<D>>,
    // A batch's destinations, when the router routes apart; kept for reuse.
    destinations: Vec<usize>,
    buffers: Vec<Vec<D>>,
    sent: Vec<u64>,
    counts: SendCounts,
    log: Option<PactLog>,
}

impl<D, R: Router, F: FnMut(&D) -> u64> Distributor<Vec<D>> for RoutingDistributor<D, R, F> {
    fn partition<T: Clone, P: Push<Message<T, Vec<D>>>>(
        &mut self,
        container: &mut Vec<D>,
        stamp: &Stamp<T>,
        pushers: &mut [P],
    ) {
        if let Some(names) = &mut self.names {
            names.observe(container, &mut self.key);
        }
        let (key, cost) = (&mut self.key, &mut self.cost);
        let mut fingerprint = |datum: &D| (key(datum), cost.as_mut().map_or(1, |cost| cost(datum)));
        let (buffers, sent) = (&mut self.buffers, &mut self.sent);
        if self.router.route_apart() {
            // The destinations first, then the moves.
            let destinations = &mut self.destinations;
            destinations.clear();
            let records = container.iter().map(|datum| {
                let (key, weight) = fingerprint(datum);
                (key, weight, ())
            });
            self.router
                .route_each(records, |destination, ()| destinations.push(destination));
            debug_assert_eq!(self.destinations.len(), container.len(), "a destination per record");
            for (datum, &to) in container.drain(..).zip(&self.destinations) {
                push(to, datum, buffers, sent, pushers, stamp);
            }
        } else {
            let records = container.drain(..).map(|datum| {
                let (key, weight) = fingerprint(&datum);
                (key, weight, datum)
            });
            self.router
                .route_each(records, |to, datum| push(to, datum, buffers, sent, pushers, stamp));
        }
        let routed = self
            .sent
            .iter()
            .zip(&self.buffers)
            .map(|(sent, buffer)| sent + buffer.len() as u64);
        for (count, routed) in self.counts.0.borrow_mut().iter_mut().zip(routed) {
            *count = routed;
        }
        if let Some(names) = &mut self.names {
            names.follow(&self.router);
        }
        if let Some(log) = &mut self.log
            && log.due()
        {
            log.head(
                &self.router,
                self.names.as_ref().map_or_else(Vec::new, HeadNames::names),
            );
            log.log_period();
        }
    }

    fn flush<T: Clone, P: Push<Message<T, Vec<D>>>>(&mut self, stamp: &Stamp<T>, pushers: &mut [P]) {
        for ((buffer, sent), pusher) in self.buffers.iter_mut().zip(&mut self.sent).zip(pushers) {
            if !buffer.is_empty() {
                send(buffer, sent, stamp, pusher);
            }
        }
    }
}

impl<D, R: Router, F> Drop for RoutingDistributor<D, R, F> {
    /// The head as it ends (a run shorter than the log's period logs it
    /// only here); the log's own drop logs the last period.
    fn drop(&mut self) {
        if let Some(log) = &mut self.log {
            log.head(
                &self.router,
                self.names.as_ref().map_or_else(Vec::new, HeadNames::names),
            );
        }
    }
}

/// Appends `datum` to the buffer of worker `to`, and sends the buffer when
/// it is full.
// Inlined into the router's loop even where that loop is large
// (D-/W-Choices): a call per record costs more than the push.
#[inline(always)]
fn push<T: Clone, D, P: Push<Message<T, Vec<D>>>>(
    to: usize,
    datum: D,
    buffers: &mut [Vec<D>],
    sent: &mut [u64],
    pushers: &mut [P],
    stamp: &Stamp<T>,
) {
    let capacity = timely::container::buffer::default_capacity::<D>();
    let buffer = &mut buffers[to];
    if buffer.capacity() == 0 {
        buffer.reserve(capacity);
    }
    buffer.push(datum);
    if buffer.len() >= capacity {
        send(buffer, &mut sent[to], stamp, &mut pushers[to]);
    }
}

/// Sends `buffer` at `stamp` and counts its records in `sent`. A pusher may
/// hand back a used container for reuse (serializing ones do) with its old
/// records still in it: clear it.
fn send<T: Clone, D, P: Push<Message<T, Vec<D>>>>(
    buffer: &mut Vec<D>,
    sent: &mut u64,
    stamp: &Stamp<T>,
    pusher: &mut P,
) {
    *sent += buffer.len() as u64;
    Message::push_at(buffer, stamp.clone(), pusher);
    buffer.clear();
}

//! The dataflow half of the skew-proof operators. Each worker routes its
//! updates by the hot keys it knows: a cold key's to the worker
//! differential's exchange would send it to, a hot key's to one of its
//! workers by a hash of the whole record (so that, within one deal, a
//! retraction meets its insertion and arrangements compact). As it routes,
//! it counts about one update in [`SAMPLE`] by key and time; once the
//! routed updates of a time are arranged everywhere, it reports the counts
//! to worker 0, which decides which keys are hot and how each is dealt,
//! and tells every worker.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::hash::BuildHasherDefault;
use std::rc::Rc;

use differential_dataflow::{ExchangeData, Hashable};
use serde::{Deserialize, Serialize};
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::{Exchange, Pipeline};
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::vec::Broadcast;
use timely::dataflow::{Scope, Stream, StreamVec};
use timely::order::TotalOrder;
use timely::progress::Timestamp;
use timely::Container;

use crate::common::hash::FingerprintHasher;
use crate::common::stash::TimeStash;

use super::hot_keys::{Picker, Shares, SideHotKeys, Skew};
use super::key_filter::KeyFilter;
use super::skew_events::{SkewEvent, SkewEventBuilder, SKEW_LOG_NAME};
use super::strides::{Strides, SAMPLE};

/// What a worker tells the deciding worker about one time, for one side
/// (an input of the operator, by its index).
#[derive(Debug, Clone, Serialize, Deserialize)]
enum Count<K> {
    /// A key it saw often on a side, and how often.
    Key(usize, K, u64),
    /// How many of its updates of a side each worker owns the key of (all
    /// of them, summed).
    Owned(usize, Vec<u64>),
}

/// Bits of the filter that answers "not hot" for most keys at one test.
const FILTER_BITS: u64 = 1 << 12;

/// A key turned hot, or dealt anew, from the time it is sent at: its key
/// and the workers its updates go to from then on, with their shares.
pub(crate) type HotKey<K> = (K, Shares);

/// The hash timely's exchange routes a key by in differential's
/// arrangements.
pub(crate) fn key_route<K: Hashable>(key: &K) -> u64 {
    key.hashed().into()
}

/// A hot key and its deal from each time on.
type HotSince<K, T> = (K, Vec<(T, Picker)>);

/// One time's sampled counts on one worker: per key (by its route hash),
/// and per owner.
type Sampled<K> = (HashMap<u64, (K, u64), BuildHasherDefault<FingerprintHasher>>, Vec<u64>);

/// One time's counts, as the deciding worker sums them: per key, and per
/// owner.
type Counted<K> = (HashMap<K, u64>, Vec<u64>);

/// What a worker routes by and what it has counted, shared by the pact
/// (which routes and counts), the operator that reports the counts and the
/// one that learns the hot keys.
pub(crate) struct Routes<K, T> {
    /// Keys by their route hash (most hashes hold one key).
    hot: HashMap<u64, Vec<HotSince<K, T>>, BuildHasherDefault<FingerprintHasher>>,
    /// The route hashes of the hot keys.
    filter: KeyFilter,
    peers: u64,
    /// Which updates are counted (a key at the hot share still has
    /// hundreds of samples per time at thousands of updates per worker).
    strides: Strides,
    /// Sampled counts of the times not yet reported.
    counted: BTreeMap<T, Sampled<K>>,
    /// Updates sent to each worker since last logged (empty when nobody listens).
    sent: Vec<u64>,
}

/// The routes of one worker, shared.
pub(crate) type SharedRoutes<K, T> = Rc<RefCell<Routes<K, T>>>;

impl<K: Eq + Clone + Hashable, T: Timestamp + TotalOrder> Routes<K, T> {
    /// Routes with no key hot, for a worker of `scope` (counting what it
    /// sends where if anyone listens to the log).
    pub(crate) fn shared<'scope>(scope: &Scope<'scope, T>) -> SharedRoutes<K, T> {
        let peers = scope.peers() as u64;
        let logging = scope.worker().logger_for::<SkewEventBuilder>(SKEW_LOG_NAME).is_some();
        Rc::new(RefCell::new(Routes {
            hot: HashMap::default(),
            filter: KeyFilter::new(FILTER_BITS),
            peers,
            strides: Strides::new(scope.index() as u64),
            counted: BTreeMap::new(),
            sent: vec![0; if logging { peers as usize } else { 0 }],
        }))
    }

    /// Routes `key`'s updates by `shares` from `time` on.
    /// Idempotent: a deal learned twice (by two operators that see the
    /// decisions) is kept once.
    pub(crate) fn learn(&mut self, time: T, (key, shares): HotKey<K>) {
        let route = key_route(&key);
        self.filter.insert(route);
        let keys = self.hot.entry(route).or_default();
        match keys.iter_mut().find(|(held, _)| *held == key) {
            Some((_, from)) if from.last().is_some_and(|(since, _)| *since == time) => {}
            Some((_, from)) => from.push((time, Picker::new(&shares))),
            None => keys.push((key, vec![(time, Picker::new(&shares))])),
        }
    }

    /// Every deal of `key` (of route hash `route`), in time order: none for
    /// a cold key.
    #[inline]
    fn deals(&self, key: &K, route: u64) -> &[(T, Picker)] {
        if !self.filter.may_contain(route) {
            return &[];
        }
        self.hot
            .get(&route)
            .and_then(|keys| keys.iter().find(|(held, _)| held == key))
            .map_or(&[], |(_, from)| from.as_slice())
    }

    /// The deal of `key` at `time`, if it is hot then: only the deals
    /// decided at or before `time` count.
    #[inline]
    fn deal(&self, key: &K, route: u64, time: &T) -> Option<&Picker> {
        let deals = self.deals(key, route);
        deals
            .iter()
            .rev()
            .find(|(since, _)| since.less_equal(time))
            .map(|(_, picker)| picker)
    }

    /// Counts about one update in [`SAMPLE`] of `key` at `time`, and one
    /// more update sent to the worker `target` names (as timely's exchange
    /// reads it) if anyone listens.
    #[inline]
    fn count(&mut self, key: &K, route: u64, time: &T, target: u64) {
        if self.strides.next() {
            let peers = self.peers as usize;
            let (keys, owned) = self
                .counted
                .entry(time.clone())
                .or_insert_with(|| (HashMap::default(), vec![0; peers]));
            keys.entry(route).or_insert_with(|| (key.clone(), 0)).1 += SAMPLE;
            owned[(route % self.peers) as usize] += SAMPLE;
        }
        if !self.sent.is_empty() {
            self.sent_to((target % self.peers) as usize);
        }
    }

    /// One more update sent to `worker`, if anyone listens.
    #[inline]
    pub(crate) fn sent_to(&mut self, worker: usize) {
        if let Some(sent) = self.sent.get_mut(worker) {
            *sent += 1;
        }
    }

    /// Where an update of `key` at `time` goes, as timely's exchange reads
    /// it (the worker is the value modulo the peers); `record` hashes the
    /// rest of the update. A cold key's route is differential's; a hot
    /// key's updates go to its workers by their shares: they hold the other
    /// side's copies from the deal on.
    #[inline]
    fn target(&mut self, key: &K, time: &T, record: impl FnOnce() -> u64) -> u64 {
        let route = key_route(key);
        let target = match self.deal(key, route, time) {
            Some(picker) => picker.pick_record(record(), route) as u64,
            None => route,
        };
        self.count(key, route, time, target);
        target
    }

    /// The first deal of a hot key, if it holds at `time`: a key is hot
    /// from its first deal on.
    #[inline]
    fn first_deal(&self, key: &K, route: u64, time: Option<&T>) -> Option<&Picker> {
        let (since, picker) = self.deals(key, route).first()?;
        time.is_none_or(|time| since.less_equal(time)).then_some(picker)
    }

    /// Where an update of `key` at `time` goes if its key is hot then: to
    /// one of the workers of the key's first deal, by `record`, the hash of
    /// the rest of the update ([`first_part`](Self::first_part)): every
    /// update of a record to one worker, whatever later deals say. `None`
    /// for a cold key, which goes to its owner.
    #[inline]
    pub(crate) fn split(&mut self, key: &K, time: &T, record: impl FnOnce() -> u64) -> Option<usize> {
        let route = key_route(key);
        let part = self
            .first_deal(key, route, Some(time))
            .map(|picker| picker.pick_record(record(), route));
        self.count(key, route, time, part.map_or(route, |part| part as u64));
        part
    }

    /// The worker a record of the hot `key` is reduced on first: by its
    /// first deal's shares and `record`, the hash of the rest of it.
    pub(crate) fn first_part(&self, key: &K, record: u64) -> usize {
        let route = key_route(key);
        let picker = self
            .first_deal(key, route, None)
            .expect("a hot key's deal is learned before any of its records is routed to a part");
        picker.pick_record(record, route)
    }
}

/// The pact that sends each update to the worker the hot keys name at its
/// time, as far as this worker has learned them, or else where
/// differential's exchange would; it counts the updates for
/// [`hot_keys`]. Learning a hot key late is safe: an update routed as
/// before goes to a worker that holds the other side's records for its key
/// all the same.
#[allow(clippy::type_complexity)]
pub(crate) fn route<K, V, T, R>(
    routes: &SharedRoutes<K, T>,
) -> Exchange<((K, V), T, R), impl FnMut(&((K, V), T, R)) -> u64 + 'static>
where
    T: Timestamp + TotalOrder,
    K: ExchangeData + Hashable,
    V: ExchangeData + Hashable,
    R: ExchangeData,
{
    let routes = Rc::clone(routes);
    Exchange::new(move |((key, val), time, _): &((K, V), T, R)| {
        routes.borrow_mut().target(key, time, || val.hashed().into())
    })
}

/// A hot key's deal, with the side (the operator's input, by its index)
/// whose updates it splits.
pub(crate) type SideHotKey<K> = (usize, HotKey<K>);

/// The hot keys of each of `sides` (the routes of each of an operator's
/// inputs), as every worker learns them (and each side's routes with
/// them): decided on worker 0 from each worker's counts of a time, once
/// `progress` (a stream downstream of the routing, such as the routed
/// updates arranged: past a time, every worker has counted it) has passed
/// it, and sent to every worker at that time. A key is split on one side
/// only, as [`SideHotKeys`] decides.
pub(crate) fn hot_keys<'scope, T, K, C>(
    progress: Stream<'scope, T, C>,
    sides: &[SharedRoutes<K, T>],
    skew: Skew,
) -> StreamVec<'scope, T, SideHotKey<K>>
where
    T: Timestamp + TotalOrder,
    K: ExchangeData + Hashable + std::hash::Hash,
    C: Container + 'static,
{
    let (me, peers) = (progress.scope().index(), progress.scope().peers());
    let logger = progress.scope().worker().logger_for::<SkewEventBuilder>(SKEW_LOG_NAME);
    let (report, learn) = (sides.to_vec(), sides.to_vec());
    let decisions = logger.clone();
    let side_count = sides.len();
    let hot = progress
        .unary_frontier::<CapacityContainerBuilder<Vec<Count<K>>>, _, _, _>(Pipeline, "SkewCount", move |cap, _| {
            let mut cap = Some(cap);
            move |(input, frontier), output| {
                input.for_each_stamp(|_, _| {});
                if let Some(held) = cap.as_ref() {
                    for (side, routes) in report.iter().enumerate() {
                        let mut routes = routes.borrow_mut();
                        while let Some(entry) = routes.counted.first_entry() {
                            if frontier.less_equal(entry.key()) {
                                break;
                            }
                            let (time, (keys, owned)) = entry.remove_entry();
                            let total: u64 = owned.iter().sum();
                            let at = held.delayed(&time);
                            let mut session = output.session(&at);
                            session.give_iterator(
                                keys.into_values()
                                    .filter(|&(_, count)| skew.reports(count, total, peers))
                                    .map(|(key, count)| Count::Key(side, key, count)),
                            );
                            session.give(Count::Owned(side, owned));
                        }
                    }
                }
                match frontier.frontier().first() {
                    Some(time) => cap.iter_mut().for_each(|cap| cap.downgrade(time)),
                    None => cap = None,
                }
            }
        })
        .unary_frontier::<CapacityContainerBuilder<Vec<SideHotKey<K>>>, _, _, _>(
            Exchange::new(|_: &Count<K>| 0),
            "SkewDecide",
            move |_, _| {
                let mut hot = SideHotKeys::new(side_count, peers, skew);
                let mut stash: TimeStash<T, Vec<Counted<K>>> = TimeStash::default();
                move |(input, frontier), output| {
                    input.for_each_stamp(|cap, batches| {
                        let Some(counted) = stash.at(&cap) else {
                            return;
                        };
                        counted.resize_with(side_count, || (HashMap::new(), vec![0; peers]));
                        for message in batches.flat_map(|batch| batch.drain(..)) {
                            match message {
                                Count::Key(side, key, count) => *counted[side].0.entry(key).or_default() += count,
                                Count::Owned(side, theirs) => counted[side]
                                    .1
                                    .iter_mut()
                                    .zip(theirs)
                                    .for_each(|(mine, theirs)| *mine += theirs),
                            }
                        }
                    });
                    stash.drain_complete(frontier, |cap, counted| {
                        let owner = |key: &K| (key_route(key) % peers as u64) as usize;
                        let changes = hot.end_time(counted, owner);
                        if let Some(logger) = &decisions {
                            for (side, (key, shares)) in &changes {
                                logger.log(SkewEvent::Hot {
                                    key: key_route(key),
                                    workers: shares.iter().map(|&(worker, _)| worker).collect(),
                                    shares: shares.iter().map(|&(_, share)| share).collect(),
                                    side: *side,
                                });
                            }
                        }
                        output.session(&cap).give_iterator(changes.into_iter());
                    });
                }
            },
        )
        .broadcast();
    hot.clone().sink(Pipeline, "SkewLearn", move |(input, _)| {
        input.for_each_stamp(|cap, batches| {
            if let Some(time) = cap.least() {
                for (side, hot_key) in batches.flat_map(|batch| batch.drain(..)) {
                    learn[side].borrow_mut().learn(time.clone(), hot_key);
                }
            }
        });
        // Whenever the hot keys move on (and once more as they end): what
        // was sent since the last, over every side.
        if let Some(logger) = &logger {
            let mut sent = vec![0; peers];
            for routes in &learn {
                let mut routes = routes.borrow_mut();
                for (total, count) in sent.iter_mut().zip(routes.sent.iter_mut()) {
                    *total += std::mem::take(count);
                }
            }
            if sent.iter().any(|&count| count > 0) {
                logger.log(SkewEvent::Routed { worker: me, sent });
            }
        }
    });
    hot
}

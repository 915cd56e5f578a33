//! Where each update of a skew-proof operator goes. Each worker routes its
//! updates by the hot keys it knows: a cold key's to the worker
//! differential's exchange would send it to (the key's owner), a hot key's
//! to one of its workers by a hash of the whole record (so that, within one
//! deal, a retraction meets its insertion and arrangements compact). It
//! counts about one update in [`SAMPLE`] by key and time, for
//! [`hot_keys`](super::hot_keys::hot_keys) to decide from: as it routes
//! (the two-level reductions), or as the updates arrive at the hold
//! before their deals are learned (the joins, which then route uncounted).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use differential_dataflow::{ExchangeData, Hashable};
use timely::dataflow::Scope;
use timely::order::TotalOrder;
use timely::progress::{Antichain, Timestamp};
use timely::scheduling::Activator;

use super::decision::Shares;
use super::events::{Sent, SkewEventBuilder, LOG_NAME};
use super::key_index::KeyIndex;
use super::picker::Picker;
use super::sample::{KeyCounts, Strides, SAMPLE};

/// A key turned hot, or dealt anew, from the time it is sent at: its key
/// and the workers its updates go to from then on, with their shares.
pub(crate) type HotKey<K> = (K, Shares);

/// The hash timely's exchange routes a key by in differential's
/// arrangements.
pub(crate) fn key_route<K: Hashable>(key: &K) -> u64 {
    key.hashed().into()
}

/// One time's sampled counts on one worker: per key, and per owner.
pub(crate) type Sampled<K> = (KeyCounts<K>, Vec<u64>);

/// Which of a hot key's deals routes its updates.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Deal {
    /// The latest decided at or before the update's time: a join's sides
    /// follow the key's load, as the other side's copies are on every
    /// worker the key was ever dealt to.
    Latest,
    /// The first: every update of a record goes to one worker, whatever
    /// later deals say, so that a reduction's retraction meets its
    /// insertion.
    First,
}

/// What a worker routes by and what it has counted, shared by what routes
/// (and, for the two-level reductions, counts as it routes), the hold
/// (which counts the joins' updates), the operator that reports the counts
/// and the one that learns the hot keys.
pub(crate) struct Routes<K, T> {
    /// Each hot key's deals, in time order, with the time each holds from.
    hot: KeyIndex<K, Vec<(T, Picker)>>,
    peers: u64,
    /// Which updates are counted (a key at the hot share still has
    /// hundreds of samples per time at thousands of updates per worker).
    strides: Strides,
    /// Sampled counts of the times not yet reported.
    counted: BTreeMap<T, Sampled<K>>,
    /// What was sent where, for the log.
    sent: Sent,
    /// The keys dealt anew since the last [`take_dealt`](Self::take_dealt),
    /// kept only for a side whose records move with their deals.
    dealt: Option<Vec<K>>,
    /// The times before this frontier have all their deals learned.
    learned: Antichain<T>,
    /// Operators to wake when `learned` advances.
    waiting: Vec<Activator>,
    /// Updates received here and passed on since last logged.
    passed: u64,
}

/// The routes of one worker, shared.
pub(crate) type SharedRoutes<K, T> = Rc<RefCell<Routes<K, T>>>;

impl<K: Eq + Clone + Hashable, T: Timestamp + TotalOrder> Routes<K, T> {
    /// Routes with no key hot, for a worker of `scope` (counting what it
    /// sends where if anyone listens to the log).
    pub(crate) fn shared<'scope>(scope: &Scope<'scope, T>) -> SharedRoutes<K, T> {
        let peers = scope.peers();
        let logging = scope.worker().logger_for::<SkewEventBuilder>(LOG_NAME).is_some();
        Rc::new(RefCell::new(Routes {
            hot: KeyIndex::default(),
            peers: peers as u64,
            strides: Strides::new(scope.index() as u64),
            counted: BTreeMap::new(),
            sent: Sent::new(peers, logging),
            dealt: None,
            learned: Antichain::from_elem(T::minimum()),
            waiting: Vec::new(),
            passed: 0,
        }))
    }

    /// Every deal of a time before `frontier` is learned: wakes the
    /// operators waiting for it.
    pub(crate) fn learned_through(&mut self, frontier: Antichain<T>) {
        if frontier != self.learned {
            self.learned = frontier;
            self.waiting.iter().for_each(Activator::activate);
        }
    }

    /// Whether every deal of `time` is learned.
    pub(crate) fn learned(&self, time: &T) -> bool {
        !self.learned.less_equal(time)
    }

    /// Wakes `activator` whenever more deals are learned.
    pub(crate) fn wake_on_learning(&mut self, activator: Activator) {
        self.waiting.push(activator);
    }

    /// From now on, keeps the keys dealt anew for [`take_dealt`](Self::take_dealt).
    pub(crate) fn keep_dealt(&mut self) {
        self.dealt.get_or_insert_with(Vec::new);
    }

    /// The keys dealt anew since the last call (none unless
    /// [`keep_dealt`](Self::keep_dealt) was called).
    pub(crate) fn take_dealt(&mut self) -> Vec<K> {
        self.dealt.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// Routes `key`'s updates by `shares` from `time` on.
    /// Idempotent: a deal learned twice (by two operators that see the
    /// decisions) is kept once.
    pub(crate) fn learn(&mut self, time: T, (key, shares): HotKey<K>) {
        let route = key_route(&key);
        let deals = self.hot.get_or_insert_with(key.clone(), route, Vec::new);
        if deals.last().is_none_or(|(since, _)| *since != time) {
            deals.push((time, Picker::new(&shares)));
            if let Some(dealt) = &mut self.dealt {
                dealt.push(key);
            }
        }
    }

    /// The picker of `key`'s `deal` that holds at `time` (any time, for
    /// `None`), if the key is hot then.
    #[inline]
    fn picker(&self, key: &K, route: u64, time: Option<&T>, deal: Deal) -> Option<&Picker> {
        let deals = self.hot.get(key, route)?;
        let holds = |since: &T| time.is_none_or(|time| since.less_equal(time));
        match deal {
            Deal::Latest => deals.iter().rev().find(|(since, _)| holds(since)),
            Deal::First => deals.first().filter(|(since, _)| holds(since)),
        }
        .map(|(_, picker)| picker)
    }

    /// The worker an update of `key` at `time` goes to by its `deal`, if
    /// the key is hot then (`record` hashes the rest of the update), after
    /// counting the update; `None` for a cold key, which goes to its owner.
    #[inline]
    fn route(&mut self, key: &K, time: &T, record: impl FnOnce() -> u64, deal: Deal) -> Option<usize> {
        let route = key_route(key);
        self.count(key, route, time);
        self.send(key, route, time, record, deal)
    }

    /// Counts about one update in [`SAMPLE`] of `key` at `time`, for the
    /// decisions: [`target`](Self::target) does not.
    #[inline]
    pub(crate) fn observe(&mut self, key: &K, time: &T) {
        if self.strides.next() {
            self.add_sample(key, key_route(key), time);
        }
    }

    /// [`route`](Self::route) without counting.
    #[inline]
    fn send(&mut self, key: &K, route: u64, time: &T, record: impl FnOnce() -> u64, deal: Deal) -> Option<usize> {
        let worker = self.part_of_route(key, route, Some(time), deal, record);
        if self.sent.listening() {
            // A division per update otherwise, for nothing.
            self.sent.to(worker.unwrap_or((route % self.peers) as usize));
        }
        worker
    }

    /// Counts about one update in [`SAMPLE`] of `key` at `time`.
    #[inline]
    fn count(&mut self, key: &K, route: u64, time: &T) {
        if self.strides.next() {
            self.add_sample(key, route, time);
        }
    }

    /// One sample of `key` (of route hash `route`) at `time`.
    fn add_sample(&mut self, key: &K, route: u64, time: &T) {
        let peers = self.peers as usize;
        let (keys, owned) = self
            .counted
            .entry(time.clone())
            .or_insert_with(|| (KeyCounts::default(), vec![0; peers]));
        keys.add(key, route);
        owned[(route % self.peers) as usize] += SAMPLE;
    }

    /// Where an update of `key` at `time` goes, as timely's exchange reads
    /// it (the worker is the value modulo the peers), the update counted
    /// already ([`observe`](Self::observe)): a cold key's route is
    /// differential's; a hot key's updates go to its workers by the latest
    /// deal's shares (they hold the other side's copies from the deal on).
    #[inline]
    fn target(&mut self, key: &K, time: &T, record: impl FnOnce() -> u64) -> u64 {
        let route = key_route(key);
        self.send(key, route, time, record, Deal::Latest)
            .map_or(route, |worker| worker as u64)
    }

    /// Where an update of `key` at `time` goes if its key is hot then: to
    /// one of the workers of the key's first deal, by `record`
    /// ([`first_part`](Self::first_part)). `None` for a cold key, which
    /// goes to its owner.
    #[inline]
    pub(crate) fn split(&mut self, key: &K, time: &T, record: impl FnOnce() -> u64) -> Option<usize> {
        self.route(key, time, record, Deal::First)
    }

    /// The worker a record of the hot `key` is reduced on first: by its
    /// first deal's shares and `record`, the hash of the rest of it.
    pub(crate) fn first_part(&self, key: &K, record: u64) -> usize {
        self.part(key, None, Deal::First, || record)
            .expect("a hot key's deal is learned before any of its records is routed to a part")
    }

    /// Whether any key is hot.
    pub(crate) fn any_hot(&self) -> bool {
        !self.hot.is_empty()
    }

    /// The worker a record of `key` belongs on by its `deal` that holds at
    /// `time` (any time, for `None`), if the key is hot then (`record`
    /// hashes the rest of the record).
    #[inline]
    pub(crate) fn part(&self, key: &K, time: Option<&T>, deal: Deal, record: impl FnOnce() -> u64) -> Option<usize> {
        self.part_of_route(key, key_route(key), time, deal, record)
    }

    /// [`part`](Self::part), for a key of route hash `route`.
    #[inline]
    fn part_of_route(
        &self,
        key: &K,
        route: u64,
        time: Option<&T>,
        deal: Deal,
        record: impl FnOnce() -> u64,
    ) -> Option<usize> {
        self.picker(key, route, time, deal)
            .map(|picker| picker.pick_record(record(), route))
    }

    /// One more update sent to `worker`, for the log.
    #[inline]
    pub(crate) fn sent_to(&mut self, worker: usize) {
        self.sent.to(worker);
    }

    /// `updates` received here passed on to their deal's workers, for the log.
    pub(crate) fn passed_on(&mut self, updates: u64) {
        self.passed += updates;
    }

    /// The updates passed on since the last call.
    pub(crate) fn take_passed_on(&mut self) -> u64 {
        std::mem::take(&mut self.passed)
    }

    /// Adds what was sent since the last call to `total`, per worker.
    pub(crate) fn take_sent(&mut self, total: &mut [u64]) {
        self.sent.take_into(total);
    }

    /// The sampled counts of the times `done` says are complete (each
    /// with its time), in time order.
    pub(crate) fn take_counted(&mut self, done: impl Fn(&T) -> bool) -> Vec<(T, Sampled<K>)> {
        let mut taken = Vec::new();
        while let Some(entry) = self.counted.first_entry() {
            if !done(entry.key()) {
                break;
            }
            taken.push(entry.remove_entry());
        }
        taken
    }
}

/// Where each update goes, for timely's exchange: to the worker the hot
/// keys name at its time (as far as this worker has learned them; every
/// update waits at its sender until its time's are learned), or else where
/// differential's exchange would. The updates are counted before they
/// wait ([`Routes::observe`]), not here.
pub(crate) fn by_deal<K, V, T, R>(
    routes: &SharedRoutes<K, T>,
) -> impl FnMut(&((K, V), T, R)) -> u64 + 'static + use<K, V, T, R>
where
    T: Timestamp + TotalOrder,
    K: ExchangeData + Hashable,
    V: ExchangeData + Hashable,
    R: ExchangeData,
{
    let routes = Rc::clone(routes);
    move |((key, val), time, _): &((K, V), T, R)| routes.borrow_mut().target(key, time, || val.hashed().into())
}

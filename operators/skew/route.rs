//! Where each update of a skew-proof operator goes. Each worker routes its
//! updates by the hot keys' deals it knows ([`Deals`]): a cold key's to
//! the worker differential's exchange would send it to (the key's owner), a
//! hot key's to one of its workers by a hash of the whole record (so that,
//! within one deal, a retraction meets its insertion and arrangements
//! compact). It counts about one update in [`SAMPLE`](super::sample::SAMPLE)
//! by key and time ([`Sampling`]), for [`hot_keys`](super::hot_keys::hot_keys)
//! to decide from: as it routes (the two-level reductions), or as the
//! updates arrive at the hold before their deals are learned (the joins,
//! which then route uncounted).

use std::cell::RefCell;
use std::rc::Rc;

use differential_dataflow::{ExchangeData, Hashable};
use timely::dataflow::Scope;
use timely::order::TotalOrder;
use timely::progress::{Antichain, Timestamp};
use timely::scheduling::Activator;

use super::deals::{Deal, Deals};
use super::events::{RouteLog, SkewEventBuilder, LOG_NAME};
use super::key_index::key_route;
use super::sample::Sampling;

/// How far the hot keys' deals are learned: the times before the frontier
/// have all theirs, and the operators waiting on it.
#[derive(Debug)]
pub(crate) struct Learning<T: Timestamp> {
    learned: Antichain<T>,
    waiting: Vec<Activator>,
}

impl<T: Timestamp> Learning<T> {
    /// Nothing learned yet.
    fn new() -> Self {
        Learning {
            learned: Antichain::from_elem(T::minimum()),
            waiting: Vec::new(),
        }
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
}

/// What a worker routes by and what it has counted, shared by what routes
/// (and, for the two-level reductions, counts as it routes), the hold
/// (which counts the joins' updates), the operator that reports the counts
/// and the one that learns the hot keys: four parts, each its own.
pub(crate) struct Routes<K, T: Timestamp> {
    /// The hot keys' deals.
    pub(crate) deals: Deals<K, T>,
    /// The sampled counts the decisions are made from.
    pub(crate) sampling: Sampling<K, T>,
    /// How far the deals are learned.
    pub(crate) learning: Learning<T>,
    /// What was sent where, for the log.
    pub(crate) log: RouteLog,
    peers: u64,
}

/// The routes of one worker, shared.
pub(crate) type SharedRoutes<K, T> = Rc<RefCell<Routes<K, T>>>;

impl<K: Eq + Clone + Hashable, T: Timestamp + TotalOrder> Routes<K, T> {
    /// Routes with no key hot, for a worker of `scope` (counting what it
    /// sends where if anyone listens to the log).
    pub(crate) fn shared<'scope>(scope: &Scope<'scope, T>) -> SharedRoutes<K, T> {
        let peers = scope.peers();
        let logger = scope.worker().logger_for::<SkewEventBuilder>(LOG_NAME);
        Rc::new(RefCell::new(Routes {
            deals: Deals::new(),
            sampling: Sampling::new(scope.index(), peers),
            learning: Learning::new(),
            log: RouteLog::new(scope.index(), peers, logger),
            peers: peers as u64,
        }))
    }

    /// For a side whose records move with their deals: keeps the keys
    /// dealt anew ([`Deals::take_dealt`]) and wakes `activator` as deals
    /// are learned.
    pub(crate) fn watch_deals(&mut self, activator: Activator) {
        self.deals.keep_dealt();
        self.learning.wake_on_learning(activator);
    }

    /// Where an update of `key` at `time` goes if its key is hot then: to
    /// one of the workers of the key's first deal, by `record`
    /// ([`Deals::first_part`]), after counting the update. `None` for a
    /// cold key, which goes to its owner.
    #[inline]
    pub(crate) fn split(&mut self, key: &K, time: &T, record: impl FnOnce() -> u64) -> Option<usize> {
        let route = key_route(key);
        self.sampling.observe_route(key, route, time);
        self.send(key, route, time, record, Deal::First)
    }

    /// Where an update of `key` at `time` goes, as timely's exchange reads
    /// it (the worker is the value modulo the peers), the update counted
    /// already ([`Sampling::observe`]): a cold key's route is
    /// differential's; a hot key's updates go to its workers by the latest
    /// deal's shares (they hold the other side's copies from the deal on).
    #[inline]
    fn target(&mut self, key: &K, time: &T, record: impl FnOnce() -> u64) -> u64 {
        let route = key_route(key);
        self.send(key, route, time, record, Deal::Latest)
            .map_or(route, |worker| worker as u64)
    }

    /// The worker an update of `key` (of route hash `route`) at `time`
    /// goes to by its `deal`, if the key is hot then, logged.
    #[inline]
    fn send(&mut self, key: &K, route: u64, time: &T, record: impl FnOnce() -> u64, deal: Deal) -> Option<usize> {
        let worker = self.deals.part_of_route(key, route, Some(time), deal, record);
        if self.log.listening() {
            // A division per update otherwise, for nothing.
            self.log.sent_to(worker.unwrap_or((route % self.peers) as usize));
        }
        worker
    }
}

/// Where each update goes, for timely's exchange: to the worker the hot
/// keys name at its time (as far as this worker has learned them; every
/// update waits at its sender until its time's are learned), or else where
/// differential's exchange would. The updates are counted before they
/// wait ([`Sampling::observe`]), not here.
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

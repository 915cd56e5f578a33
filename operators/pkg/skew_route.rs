//! The dataflow half of the skew-proof operators: every worker counts its
//! own updates by key per time, worker 0 decides which keys are hot (and
//! how each is dealt over the workers) and tells every worker, and each
//! worker routes its updates by the hot keys it knows: a cold key's to the
//! worker differential's exchange would send it to, a hot key's to one of
//! its workers by a hash of the whole record (so that a retraction meets
//! its insertion, and arrangements compact).

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::rc::Rc;

use differential_dataflow::{ExchangeData, Hashable};
use serde::{Deserialize, Serialize};
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::{Exchange, Pipeline};
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::vec::Broadcast;
use timely::dataflow::StreamVec;
use timely::order::TotalOrder;
use timely::progress::Timestamp;

use crate::common::hash::{splitmix64, FingerprintHasher};
use crate::common::stash::TimeStash;

use super::hot_keys::{pick, HotKeys, Shares, Skew};
use super::skew_events::{SkewEvent, SkewEventBuilder, SKEW_LOG_NAME};

/// What a worker tells the deciding worker about one time.
#[derive(Debug, Clone, Serialize, Deserialize)]
enum Count<K> {
    /// A key it saw often, and how often.
    Key(K, u64),
    /// All its updates, and how many of them each worker owns the key of
    /// (counted on the samples).
    Total(u64, Vec<u64>),
}

/// Each worker counts one update in this many: a key at the hot share
/// still has hundreds of samples per time at thousands of updates per
/// worker, and counting every update cost a cache miss each (15 % of a
/// join's time at 2 workers on 100 000 keys).
const SAMPLE: u64 = 16;

/// A key turned hot, or dealt anew, from the time it is sent at: its key
/// and the workers its updates go to from then on, with their shares.
pub(crate) type HotKey<K> = (K, Shares);

/// The hash timely's exchange routes a key by in differential's
/// arrangements.
pub(crate) fn key_route<K: Hashable>(key: &K) -> u64 {
    key.hashed().into()
}

/// The hot keys of `updates`, as every worker learns them: decided on
/// worker 0 from each worker's counts per time, sent to every worker at
/// the time they hold from.
pub(crate) fn hot_keys<'scope, T, K, D, R>(
    updates: StreamVec<'scope, T, (D, T, R)>,
    skew: Skew,
    key: impl Fn(&D) -> &K + 'static,
) -> StreamVec<'scope, T, HotKey<K>>
where
    T: Timestamp + TotalOrder,
    K: ExchangeData + Hashable + std::hash::Hash,
    D: 'static,
    R: 'static,
{
    let peers = updates.scope().peers();
    let logger = updates.scope().worker().logger_for::<SkewEventBuilder>(SKEW_LOG_NAME);
    type ByHash<K> = HashMap<u64, (K, u64), BuildHasherDefault<FingerprintHasher>>;
    updates
        .unary_frontier::<CapacityContainerBuilder<Vec<Count<K>>>, _, _, _>(Pipeline, "SkewCount", move |_, _| {
            let mut stash: TimeStash<T, (ByHash<K>, u64, Vec<u64>)> = TimeStash::default();
            // Where the next sample falls, in updates from the next batch's first.
            let mut next = 0;
            move |(input, frontier), output| {
                input.for_each_stamp(|cap, batches| {
                    let Some((counts, total, owned)) = stash.at(&cap) else {
                        return;
                    };
                    owned.resize(peers, 0);
                    for batch in batches {
                        *total += batch.len() as u64;
                        let mut at = next;
                        while let Some((data, _, _)) = batch.get(at) {
                            let key = key(data);
                            let route = key_route(key);
                            counts.entry(route).or_insert_with(|| (key.clone(), 0)).1 += SAMPLE;
                            owned[(route % peers as u64) as usize] += SAMPLE;
                            at += SAMPLE as usize;
                        }
                        next = at - batch.len();
                    }
                });
                stash.drain_complete(frontier, |cap, (counts, total, owned)| {
                    let mut session = output.session(&cap);
                    session.give_iterator(
                        counts
                            .into_values()
                            .filter(|&(_, count)| skew.reports(count, total, peers))
                            .map(|(key, count)| Count::Key(key, count)),
                    );
                    session.give(Count::Total(total, owned));
                });
            }
        })
        .unary_frontier::<CapacityContainerBuilder<Vec<HotKey<K>>>, _, _, _>(
            Exchange::new(|_: &Count<K>| 0),
            "SkewDecide",
            move |_, _| {
                let mut hot = HotKeys::new(peers, skew);
                let mut stash: TimeStash<T, Counted<K>> = TimeStash::default();
                move |(input, frontier), output| {
                    input.for_each_stamp(|cap, batches| {
                        let Some((counts, total, owned)) = stash.at(&cap) else {
                            return;
                        };
                        owned.resize(peers, 0);
                        for count in batches.flat_map(|batch| batch.drain(..)) {
                            match count {
                                Count::Key(key, count) => *counts.entry(key).or_default() += count,
                                Count::Total(count, theirs) => {
                                    *total += count;
                                    owned.iter_mut().zip(theirs).for_each(|(mine, theirs)| *mine += theirs);
                                }
                            }
                        }
                    });
                    stash.drain_complete(frontier, |cap, (counts, total, owned)| {
                        let owner = |key: &K| (key_route(key) % peers as u64) as usize;
                        let changes = hot.end_time(counts, total, &owned, owner);
                        if let Some(logger) = &logger {
                            for (key, shares) in &changes {
                                logger.log(SkewEvent::Hot {
                                    key: key_route(key),
                                    workers: shares.iter().map(|&(worker, _)| worker).collect(),
                                    shares: shares.iter().map(|&(_, share)| share).collect(),
                                });
                            }
                        }
                        output.session(&cap).give_iterator(changes.into_iter());
                    });
                }
            },
        )
        .broadcast()
}

/// One time's counts, as the deciding worker sums them: per key, all
/// updates, and per owner.
type Counted<K> = (HashMap<K, u64>, u64, Vec<u64>);

/// A hot key and its shares from each time on.
type HotSince<K, T> = (K, Vec<(T, Shares)>);

/// Bits of the filter that answers "not hot" for most keys at one test.
const FILTER_BITS: u64 = 1 << 12;

/// Where each worker sends its updates: the hot keys it knows of, and
/// what was sent.
struct Routes<K, T> {
    /// Keys by their route hash (most hashes hold one key).
    hot: HashMap<u64, Vec<HotSince<K, T>>, BuildHasherDefault<FingerprintHasher>>,
    /// A bit per route hash modulo [`FILTER_BITS`]: set if a key of it is hot.
    filter: Vec<u64>,
    peers: u64,
    /// Updates sent to each worker since last logged (empty when nobody listens).
    sent: Vec<u64>,
}

impl<K: Eq + Hashable, T: Timestamp + TotalOrder> Routes<K, T> {
    /// Routes `key`'s updates by `shares` from `time` on.
    fn learn(&mut self, time: T, (key, shares): HotKey<K>) {
        let route = key_route(&key);
        self.filter[((route % FILTER_BITS) / 64) as usize] |= 1 << (route % 64);
        let keys = self.hot.entry(route).or_default();
        match keys.iter_mut().find(|(held, _)| *held == key) {
            Some((_, from)) => from.push((time, shares)),
            None => keys.push((key, vec![(time, shares)])),
        }
    }

    /// The worker an update of `key` at `time` goes to; `record` hashes
    /// the rest of the update. Only the hot keys decided at or before
    /// `time` count: the workers they name hold the other side's copies
    /// from then on.
    #[inline]
    fn worker(&mut self, key: &K, time: &T, record: impl FnOnce() -> u64) -> usize {
        let route = key_route(key);
        let mut worker = (route % self.peers) as usize;
        if self.filter[((route % FILTER_BITS) / 64) as usize] & (1 << (route % 64)) != 0 {
            let shares = self
                .hot
                .get(&route)
                .and_then(|keys| keys.iter().find(|(held, _)| held == key))
                .and_then(|(_, from)| from.iter().rev().find(|(since, _)| since.less_equal(time)));
            if let Some((_, shares)) = shares {
                worker = pick(splitmix64(record() ^ route), shares);
            }
        }
        if let Some(sent) = self.sent.get_mut(worker) {
            *sent += 1;
        }
        worker
    }
}

/// The pact that sends each update to the worker the hot keys `hot` name
/// at its time, as far as this worker has learned them, or else where
/// differential's exchange would. Learning a hot key late is safe: an
/// update routed as before goes to a worker that holds the other side's
/// records for its key all the same.
#[allow(clippy::type_complexity)]
pub(crate) fn route<'scope, T, K, V, R>(
    hot: StreamVec<'scope, T, HotKey<K>>,
) -> Exchange<((K, V), T, R), impl FnMut(&((K, V), T, R)) -> u64 + 'static>
where
    T: Timestamp + TotalOrder,
    K: ExchangeData + Hashable + std::hash::Hash,
    V: ExchangeData + Hashable,
    R: ExchangeData,
{
    let (me, peers) = (hot.scope().index(), hot.scope().peers() as u64);
    let logger = hot.scope().worker().logger_for::<SkewEventBuilder>(SKEW_LOG_NAME);
    let routes = Rc::new(RefCell::new(Routes {
        hot: HashMap::default(),
        filter: vec![0; (FILTER_BITS / 64) as usize],
        peers,
        sent: vec![0; if logger.is_some() { peers as usize } else { 0 }],
    }));
    let learn = Rc::clone(&routes);
    hot.sink(Pipeline, "SkewLearn", move |(input, frontier)| {
        let mut routes = learn.borrow_mut();
        input.for_each_stamp(|cap, batches| {
            if let Some(time) = cap.least() {
                for hot_key in batches.flat_map(|batch| batch.drain(..)) {
                    routes.learn(time.clone(), hot_key);
                }
            }
        });
        // Once per time the hot keys pass: what was sent since the last.
        if let Some(logger) = &logger {
            if routes.sent.iter().any(|&count| count > 0) && !frontier.frontier().is_empty() {
                let sent = std::mem::replace(&mut routes.sent, vec![0; peers as usize]);
                logger.log(SkewEvent::Routed { worker: me, sent });
            }
        }
    });
    Exchange::new(move |((key, val), time, _): &((K, V), T, R)| {
        routes.borrow_mut().worker(key, time, || val.hashed().into()) as u64
    })
}

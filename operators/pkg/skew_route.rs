//! The dataflow half of the skew-proof operators: every worker counts its
//! own updates by key per time, worker 0 decides which keys are hot (and
//! over how many workers each is split) and tells every worker, and each
//! worker routes its updates of a time once it knows the hot keys at that
//! time: a cold key's to the worker differential's exchange would send it
//! to, a hot key's to one of its workers by a hash of the whole record (so
//! that a retraction meets its insertion, and arrangements compact).

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
use timely::dataflow::operators::Capability;
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
                    let Some((counts, total, owned)) = stash.at(&cap) else { return };
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
                let mut stash: TimeStash<T, (HashMap<K, u64>, u64, Vec<u64>)> = TimeStash::default();
                move |(input, frontier), output| {
                    input.for_each_stamp(|cap, batches| {
                        let Some((counts, total, owned)) = stash.at(&cap) else { return };
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

/// A hot key and its shares from each time on.
type HotSince<K, T> = (K, Vec<(T, Shares)>);

/// Where each worker sends its updates: the hot keys it knows of, and
/// what was sent.
struct Routes<K, T> {
    /// Keys by their route hash (most hashes hold one key).
    hot: HashMap<u64, Vec<HotSince<K, T>>, BuildHasherDefault<FingerprintHasher>>,
    peers: u64,
    /// Updates sent to each worker since last logged (empty when nobody listens).
    sent: Vec<u64>,
}

impl<K: Eq + Hashable, T: Timestamp + TotalOrder> Routes<K, T> {
    /// Routes `key`'s updates by `shares` from `time` on.
    fn learn(&mut self, time: T, (key, shares): HotKey<K>) {
        let keys = self.hot.entry(key_route(&key)).or_default();
        match keys.iter_mut().find(|(held, _)| *held == key) {
            Some((_, from)) => from.push((time, shares)),
            None => keys.push((key, vec![(time, shares)])),
        }
    }

    /// The worker an update of `key` at `time` goes to; `record` hashes
    /// the rest of the update. The hot keys from later times do not count,
    /// so an update routes alike whenever it is pushed.
    #[inline]
    fn worker(&mut self, key: &K, time: &T, record: impl FnOnce() -> u64) -> usize {
        let route = key_route(key);
        let worker = self
            .hot
            .get(&route)
            .and_then(|keys| keys.iter().find(|(held, _)| held == key))
            .and_then(|(_, from)| from.iter().rev().find(|(since, _)| since.less_equal(time)))
            .map(|(_, shares)| pick(splitmix64(record() ^ route), shares))
            .unwrap_or((route % self.peers) as usize);
        if let Some(sent) = self.sent.get_mut(worker) {
            *sent += 1;
        }
        worker
    }
}

/// The updates of `updates`, each held until the hot keys at its time are
/// known, and the pact that sends them to the workers `hot` names at their
/// times (see the module's doc).
#[allow(clippy::type_complexity)]
pub(crate) fn route<'scope, T, K, V, R>(
    updates: StreamVec<'scope, T, ((K, V), T, R)>,
    hot: StreamVec<'scope, T, HotKey<K>>,
) -> (
    StreamVec<'scope, T, ((K, V), T, R)>,
    Exchange<((K, V), T, R), impl FnMut(&((K, V), T, R)) -> u64 + 'static>,
)
where
    T: Timestamp + TotalOrder,
    K: ExchangeData + Hashable + std::hash::Hash,
    V: ExchangeData + Hashable,
    R: ExchangeData,
{
    let (me, peers) = (updates.scope().index(), updates.scope().peers() as u64);
    let logger = updates.scope().worker().logger_for::<SkewEventBuilder>(SKEW_LOG_NAME);
    let routes = Rc::new(RefCell::new(Routes {
        hot: HashMap::default(),
        peers,
        sent: vec![0; if logger.is_some() { peers as usize } else { 0 }],
    }));
    let learn = Rc::clone(&routes);
    type Pending<T, D> = BTreeMap<T, (Capability<T>, Vec<D>)>;
    let held = updates.binary_frontier::<_, CapacityContainerBuilder<Vec<((K, V), T, R)>>, _, _, _, _>(
        hot,
        Pipeline,
        Pipeline,
        "SkewHold",
        move |_, _| {
            let mut learned: BTreeMap<T, Vec<HotKey<K>>> = BTreeMap::new();
            let mut pending: Pending<T, ((K, V), T, R)> = BTreeMap::new();
            move |(updates, _), (hot, hot_frontier), output| {
                hot.for_each_stamp(|cap, batches| {
                    if let Some(time) = cap.least() {
                        learned
                            .entry(time.clone())
                            .or_default()
                            .extend(batches.flat_map(|batch| batch.drain(..)));
                    }
                });
                updates.for_each_stamp(|cap, batches| {
                    let Some(stamp) = cap.least() else { return };
                    for batch in batches {
                        // Held at each update's own time, which the hot keys must have passed.
                        if batch.iter().all(|update| update.1 == *stamp) {
                            let held = pending
                                .entry(stamp.clone())
                                .or_insert_with(|| (cap.delayed(stamp, 0), Vec::new()));
                            held.1.append(batch);
                            continue;
                        }
                        for update in batch.drain(..) {
                            let held = pending
                                .entry(update.1.clone())
                                .or_insert_with(|| (cap.delayed(&update.1, 0), Vec::new()));
                            held.1.push(update);
                        }
                    }
                });
                while let Some(entry) = pending.first_entry() {
                    if hot_frontier.less_equal(entry.key()) {
                        break;
                    }
                    let (time, (cap, mut updates)) = entry.remove_entry();
                    {
                        let mut routes = learn.borrow_mut();
                        while let Some(first) = learned.first_entry() {
                            if *first.key() > time {
                                break;
                            }
                            let (since, hot_keys) = first.remove_entry();
                            for hot_key in hot_keys {
                                routes.learn(since.clone(), hot_key);
                            }
                        }
                        if let Some(logger) = &logger {
                            let sent = std::mem::replace(&mut routes.sent, vec![0; peers as usize]);
                            logger.log(SkewEvent::Routed { worker: me, sent });
                        }
                    }
                    // The pact routes as the updates are given, reading the routes.
                    output.session(&cap).give_container(&mut updates);
                }
            }
        },
    );
    let pact = Exchange::new(move |((key, val), time, _): &((K, V), T, R)| {
        routes.borrow_mut().worker(key, time, || val.hashed().into()) as u64
    });
    (held, pact)
}

//! The dataflow half of the skew-proof operators: every worker counts its
//! own updates by key per time, worker 0 decides which keys are hot (and
//! over how many workers each is split) and tells every worker, and each
//! worker routes its updates of a time once it knows the hot keys at that
//! time: a cold key's to the worker differential's exchange would send it
//! to, a hot key's to one of its workers by a hash of the whole record (so
//! that a retraction meets its insertion, and arrangements compact).

use std::collections::{BTreeMap, HashMap};
use std::hash::BuildHasherDefault;

use differential_dataflow::{ExchangeData, Hashable};
use serde::{Deserialize, Serialize};
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::{Exchange, Pipeline};
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::vec::{Broadcast, Map};
use timely::dataflow::operators::{Capability, Exchange as ExchangeRecords};
use timely::dataflow::StreamVec;
use timely::order::TotalOrder;
use timely::progress::Timestamp;

use crate::common::hash::{splitmix64, FingerprintHasher};
use crate::common::stash::TimeStash;

use super::hot_keys::{candidates, part, HotKeys, Skew};

/// What a worker tells the deciding worker about one time.
#[derive(Debug, Clone, Serialize, Deserialize)]
enum Count<K> {
    /// A key it saw often, and how often.
    Key(K, u64),
    /// All its updates.
    Total(u64),
}

/// A key turned hot, or split wider, from the time it is sent at: its key
/// and the workers its updates go to from then on (the first is the one
/// its cold updates went to).
pub(crate) type HotKey<K> = (K, Vec<usize>);

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
    type ByHash<K> = HashMap<u64, (K, u64), BuildHasherDefault<FingerprintHasher>>;
    updates
        .unary_frontier::<CapacityContainerBuilder<Vec<Count<K>>>, _, _, _>(Pipeline, "SkewCount", move |_, _| {
            let mut stash: TimeStash<T, (ByHash<K>, u64)> = TimeStash::default();
            move |(input, frontier), output| {
                input.for_each_stamp(|cap, batches| {
                    let Some((counts, total)) = stash.at(&cap) else { return };
                    for batch in batches {
                        *total += batch.len() as u64;
                        for (data, _, _) in batch.iter() {
                            let key = key(data);
                            counts.entry(key_route(key)).or_insert_with(|| (key.clone(), 0)).1 += 1;
                        }
                    }
                });
                stash.drain_complete(frontier, |cap, (counts, total)| {
                    let mut session = output.session(&cap);
                    session.give_iterator(
                        counts
                            .into_values()
                            .filter(|&(_, count)| skew.reports(count, total, peers))
                            .map(|(key, count)| Count::Key(key, count)),
                    );
                    session.give(Count::Total(total));
                });
            }
        })
        .unary_frontier::<CapacityContainerBuilder<Vec<HotKey<K>>>, _, _, _>(
            Exchange::new(|_: &Count<K>| 0),
            "SkewDecide",
            move |_, _| {
                let mut hot = HotKeys::new(peers, skew);
                let mut stash: TimeStash<T, (HashMap<K, u64>, u64)> = TimeStash::default();
                move |(input, frontier), output| {
                    input.for_each_stamp(|cap, batches| {
                        let Some((counts, total)) = stash.at(&cap) else { return };
                        for count in batches.flat_map(|batch| batch.drain(..)) {
                            match count {
                                Count::Key(key, count) => *counts.entry(key).or_default() += count,
                                Count::Total(count) => *total += count,
                            }
                        }
                    });
                    stash.drain_complete(frontier, |cap, (counts, total)| {
                        let changes = hot.end_time(counts, total);
                        output
                            .session(&cap)
                            .give_iterator(changes.into_iter().map(|(key, parts)| {
                                let workers = candidates(key_route(&key), parts, peers);
                                (key, workers)
                            }));
                    });
                }
            },
        )
        .broadcast()
}

/// Where each worker sends its updates: the hot keys it knows of.
struct Routes<K> {
    /// Keys by their route hash (most hashes hold one key).
    hot: HashMap<u64, Vec<HotKey<K>>, BuildHasherDefault<FingerprintHasher>>,
    peers: u64,
}

impl<K: Eq + Hashable> Routes<K> {
    /// Routes `key`'s updates over `workers` from now on.
    fn learn(&mut self, (key, workers): HotKey<K>) {
        let keys = self.hot.entry(key_route(&key)).or_default();
        match keys.iter_mut().find(|(held, _)| *held == key) {
            Some((_, held)) => *held = workers,
            None => keys.push((key, workers)),
        }
    }

    /// The worker an update of `key`, whose route hash is `route`, goes
    /// to; `record` hashes the rest of the update.
    #[inline]
    fn worker(&self, key: &K, route: u64, record: impl FnOnce() -> u64) -> usize {
        if let Some(keys) = self.hot.get(&route) {
            if let Some((_, workers)) = keys.iter().find(|(held, _)| held == key) {
                return workers[part(splitmix64(record() ^ route), workers.len())];
            }
        }
        (route % self.peers) as usize
    }
}

/// The updates of `updates` sent to the workers `hot` names at their times
/// (see the module's doc).
pub(crate) fn route<'scope, T, K, V, R>(
    updates: StreamVec<'scope, T, ((K, V), T, R)>,
    hot: StreamVec<'scope, T, HotKey<K>>,
) -> StreamVec<'scope, T, ((K, V), T, R)>
where
    T: Timestamp + TotalOrder,
    K: ExchangeData + Hashable + std::hash::Hash,
    V: ExchangeData + Hashable,
    R: ExchangeData,
{
    let peers = updates.scope().peers() as u64;
    type Pending<T, D> = BTreeMap<T, (Capability<T>, Vec<D>)>;
    updates
        .binary_frontier::<_, CapacityContainerBuilder<Vec<(u64, ((K, V), T, R))>>, _, _, _, _>(
            hot,
            Pipeline,
            Pipeline,
            "SkewRoute",
            move |_, _| {
                let mut routes: Routes<K> = Routes {
                    hot: HashMap::default(),
                    peers,
                };
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
                        for batch in batches {
                            for update in batch.drain(..) {
                                // Held at the update's own time, which the hot keys must have passed.
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
                        let (time, (cap, updates)) = entry.remove_entry();
                        while let Some(first) = learned.first_entry() {
                            if *first.key() > time {
                                break;
                            }
                            for hot_key in first.remove() {
                                routes.learn(hot_key);
                            }
                        }
                        let mut session = output.session(&cap);
                        for update in updates {
                            let (key, val) = &update.0;
                            let route = key_route(key);
                            let worker = routes.worker(key, route, || val.hashed().into());
                            session.give((worker as u64, update));
                        }
                    }
                }
            },
        )
        .exchange(|(worker, _): &(u64, ((K, V), T, R))| *worker)
        .map(|(_, update)| update)
}

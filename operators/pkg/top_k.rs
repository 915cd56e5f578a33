//! Streaming top-k over the latest value of each key.

use std::hash::Hash;

use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::Exchange;
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::StreamVec;
use timely::order::TotalOrder;
use timely::progress::Timestamp;
use timely::ExchangeData;

use crate::common::hash::key_hash;
use crate::common::stash::TimeStash;

use super::ranking::{top_of, Ranking};

/// A worker's local top list, tagged with the worker's index.
type LocalTop<K, V> = (usize, Vec<(K, V)>);

/// The `k` keys of highest value, kept up to date as values change.
pub trait TopK<'scope, T: Timestamp + TotalOrder, K, V> {
    /// Reads `(key, value)` updates (the latest value of a key replaces its
    /// earlier ones; give at most one update per key and time, as
    /// [`pkg_accumulate`](super::Aggregate::pkg_accumulate) and
    /// [`pkg_count_running`](super::PkgCount::pkg_count_running) do) and emits, at worker 0,
    /// the top `k` whenever it changes: largest value first, ties by smallest key.
    ///
    /// Each worker ranks the keys it owns (exchanged by key) and sends its own
    /// top `k` to worker 0 when that changes; the global top `k` is the top of
    /// those lists, as every key lives on exactly one worker.
    ///
    /// ```
    /// use timely::dataflow::operators::{ToStream, Inspect};
    /// use equipoise::pkg::key_hash;
    /// use equipoise::pkg::{PartialKeyGrouping, PkgCount, TopK};
    ///
    /// timely::example(|scope| {
    ///     ["a", "b", "a", "c", "a", "b"].map(String::from).to_stream(scope)
    ///         .pkg_count_running(PartialKeyGrouping::new(|word: &String| key_hash(word)))
    ///         .top_k(2)
    ///         .inspect(|top| assert_eq!(top, &vec![("a".to_string(), 3), ("b".to_string(), 2)]));
    /// });
    /// ```
    fn top_k(self, k: usize) -> StreamVec<'scope, T, Vec<(K, V)>>;
}

impl<'scope, T, K, V> TopK<'scope, T, K, V> for StreamVec<'scope, T, (K, V)>
where
    T: Timestamp + TotalOrder,
    K: ExchangeData + Hash + Eq + Ord + Clone,
    V: ExchangeData + Ord + Clone,
{
    fn top_k(self, k: usize) -> StreamVec<'scope, T, Vec<(K, V)>> {
        let worker = self.scope().index();
        let by_key = Exchange::new(|(key, _): &(K, V)| key_hash(key));
        let local = self.unary_frontier::<CapacityContainerBuilder<Vec<LocalTop<K, V>>>, _, _, _>(
            by_key,
            "TopKLocal",
            move |_, _| {
                let mut stash: TimeStash<T, Vec<(K, V)>> = TimeStash::default();
                let mut ranking = Ranking::default();
                let mut last_sent = Vec::new();
                move |(input, frontier), output| {
                    input.for_each_stamp(|cap, batches| {
                        if let Some(updates) = stash.at(&cap) {
                            for batch in batches {
                                updates.append(batch);
                            }
                        }
                    });
                    stash.drain_complete(frontier, |cap, updates| {
                        for (key, value) in updates {
                            ranking.set(key, value);
                        }
                        let top = ranking.top(k);
                        if top != last_sent {
                            last_sent.clone_from(&top);
                            output.session(&cap).give((worker, top));
                        }
                    });
                }
            },
        );
        let to_first = Exchange::new(|_: &LocalTop<K, V>| 0);
        local.unary_frontier::<CapacityContainerBuilder<Vec<Vec<(K, V)>>>, _, _, _>(
            to_first,
            "TopKMerge",
            move |_, _| {
                let mut stash: TimeStash<T, Vec<LocalTop<K, V>>> = TimeStash::default();
                let mut lists: Vec<Vec<(K, V)>> = Vec::new();
                let mut last_sent = Vec::new();
                move |(input, frontier), output| {
                    input.for_each_stamp(|cap, batches| {
                        if let Some(updates) = stash.at(&cap) {
                            for batch in batches {
                                updates.append(batch);
                            }
                        }
                    });
                    stash.drain_complete(frontier, |cap, updates| {
                        for (worker, list) in updates {
                            if lists.len() <= worker {
                                lists.resize_with(worker + 1, Vec::new);
                            }
                            lists[worker] = list;
                        }
                        let top = top_of(lists.iter().flatten().cloned().collect(), k);
                        if top != last_sent {
                            last_sent.clone_from(&top);
                            output.session(&cap).give(top);
                        }
                    });
                }
            },
        )
    }
}

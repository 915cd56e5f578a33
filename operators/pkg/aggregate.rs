//! Two-phase aggregation for split keys: per-worker partials, merged exactly.
//!
//! Under partial key grouping a key's records reach up to two workers (d under
//! heavy-hitter schemes), so a keyed result needs a second phase. Phase one
//! folds each worker's records into one partial per key and time and emits
//! them when the input frontier passes the time; phase two exchanges the
//! partials by key and merges them. The partial type with `Default` as its
//! identity and the fold and merge functions form the user's monoid: merging
//! must be associative and commutative, and folding records one by one then
//! merging must equal folding them all into one partial.

use std::collections::HashMap;
use std::hash::Hash;

use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::{Exchange, ParallelizationContract};
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::StreamVec;
use timely::order::TotalOrder;
use timely::progress::Timestamp;
use timely::ExchangeData;

use crate::common::hash::key_hash;
use crate::common::stash::TimeStash;

/// Data that can be a key of the aggregation operators.
pub trait AggregationKey: ExchangeData + Hash + Eq + Clone {}
impl<K: ExchangeData + Hash + Eq + Clone> AggregationKey for K {}

/// Two-phase aggregation on a stream of `(key, value)` records.
///
/// ```
/// use timely::dataflow::operators::{ToStream, Inspect};
/// use equipoise::pkg::key_hash;
/// use equipoise::pkg::{Aggregate, PartialKeyGrouping};
///
/// timely::example(|scope| {
///     let pact = PartialKeyGrouping::new(|(word, _): &(String, u64)| key_hash(word));
///     vec![("a".to_string(), 2u64), ("b".to_string(), 1), ("a".to_string(), 3)]
///         .to_stream(scope)
///         .pkg_aggregate(pact, |sum: &mut u64, value| *sum += value, |sum, other| *sum += other)
///         .inspect(|(word, sum)| println!("{word}: {sum}"));
/// });
/// ```
pub trait Aggregate<'scope, T: Timestamp + TotalOrder, K: AggregationKey, V> {
    /// Phase one: routes records by `pact` and folds them into one partial per
    /// key and time on each worker, emitted once the time is complete.
    fn pkg_partials<P, A, Fold>(self, pact: P, fold: Fold) -> StreamVec<'scope, T, (K, A)>
    where
        P: ParallelizationContract<T, Vec<(K, V)>>,
        A: ExchangeData + Default,
        Fold: FnMut(&mut A, V) + 'static;

    /// Both phases: the exact aggregate of each key's records at each time.
    fn pkg_aggregate<P, A, Fold, Merge>(self, pact: P, fold: Fold, merge: Merge) -> StreamVec<'scope, T, (K, A)>
    where
        Self: Sized,
        P: ParallelizationContract<T, Vec<(K, V)>>,
        A: ExchangeData + Default,
        Fold: FnMut(&mut A, V) + 'static,
        Merge: FnMut(&mut A, A) + 'static,
    {
        self.pkg_partials(pact, fold).pkg_merge(merge)
    }

    /// Both phases, running: at each time, every key that received records,
    /// with the aggregate of all its records up to and including that time.
    fn pkg_accumulate<P, A, Fold, Merge>(self, pact: P, fold: Fold, merge: Merge) -> StreamVec<'scope, T, (K, A)>
    where
        Self: Sized,
        P: ParallelizationContract<T, Vec<(K, V)>>,
        A: ExchangeData + Default + Clone,
        Fold: FnMut(&mut A, V) + 'static,
        Merge: FnMut(&mut A, A) + 'static,
    {
        self.pkg_partials(pact, fold).pkg_merge_running(merge)
    }
}

/// Phase two on a stream of `(key, partial)`: exchange by key, then merge.
pub trait MergePartials<'scope, T: Timestamp + TotalOrder, K: AggregationKey, A> {
    /// Merges the partials of each key and time into the exact aggregate for
    /// that time.
    fn pkg_merge<Merge>(self, merge: Merge) -> StreamVec<'scope, T, (K, A)>
    where
        Merge: FnMut(&mut A, A) + 'static;

    /// Merges the partials into a running aggregate per key and emits, at each
    /// time, the updated aggregate of every key that changed.
    fn pkg_merge_running<Merge>(self, merge: Merge) -> StreamVec<'scope, T, (K, A)>
    where
        A: Clone,
        Merge: FnMut(&mut A, A) + 'static;
}

/// Counting, the reference user of the two phases.
pub trait PkgCount<'scope, T: Timestamp + TotalOrder, K: AggregationKey> {
    /// Running counts of keys routed by `pact`: at each time, every key seen at
    /// that time with its count so far, emitted by the worker the merge
    /// sends the key to (by its [`key_hash`], as `Exchange` would).
    ///
    /// ```
    /// use timely::dataflow::operators::{ToStream, Inspect};
    /// use equipoise::pkg::key_hash;
    /// use equipoise::pkg::{PartialKeyGrouping, PkgCount};
    ///
    /// timely::example(|scope| {
    ///     ["a", "b", "a"].map(String::from).to_stream(scope)
    ///         .pkg_count_running(PartialKeyGrouping::new(|word: &String| key_hash(word)))
    ///         .inspect(|(word, count)| println!("{word}: {count}"));
    /// });
    /// ```
    fn pkg_count_running<P>(self, pact: P) -> StreamVec<'scope, T, (K, u64)>
    where
        P: ParallelizationContract<T, Vec<K>>;
}

impl<'scope, T, K, V> Aggregate<'scope, T, K, V> for StreamVec<'scope, T, (K, V)>
where
    T: Timestamp + TotalOrder,
    K: AggregationKey,
    V: 'static,
{
    fn pkg_partials<P, A, Fold>(self, pact: P, mut fold: Fold) -> StreamVec<'scope, T, (K, A)>
    where
        P: ParallelizationContract<T, Vec<(K, V)>>,
        A: ExchangeData + Default,
        Fold: FnMut(&mut A, V) + 'static,
    {
        partials(
            self,
            pact,
            move |(key, value)| (key, value),
            move |partial, value| fold(partial, value),
        )
    }
}

impl<'scope, T, K> PkgCount<'scope, T, K> for StreamVec<'scope, T, K>
where
    T: Timestamp + TotalOrder,
    K: AggregationKey,
{
    fn pkg_count_running<P>(self, pact: P) -> StreamVec<'scope, T, (K, u64)>
    where
        P: ParallelizationContract<T, Vec<K>>,
    {
        partials(self, pact, |key| (key, ()), |count: &mut u64, ()| *count += 1)
            .pkg_merge_running(|count, other| *count += other)
    }
}

/// Phase one for any record type: `split` turns a record into key and value.
fn partials<'scope, T, D, K, V, A, P, Split, Fold>(
    stream: StreamVec<'scope, T, D>,
    pact: P,
    mut split: Split,
    mut fold: Fold,
) -> StreamVec<'scope, T, (K, A)>
where
    T: Timestamp + TotalOrder,
    D: 'static,
    K: AggregationKey,
    A: ExchangeData + Default,
    P: ParallelizationContract<T, Vec<D>>,
    Split: FnMut(D) -> (K, V) + 'static,
    Fold: FnMut(&mut A, V) + 'static,
{
    stream.unary_frontier::<CapacityContainerBuilder<Vec<(K, A)>>, _, _, _>(pact, "PkgPartials", |_, _| {
        let mut stash: TimeStash<T, HashMap<K, A>> = TimeStash::default();
        move |(input, frontier), output| {
            input.for_each_stamp(|cap, batches| {
                let Some(partials) = stash.at(&cap) else { return };
                for batch in batches {
                    for record in batch.drain(..) {
                        let (key, value) = split(record);
                        fold(partials.entry(key).or_default(), value);
                    }
                }
            });
            stash.drain_complete(frontier, |cap, partials| {
                output.session(&cap).give_iterator(partials.into_iter());
            });
        }
    })
}

impl<'scope, T, K, A> MergePartials<'scope, T, K, A> for StreamVec<'scope, T, (K, A)>
where
    T: Timestamp + TotalOrder,
    K: AggregationKey,
    A: ExchangeData + Default,
{
    fn pkg_merge<Merge>(self, merge: Merge) -> StreamVec<'scope, T, (K, A)>
    where
        Merge: FnMut(&mut A, A) + 'static,
    {
        merge_partials(self, merge, |_, _, merged| merged)
    }

    fn pkg_merge_running<Merge>(self, mut merge: Merge) -> StreamVec<'scope, T, (K, A)>
    where
        A: Clone,
        Merge: FnMut(&mut A, A) + 'static,
    {
        let mut totals: HashMap<K, A> = HashMap::new();
        merge_partials(
            self,
            move |a, b| merge(a, b),
            move |merge, key, merged| {
                // Most keys already have a total: clone the key only for a
                // new one (the entry API would clone it every time).
                if let Some(total) = totals.get_mut(key) {
                    merge(total, merged);
                    return total.clone();
                }
                let mut total = A::default();
                merge(&mut total, merged);
                totals.insert(key.clone(), total.clone());
                total
            },
        )
    }
}

/// Phase two: merges the partials of each (key, time) and emits, for the key,
/// what `finish` makes of the merged value.
fn merge_partials<'scope, T, K, A, Merge, Finish>(
    stream: StreamVec<'scope, T, (K, A)>,
    mut merge: Merge,
    mut finish: Finish,
) -> StreamVec<'scope, T, (K, A)>
where
    T: Timestamp + TotalOrder,
    K: AggregationKey,
    A: ExchangeData + Default,
    Merge: FnMut(&mut A, A) + 'static,
    Finish: FnMut(&mut Merge, &K, A) -> A + 'static,
{
    let pact = Exchange::new(|(key, _): &(K, A)| key_hash(key));
    stream.unary_frontier::<CapacityContainerBuilder<Vec<(K, A)>>, _, _, _>(pact, "PkgMerge", |_, _| {
        let mut stash: TimeStash<T, HashMap<K, A>> = TimeStash::default();
        move |(input, frontier), output| {
            input.for_each_stamp(|cap, batches| {
                let Some(merged) = stash.at(&cap) else { return };
                for batch in batches {
                    for (key, partial) in batch.drain(..) {
                        merge(merged.entry(key).or_default(), partial);
                    }
                }
            });
            // Complete times in time order, so running aggregates see them in order.
            stash.drain_complete(frontier, |cap, merged| {
                let mut session = output.session(&cap);
                for (key, value) in merged {
                    let value = finish(&mut merge, &key, value);
                    session.give((key, value));
                }
            });
        }
    })
}

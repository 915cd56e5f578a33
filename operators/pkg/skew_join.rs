//! A join whose hot keys are split over several workers.

use std::collections::HashMap;

use differential_dataflow::difference::{Abelian, Multiply, Present, Semigroup};
use differential_dataflow::lattice::Lattice;
use differential_dataflow::operators::arrange::arrangement::arrange_core;
use differential_dataflow::trace::implementations::{ValBatcher, ValSpine};
use differential_dataflow::{ExchangeData, Hashable, VecCollection};
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::Pipeline;
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::vec::Map;
use timely::dataflow::operators::Exchange as ExchangeRecords;
use timely::order::TotalOrder;
use timely::progress::Timestamp;

use super::hot_keys::Skew;
use super::skew_route::{hot_keys, key_route, route, Routes};

/// What a join of `(K, V)` and `(K, V2)` records produces.
pub type Joined<'scope, T, K, V, V2, R, R2> = VecCollection<'scope, T, (K, (V, V2)), <R as Multiply<R2>>::Output>;

/// Joining collections whose keys are skewed, with no key's work on one
/// worker.
pub trait SkewJoin<'scope, T: Timestamp, K, V, R> {
    /// The same collection as differential's `join`: `(key, (val1, val2))`
    /// for every pair of records with equal keys, multiplicities
    /// multiplied, at every time.
    ///
    /// Keys that carry a large share of `self`'s updates are split: their
    /// updates go to several workers (by a hash of the whole record), and
    /// `other`'s updates for them are copied to each of those workers from
    /// the time the key turned hot. Other keys go where `join` sends them.
    /// Put the larger, skewed collection first. Times must be totally
    /// ordered (as `count_total`'s).
    ///
    /// ```
    /// use differential_dataflow::input::Input;
    /// use equipoise::pkg::SkewJoin;
    ///
    /// timely::example(|scope| {
    ///     // A fact stream where key 0 is hot, and a table of one row per key.
    ///     let facts = scope.new_collection_from((0..1000u64).map(|i| (if i % 2 == 0 { 0 } else { i % 10 }, i))).1;
    ///     let names = scope.new_collection_from((0..10u64).map(|k| (k, format!("key {k}")))).1;
    ///     facts.clone().skew_join(names.clone()).assert_eq(facts.join(names));
    /// });
    /// ```
    fn skew_join<V2, R2>(self, other: VecCollection<'scope, T, (K, V2), R2>) -> Joined<'scope, T, K, V, V2, R, R2>
    where
        V2: ExchangeData,
        R2: ExchangeData + Semigroup,
        R: Multiply<R2, Output: Semigroup + 'static>;

    /// [`skew_join`](Self::skew_join) with hot keys found and split by
    /// `skew`.
    fn skew_join_with<V2, R2>(
        self,
        other: VecCollection<'scope, T, (K, V2), R2>,
        skew: Skew,
    ) -> Joined<'scope, T, K, V, V2, R, R2>
    where
        V2: ExchangeData,
        R2: ExchangeData + Semigroup,
        R: Multiply<R2, Output: Semigroup + 'static>;

    /// As differential's `join_map`, split as
    /// [`skew_join`](Self::skew_join) by `skew`: `logic` of every pair of
    /// records with equal keys.
    fn skew_join_map<V2, R2, D, L>(
        self,
        other: VecCollection<'scope, T, (K, V2), R2>,
        skew: Skew,
        logic: L,
    ) -> VecCollection<'scope, T, D, <R as Multiply<R2>>::Output>
    where
        V2: ExchangeData,
        R2: ExchangeData + Semigroup,
        R: Multiply<R2, Output: Semigroup + 'static>,
        D: differential_dataflow::Data,
        L: Fn(&K, &V, &V2) -> D + Clone + 'static;

    /// As differential's `semijoin`, split as [`skew_join`](Self::skew_join):
    /// the records of `self` whose key is in `other`, multiplicities
    /// multiplied.
    ///
    /// ```
    /// use differential_dataflow::input::Input;
    /// use equipoise::pkg::SkewJoin;
    ///
    /// timely::example(|scope| {
    ///     let facts = scope.new_collection_from((0..1000u64).map(|i| (if i % 2 == 0 { 0 } else { i % 10 }, i))).1;
    ///     let wanted = scope.new_collection_from([0u64, 3, 7]).1;
    ///     facts.clone().skew_semijoin(wanted.clone()).assert_eq(facts.clone().semijoin(wanted.clone()));
    ///     facts.clone().skew_antijoin(wanted.clone()).assert_eq(facts.antijoin(wanted));
    /// });
    /// ```
    fn skew_semijoin<R2>(
        self,
        other: VecCollection<'scope, T, K, R2>,
    ) -> VecCollection<'scope, T, (K, V), <R as Multiply<R2>>::Output>
    where
        R2: ExchangeData + Semigroup,
        R: Multiply<R2, Output: Semigroup + 'static>;

    /// As differential's `antijoin`, split as [`skew_join`](Self::skew_join):
    /// `self` less its [`skew_semijoin`](Self::skew_semijoin) with `other`.
    fn skew_antijoin<R2>(self, other: VecCollection<'scope, T, K, R2>) -> VecCollection<'scope, T, (K, V), R>
    where
        R2: ExchangeData + Semigroup,
        R: Multiply<R2, Output = R> + Abelian + 'static;
}

impl<'scope, T, K, V, R> SkewJoin<'scope, T, K, V, R> for VecCollection<'scope, T, (K, V), R>
where
    T: Timestamp + Lattice + TotalOrder + Ord,
    K: ExchangeData + Hashable + std::hash::Hash,
    V: ExchangeData + Hashable,
    R: ExchangeData + Semigroup,
{
    fn skew_join<V2, R2>(self, other: VecCollection<'scope, T, (K, V2), R2>) -> Joined<'scope, T, K, V, V2, R, R2>
    where
        V2: ExchangeData,
        R2: ExchangeData + Semigroup,
        R: Multiply<R2, Output: Semigroup + 'static>,
    {
        self.skew_join_with(other, Skew::default())
    }

    fn skew_join_with<V2, R2>(
        self,
        other: VecCollection<'scope, T, (K, V2), R2>,
        skew: Skew,
    ) -> Joined<'scope, T, K, V, V2, R, R2>
    where
        V2: ExchangeData,
        R2: ExchangeData + Semigroup,
        R: Multiply<R2, Output: Semigroup + 'static>,
    {
        self.skew_join_map(other, skew, |key, val, val2| (key.clone(), (val.clone(), val2.clone())))
    }

    fn skew_join_map<V2, R2, D, L>(
        self,
        other: VecCollection<'scope, T, (K, V2), R2>,
        skew: Skew,
        logic: L,
    ) -> VecCollection<'scope, T, D, <R as Multiply<R2>>::Output>
    where
        V2: ExchangeData,
        R2: ExchangeData + Semigroup,
        R: Multiply<R2, Output: Semigroup + 'static>,
        D: differential_dataflow::Data,
        L: Fn(&K, &V, &V2) -> D + Clone + 'static,
    {
        let me = self.inner.scope().index();
        let peers = self.inner.scope().peers() as u64;
        if peers == 1 {
            // Nothing to split over.
            return self.join_map(other, logic);
        }
        // This side: each update to its key's worker, or a hot key's to one of its workers.
        let routes = Routes::shared(&self.inner.scope());
        let mine = arrange_core::<_, _, ValBatcher<K, V, T, R>, ValSpine<K, V, T, R>>(
            self.inner,
            route(&routes),
            "SkewJoinArrange",
            ValBatcher::new,
        );
        let hot = hot_keys(mine.stream.clone(), &routes, skew);
        // The other side where `join` puts it, and for each hot key a copy on
        // every other worker of the key, from the time the key turned hot:
        // the key's worker joins the copies of its records (`Present`: never
        // retracted, as a hot key stays hot) with the other side.
        let theirs = other.arrange_by_key();
        let copies = hot.unary::<CapacityContainerBuilder<Vec<((K, usize), T, Present)>>, _, _, _>(
            Pipeline,
            "SkewJoinHot",
            move |_, _| {
                // The workers each of this worker's hot keys is copied to so far.
                let mut sent: HashMap<K, Vec<usize>> = HashMap::new();
                let mut last: Option<T> = None;
                move |input, output| {
                    input.for_each_stamp(|cap, batches| {
                        let Some(time) = cap.least().cloned() else { return };
                        // A copy stamped later than a deal it serves would
                        // miss rows: the deals must come in time order.
                        debug_assert!(last.as_ref().is_none_or(|last| last.less_equal(&time)));
                        last = Some(time.clone());
                        let mut session = output.session(&cap);
                        for (key, shares) in batches.flat_map(|batch| batch.drain(..)) {
                            if key_route(&key) % peers != me as u64 {
                                continue;
                            }
                            let sent = sent.entry(key.clone()).or_insert_with(|| vec![me]);
                            for (worker, _) in shares {
                                if !sent.contains(&worker) {
                                    sent.push(worker);
                                    session.give(((key.clone(), worker), time.clone(), Present));
                                }
                            }
                        }
                    });
                }
            },
        );
        let copies = arrange_core::<_, _, ValBatcher<K, usize, T, Present>, ValSpine<K, usize, T, Present>>(
            copies,
            Pipeline,
            "SkewJoinCopies",
            ValBatcher::new,
        );
        let copied = copies
            .join_core(theirs.clone(), |key, &worker, val| {
                Some((worker, (key.clone(), val.clone())))
            })
            .inner
            .exchange(|((worker, _), _, _): &((usize, (K, V2)), T, R2)| *worker as u64)
            .map(|((_, record), time, diff)| (record, time, diff));
        let copied = arrange_core::<_, _, ValBatcher<K, V2, T, R2>, ValSpine<K, V2, T, R2>>(
            copied,
            Pipeline,
            "SkewJoinCopied",
            ValBatcher::new,
        );
        let (first, second) = (logic.clone(), logic);
        mine.clone()
            .join_core(theirs, move |key, val, val2| Some(first(key, val, val2)))
            .concat(mine.join_core(copied, move |key, val, val2| Some(second(key, val, val2))))
    }

    fn skew_semijoin<R2>(
        self,
        other: VecCollection<'scope, T, K, R2>,
    ) -> VecCollection<'scope, T, (K, V), <R as Multiply<R2>>::Output>
    where
        R2: ExchangeData + Semigroup,
        R: Multiply<R2, Output: Semigroup + 'static>,
    {
        self.skew_join_map(other.map(|key| (key, ())), Skew::default(), |key, val, _| {
            (key.clone(), val.clone())
        })
    }

    fn skew_antijoin<R2>(self, other: VecCollection<'scope, T, K, R2>) -> VecCollection<'scope, T, (K, V), R>
    where
        R2: ExchangeData + Semigroup,
        R: Multiply<R2, Output = R> + Abelian + 'static,
    {
        self.clone().concat(self.skew_semijoin(other).negate())
    }
}

//! A join whose hot keys are split over several workers.

use std::collections::HashMap;
use std::rc::Rc;

use differential_dataflow::difference::{Abelian, Multiply, Present, Semigroup};
use differential_dataflow::lattice::Lattice;
use differential_dataflow::trace::cursor::{BatchCursor, Cursor};
use differential_dataflow::trace::{Navigable, TraceReader};
use differential_dataflow::{ExchangeData, Hashable, VecCollection};
use timely::dataflow::channels::pact::Pipeline;
use timely::dataflow::operators::vec::Map;
use timely::dataflow::operators::{Concat, Exchange as ExchangeRecords};
use timely::dataflow::StreamVec;
use timely::order::TotalOrder;
use timely::progress::Timestamp;

use super::arrange::{arrange_routed, mark_hot, Arranged};
use super::hot_keys::{hot_keys, SideHotKey};
use super::key_index::key_route;
use super::mover::arrange_moving;
use super::route::{Routes, SharedRoutes};
use super::settings::Skew;

/// What a join of `(K, V)` and `(K, V2)` records produces.
pub type Joined<'scope, T, K, V, V2, R, R2> = VecCollection<'scope, T, (K, (V, V2)), <R as Multiply<R2>>::Output>;

/// Joining collections whose keys are skewed, with no key's work on one
/// worker.
pub trait SkewJoin<'scope, T: Timestamp, K, V, R> {
    /// The same collection as differential's `join`: `(key, (val1, val2))`
    /// for every pair of records with equal keys, multiplicities
    /// multiplied, at every time.
    ///
    /// Keys that carry a large share of either side's updates, on a worker
    /// over the mean load by more than [`Skew::with_tolerance`], are split
    /// on the side with more of their updates (and on that side for good):
    /// their updates on that side go to
    /// several workers (by a hash of the whole record), and the other
    /// side's updates of them are copied to each of those workers from the
    /// time of the first deal that named it. A key's records from before its latest
    /// deal move to the deal's workers, so that insertions meet their
    /// retractions and a change of the other side's rows of the key costs
    /// output only there. Other keys go where `join` sends them.
    /// Times must be totally ordered (as `count_total`'s), and
    /// multiplicities `Abelian` (a move retracts a record where it was).
    ///
    /// ```
    /// use differential_dataflow::input::Input;
    /// use equipoise::skew::SkewJoin;
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
        V2: ExchangeData + Hashable,
        R2: ExchangeData + Abelian,
        R: Multiply<R2, Output: Semigroup + 'static>;

    /// [`skew_join`](Self::skew_join) with hot keys found and split by
    /// `skew`.
    fn skew_join_with<V2, R2>(
        self,
        other: VecCollection<'scope, T, (K, V2), R2>,
        skew: Skew,
    ) -> Joined<'scope, T, K, V, V2, R, R2>
    where
        V2: ExchangeData + Hashable,
        R2: ExchangeData + Abelian,
        R: Multiply<R2, Output: Semigroup + 'static>;

    /// As differential's `join_map`, split as
    /// [`skew_join`](Self::skew_join): `logic` of every pair of records
    /// with equal keys.
    ///
    /// ```
    /// use differential_dataflow::input::Input;
    /// use equipoise::skew::SkewJoin;
    ///
    /// timely::example(|scope| {
    ///     let facts = scope.new_collection_from((0..1000u64).map(|i| (if i % 2 == 0 { 0 } else { i % 10 }, i))).1;
    ///     let names = scope.new_collection_from((0..10u64).map(|k| (k, format!("key {k}")))).1;
    ///     let named = |_: &u64, fact: &u64, name: &String| (*fact, name.clone());
    ///     facts.clone().skew_join_map(names.clone(), named).assert_eq(facts.join_map(names, named));
    /// });
    /// ```
    fn skew_join_map<V2, R2, D, L>(
        self,
        other: VecCollection<'scope, T, (K, V2), R2>,
        logic: L,
    ) -> VecCollection<'scope, T, D, <R as Multiply<R2>>::Output>
    where
        V2: ExchangeData + Hashable,
        R2: ExchangeData + Abelian,
        R: Multiply<R2, Output: Semigroup + 'static>,
        D: differential_dataflow::Data,
        L: Fn(&K, &V, &V2) -> D + Clone + 'static;

    /// [`skew_join_map`](Self::skew_join_map) with hot keys found and split
    /// by `skew`.
    fn skew_join_map_with<V2, R2, D, L>(
        self,
        other: VecCollection<'scope, T, (K, V2), R2>,
        skew: Skew,
        logic: L,
    ) -> VecCollection<'scope, T, D, <R as Multiply<R2>>::Output>
    where
        V2: ExchangeData + Hashable,
        R2: ExchangeData + Abelian,
        R: Multiply<R2, Output: Semigroup + 'static>,
        D: differential_dataflow::Data,
        L: Fn(&K, &V, &V2) -> D + Clone + 'static;

    /// As differential's `semijoin`, split as [`skew_join`](Self::skew_join):
    /// the records of `self` whose key is in `other`, multiplicities
    /// multiplied.
    ///
    /// ```
    /// use differential_dataflow::input::Input;
    /// use equipoise::skew::SkewJoin;
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
        R2: ExchangeData + Abelian,
        R: Multiply<R2, Output: Semigroup + 'static>;

    /// [`skew_semijoin`](Self::skew_semijoin) with hot keys found and split
    /// by `skew`.
    fn skew_semijoin_with<R2>(
        self,
        other: VecCollection<'scope, T, K, R2>,
        skew: Skew,
    ) -> VecCollection<'scope, T, (K, V), <R as Multiply<R2>>::Output>
    where
        R2: ExchangeData + Abelian,
        R: Multiply<R2, Output: Semigroup + 'static>;

    /// As differential's `antijoin`, split as [`skew_join`](Self::skew_join):
    /// `self` less its [`skew_semijoin`](Self::skew_semijoin) with `other`.
    fn skew_antijoin<R2>(self, other: VecCollection<'scope, T, K, R2>) -> VecCollection<'scope, T, (K, V), R>
    where
        R2: ExchangeData + Abelian,
        R: Multiply<R2, Output = R> + Abelian + 'static;

    /// [`skew_antijoin`](Self::skew_antijoin) with hot keys found and split
    /// by `skew`.
    fn skew_antijoin_with<R2>(
        self,
        other: VecCollection<'scope, T, K, R2>,
        skew: Skew,
    ) -> VecCollection<'scope, T, (K, V), R>
    where
        R2: ExchangeData + Abelian,
        R: Multiply<R2, Output = R> + Abelian + 'static;
}

impl<'scope, T, K, V, R> SkewJoin<'scope, T, K, V, R> for VecCollection<'scope, T, (K, V), R>
where
    T: Timestamp + Lattice + TotalOrder + Ord,
    K: ExchangeData + Hashable + std::hash::Hash + std::fmt::Debug,
    V: ExchangeData + Hashable,
    R: ExchangeData + Abelian,
{
    fn skew_join<V2, R2>(self, other: VecCollection<'scope, T, (K, V2), R2>) -> Joined<'scope, T, K, V, V2, R, R2>
    where
        V2: ExchangeData + Hashable,
        R2: ExchangeData + Abelian,
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
        V2: ExchangeData + Hashable,
        R2: ExchangeData + Abelian,
        R: Multiply<R2, Output: Semigroup + 'static>,
    {
        self.skew_join_map_with(other, skew, |key, val, val2| (key.clone(), (val.clone(), val2.clone())))
    }

    fn skew_join_map<V2, R2, D, L>(
        self,
        other: VecCollection<'scope, T, (K, V2), R2>,
        logic: L,
    ) -> VecCollection<'scope, T, D, <R as Multiply<R2>>::Output>
    where
        V2: ExchangeData + Hashable,
        R2: ExchangeData + Abelian,
        R: Multiply<R2, Output: Semigroup + 'static>,
        D: differential_dataflow::Data,
        L: Fn(&K, &V, &V2) -> D + Clone + 'static,
    {
        self.skew_join_map_with(other, Skew::default(), logic)
    }

    fn skew_join_map_with<V2, R2, D, L>(
        self,
        other: VecCollection<'scope, T, (K, V2), R2>,
        skew: Skew,
        logic: L,
    ) -> VecCollection<'scope, T, D, <R as Multiply<R2>>::Output>
    where
        V2: ExchangeData + Hashable,
        R2: ExchangeData + Abelian,
        R: Multiply<R2, Output: Semigroup + 'static>,
        D: differential_dataflow::Data,
        L: Fn(&K, &V, &V2) -> D + Clone + 'static,
    {
        let scope = self.inner.scope();
        if scope.peers() == 1 {
            // Nothing to split over.
            return self.join_map(other, logic);
        }
        // Each side's updates to their key's worker, or, for a key split on
        // that side, to one of the key's workers.
        let (routes, their_routes) = (Routes::shared(&scope), Routes::shared(&scope));
        let (mine, routed) = arrange_moving(self.inner, &routes, "SkewJoinArrange");
        let (theirs, their_routed) = arrange_moving(other.inner, &their_routes, "SkewJoinArrangeOther");
        join_routed(
            (mine, routes),
            (theirs, their_routes),
            routed.concat(their_routed),
            skew,
            move |key, val, val2| Some(logic(key, val, val2)),
        )
    }

    fn skew_semijoin<R2>(
        self,
        other: VecCollection<'scope, T, K, R2>,
    ) -> VecCollection<'scope, T, (K, V), <R as Multiply<R2>>::Output>
    where
        R2: ExchangeData + Abelian,
        R: Multiply<R2, Output: Semigroup + 'static>,
    {
        self.skew_semijoin_with(other, Skew::default())
    }

    fn skew_semijoin_with<R2>(
        self,
        other: VecCollection<'scope, T, K, R2>,
        skew: Skew,
    ) -> VecCollection<'scope, T, (K, V), <R as Multiply<R2>>::Output>
    where
        R2: ExchangeData + Abelian,
        R: Multiply<R2, Output: Semigroup + 'static>,
    {
        self.skew_join_map_with(other.map(|key| (key, ())), skew, |key, val, _| {
            (key.clone(), val.clone())
        })
    }

    fn skew_antijoin<R2>(self, other: VecCollection<'scope, T, K, R2>) -> VecCollection<'scope, T, (K, V), R>
    where
        R2: ExchangeData + Abelian,
        R: Multiply<R2, Output = R> + Abelian + 'static,
    {
        self.skew_antijoin_with(other, Skew::default())
    }

    fn skew_antijoin_with<R2>(
        self,
        other: VecCollection<'scope, T, K, R2>,
        skew: Skew,
    ) -> VecCollection<'scope, T, (K, V), R>
    where
        R2: ExchangeData + Abelian,
        R: Multiply<R2, Output = R> + Abelian + 'static,
    {
        self.clone().concat(self.skew_semijoin_with(other, skew).negate())
    }
}

/// Updates arranged by key where their routes sent them, with the routes.
type Routed<'scope, K, V, T, R> = (Arranged<'scope, K, V, T, R>, SharedRoutes<K, T>);

/// The core of the skew-proof joins, over both sides arranged where their
/// routes sent them (`routed` passes a time once both sides' updates of it
/// are counted): finds the hot keys from both sides' counts, copies
/// the other side's updates of each to the key's workers, and yields
/// `logic` of every pair of records with equal keys (differential's
/// `join_core` on each of the three meetings).
fn join_routed<'scope, T, K, V, V2, R, R2, I, L>(
    (mine, routes): Routed<'scope, K, V, T, R>,
    (theirs, their_routes): Routed<'scope, K, V2, T, R2>,
    routed: StreamVec<'scope, T, ()>,
    skew: Skew,
    logic: L,
) -> VecCollection<'scope, T, I::Item, <R as Multiply<R2>>::Output>
where
    T: Timestamp + Lattice + TotalOrder + Ord,
    K: ExchangeData + Hashable + std::hash::Hash + std::fmt::Debug,
    V: ExchangeData,
    V2: ExchangeData,
    R: ExchangeData + Semigroup + Multiply<R2, Output: Semigroup + 'static>,
    R2: ExchangeData + Abelian,
    I: IntoIterator<Item: differential_dataflow::Data>,
    L: FnMut(&K, &V, &V2) -> I + Clone + 'static,
{
    let hot = hot_keys(routed, &[Rc::clone(&routes), Rc::clone(&their_routes)], skew);
    // A key split on one side meets the other side's updates on its
    // owner (where they stay) and on its other workers (copies).
    let sent_to = |routes: &SharedRoutes<K, T>| {
        let routes = Rc::clone(routes);
        move |worker| routes.borrow_mut().log.sent_to(worker)
    };
    let copied_theirs = copied(copy_marks(hot.clone(), 0), theirs.clone(), sent_to(&their_routes));
    let copied_mine = copied(copy_marks(hot, 1), mine.clone(), sent_to(&routes));
    mine.clone()
        .join_core(theirs.clone(), logic.clone())
        .concat(mine.join_core(copied_theirs, logic.clone()))
        .concat(copied_mine.join_core(theirs, logic))
}

/// Marks, on each hot key's owner, of the workers the key split on `side`
/// by `hot` is copied to: each of its workers but its owner, from the time
/// the key was dealt there (never retracted, as a hot key stays hot).
pub(crate) fn copy_marks<'scope, T, K>(
    hot: StreamVec<'scope, T, SideHotKey<K>>,
    side: usize,
) -> Arranged<'scope, K, usize, T, Present>
where
    T: Timestamp + Lattice + TotalOrder + Ord,
    K: ExchangeData + Hashable + std::hash::Hash + std::fmt::Debug,
{
    let (me, peers) = (hot.scope().index(), hot.scope().peers() as u64);
    // The workers each of this worker's hot keys is copied to so far.
    let mut sent: HashMap<K, Vec<usize>> = HashMap::new();
    mark_hot(hot, "SkewJoinHot", move |_, dealt, key, shares, out| {
        if dealt != side || key_route(&key) % peers != me as u64 {
            return;
        }
        let sent = sent.entry(key.clone()).or_insert_with(|| vec![me]);
        for (worker, _) in shares {
            if !sent.contains(&worker) {
                sent.push(worker);
                out.push((key.clone(), worker));
            }
        }
    })
}

/// Copies of `source`'s updates (arranged where their keys' owners hold
/// every update of a key not split on their side) of the keys `marks`
/// (arranged on each key's owner, maybe entered into a loop) names
/// workers for: on each of those workers, from the mark's time, arranged
/// there. `sent_to` counts each copy's worker, for the log.
pub(crate) fn copied<'scope, Tm, T, K, V, R>(
    marks: differential_dataflow::operators::arrange::Arranged<'scope, Tm>,
    source: Arranged<'scope, K, V, T, R>,
    mut sent_to: impl FnMut(usize) + 'static,
) -> Arranged<'scope, K, V, T, R>
where
    T: Timestamp + Lattice + Ord,
    Tm: TraceReader<Time = T, Batch: Navigable> + Clone + 'static,
    BatchCursor<Tm>: Cursor<Diff = Present, Time = T, KeyContainer = Vec<K>>,
    for<'a> BatchCursor<Tm>: Cursor<Key<'a> = &'a K, Val<'a> = &'a usize>,
    K: ExchangeData,
    V: ExchangeData,
    R: ExchangeData + Semigroup,
{
    let copied = marks
        .join_core(source, |key, &worker, val| Some((worker, (key.clone(), val.clone()))))
        .inner
        .exchange(move |((worker, _), _, _): &((usize, (K, V)), T, R)| {
            sent_to(*worker);
            *worker as u64
        })
        .map(|((_, record), time, diff)| (record, time, diff));
    arrange_routed(copied, Pipeline, "SkewJoinCopied")
}

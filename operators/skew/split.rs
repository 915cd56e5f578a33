//! A collection arranged by key with its hot keys split over several
//! workers, to join with inside a loop. Decisions and moves need totally
//! ordered times, which a loop's are not; a collection that enters a loop
//! from outside (a graph's edges) is split where its times are totally
//! ordered, and its records and the marks of which worker holds a part of
//! which key enter the loop as arrangements. Inside, the other side (the
//! loop variable) is arranged on each key's owner and copied to a hot
//! key's other workers from the key's mark on: the join is the owner's
//! join plus the copies' joins, exact at every (outer, iteration) time,
//! with no round trip per iteration (records move only at outer times).

use std::rc::Rc;

use differential_dataflow::difference::{Abelian, Multiply, Present, Semigroup};
use differential_dataflow::lattice::Lattice;
use differential_dataflow::operators::arrange::{Arranged as DdArranged, TraceAgent};
use differential_dataflow::trace::cursor::{BatchCursor, Cursor};
use differential_dataflow::trace::implementations::ValSpine;
use differential_dataflow::trace::wrappers::enter::TraceEnter;
use differential_dataflow::trace::{Navigable, TraceReader};
use differential_dataflow::{ExchangeData, Hashable, VecCollection};
use timely::dataflow::channels::pact::Pipeline;
use timely::dataflow::operators::generic::operator::empty;
use timely::dataflow::Scope;
use timely::order::TotalOrder;
use timely::progress::timestamp::Refines;
use timely::progress::Timestamp;

use super::arrange::{arrange_routed, Arranged};
use super::hot_keys::hot_keys;
use super::join::{copied, copy_marks, Joined};
use super::mover::arrange_moving;
use super::route::Routes;
use super::settings::Skew;

/// The hot share [`SkewArrange::skew_arrange_by_key`] splits from: half
/// [`Skew`]'s default. A split key costs copies of the other side's values
/// alone (in a loop, one per change of a value), while its records meet
/// every join and iteration: on a Chung–Lu graph at 16 workers, 0.1 left
/// keys of a twentieth of a worker's load whole, several to a worker
/// (the busiest at 1.22× the mean), where 0.05 splits them (1.02×).
const SPLIT_HOT_SHARE: f64 = 0.05;

/// A collection arranged by key, each hot key's records split over its
/// workers, with the marks of which workers hold a part of which key (on
/// the key's owner): what [`SkewArrange::skew_arrange_by_key`] builds and
/// [`enter`](Self::enter) brings into a loop. Join it with
/// [`join`](Self::join), [`join_map`](Self::join_map) or
/// [`join_core`](Self::join_core); one split arrangement serves any number
/// of joins, in the scope it was built in or entered.
///
/// Like differential's `Arranged`, it holds handles on the traces: drop it
/// (as a dataflow's building closure does) once the joins are built, or
/// the traces are never compacted.
pub struct SkewArranged<'scope, Tr: TraceReader, Tm: TraceReader> {
    /// The records, each hot key's on the workers of its latest deal.
    records: DdArranged<'scope, Tr>,
    /// `(key, worker)` on each hot key's owner: the key's other side is
    /// copied to `worker` from the mark's time on.
    copy_to: DdArranged<'scope, Tm>,
}

impl<'scope, Tr: TraceReader + Clone, Tm: TraceReader + Clone> Clone for SkewArranged<'scope, Tr, Tm> {
    fn clone(&self) -> Self {
        SkewArranged {
            records: self.records.clone(),
            copy_to: self.copy_to.clone(),
        }
    }
}

/// The split arrangement [`SkewArrange::skew_arrange_by_key`] builds, of
/// `(K, V)` records at times `T` counted in `R`.
pub type SkewArrangedByKey<'scope, T, K, V, R> =
    SkewArranged<'scope, TraceAgent<ValSpine<K, V, T, R>>, TraceAgent<ValSpine<K, usize, T, Present>>>;

/// A [`SkewArrangedByKey`] entered into a loop whose inner times are
/// `TInner` (`Product<T, u64>` in differential's `iterate`).
pub type SkewArrangedEntered<'scope, T, TInner, K, V, R> = SkewArranged<
    'scope,
    TraceEnter<TraceAgent<ValSpine<K, V, T, R>>, TInner>,
    TraceEnter<TraceAgent<ValSpine<K, usize, T, Present>>, TInner>,
>;

/// Arranging a collection by key with its hot keys split, to join with
/// (in loops too: see [`SkewArranged::enter`]).
pub trait SkewArrange<'scope, T: Timestamp + Lattice, K: ExchangeData, V: ExchangeData, R: ExchangeData + Semigroup> {
    /// This collection arranged by key, hot keys split over workers as
    /// [`skew_join`](super::SkewJoin::skew_join) splits them on this side:
    /// a key that carries a large share of the updates, on a worker over
    /// the mean load, has its records dealt over several workers (by a
    /// hash of the whole record), and its records from before the deal
    /// move there. A key is hot from 0.05 of a worker's mean load (half
    /// [`Skew`]'s default: a split key costs only copies of the other
    /// side's values). Times must be totally ordered: build it outside the
    /// loop and [`enter`](SkewArranged::enter) it.
    ///
    /// ```
    /// use differential_dataflow::input::Input;
    /// use differential_dataflow::operators::Iterate;
    /// use equipoise::skew::{SkewArrange, SkewReduce};
    ///
    /// timely::execute(timely::Config::process(2), |worker| {
    ///     worker.dataflow::<u64, _, _>(|scope| {
    ///         // A star around node 0, and a path 1 -> 2 -> ... -> 50.
    ///         let edges = (1..2000u32).map(|n| (0, n)).chain((1..50).map(|n| (n, n + 1)));
    ///         let edges = scope.new_collection_from(edges).1;
    ///         let roots = scope.new_collection_from([(0u32, 0u32)]).1;
    ///         let split = edges.clone().skew_arrange_by_key();
    ///         // Breadth-first search: each node's least distance from the root.
    ///         let start = roots.clone();
    ///         let reach = roots.clone().iterate(|inner, dists| {
    ///             let edges = split.enter(inner);
    ///             edges
    ///                 .join_map(dists, |_, &dst, &dist| (dst, dist + 1))
    ///                 .concat(start.enter(inner))
    ///                 .skew_combine()
    ///                 .reduce(|_, dists, out| out.push((*dists[0].0, 1)))
    ///         });
    ///         let expected = roots.clone().iterate(|inner, dists| {
    ///             dists
    ///                 .join_map(edges.enter(inner), |_, &dist, &dst| (dst, dist + 1))
    ///                 .concat(roots.enter(inner))
    ///                 .reduce(|_, dists, out| out.push((*dists[0].0, 1)))
    ///         });
    ///         reach.assert_eq(expected);
    ///     });
    /// })
    /// .unwrap();
    /// ```
    fn skew_arrange_by_key(self) -> SkewArrangedByKey<'scope, T, K, V, R>;

    /// [`skew_arrange_by_key`](Self::skew_arrange_by_key) with hot keys
    /// found and split by `skew` (whose own default hot share is 0.1, not
    /// the 0.05 `skew_arrange_by_key` splits from).
    fn skew_arrange_by_key_with(self, skew: Skew) -> SkewArrangedByKey<'scope, T, K, V, R>;
}

impl<'scope, T, K, V, R> SkewArrange<'scope, T, K, V, R> for VecCollection<'scope, T, (K, V), R>
where
    T: Timestamp + Lattice + TotalOrder + Ord,
    K: ExchangeData + Hashable + std::hash::Hash + std::fmt::Debug,
    V: ExchangeData + Hashable,
    R: ExchangeData + Abelian,
{
    fn skew_arrange_by_key(self) -> SkewArrangedByKey<'scope, T, K, V, R> {
        self.skew_arrange_by_key_with(Skew {
            hot_share: SPLIT_HOT_SHARE,
            ..Skew::default()
        })
    }

    fn skew_arrange_by_key_with(self, skew: Skew) -> SkewArrangedByKey<'scope, T, K, V, R> {
        let scope = self.inner.scope();
        if scope.peers() == 1 {
            // Nothing to split over: every key on its owner, no copies.
            return SkewArranged {
                records: arrange_routed(self.inner, Pipeline, "SkewArrange"),
                copy_to: arrange_routed(empty(scope), Pipeline, "SkewArrangeCopyTo"),
            };
        }
        let routes = Routes::shared(&scope);
        let (records, routed) = arrange_moving(self.inner, &routes, "SkewArrange");
        let hot = hot_keys(routed, &[Rc::clone(&routes)], skew);
        SkewArranged {
            records,
            copy_to: copy_marks(hot, 0),
        }
    }
}

impl<'scope, Tr, Tm> SkewArranged<'scope, Tr, Tm>
where
    Tr: TraceReader + Clone,
    Tm: TraceReader<Time = Tr::Time> + Clone,
{
    /// Brings the split arrangement into a nested scope (a loop), as
    /// differential's `Arranged::enter`: the records and marks, unchanged
    /// by the new coordinate. Nothing is copied; the entered arrangement
    /// reads the same traces.
    pub fn enter<'inner, TInner>(
        self,
        child: Scope<'inner, TInner>,
    ) -> SkewArranged<'inner, TraceEnter<Tr, TInner>, TraceEnter<Tm, TInner>>
    where
        TInner: Refines<Tr::Time> + Lattice,
    {
        SkewArranged {
            records: self.records.enter(child),
            copy_to: self.copy_to.enter(child),
        }
    }
}

impl<'scope, Tr, Tm> SkewArranged<'scope, Tr, Tm>
where
    Tr: TraceReader<Batch: Navigable> + Clone + 'static,
    Tm: TraceReader<Time = Tr::Time, Batch: Navigable> + Clone + 'static,
    Tr::Time: Ord,
{
    /// As differential's `join_core`, with `other` arranged by key on each
    /// key's owner (as `arrange_by_key` leaves it: by differential's own
    /// exchange, the key's hash; an arrangement exchanged otherwise gives
    /// a wrong result): `logic` of every pair
    /// of records with equal keys, this side's value first. A hot key's
    /// records of `other` are copied to the key's other workers (and
    /// arranged there) from the time it was dealt there; the output is each
    /// worker's records joined with the records of `other` it holds.
    pub fn join_core<K, V, V2, R, R2, I, L>(
        self,
        other: Arranged<'scope, K, V2, Tr::Time, R2>,
        logic: L,
    ) -> VecCollection<'scope, Tr::Time, I::Item, <R as Multiply<R2>>::Output>
    where
        BatchCursor<Tr>: Cursor<Diff = R, Time = Tr::Time, KeyContainer = Vec<K>>,
        for<'a> BatchCursor<Tr>: Cursor<Key<'a> = &'a K, Val<'a> = &'a V>,
        BatchCursor<Tm>: Cursor<Diff = Present, Time = Tr::Time, KeyContainer = Vec<K>>,
        for<'a> BatchCursor<Tm>: Cursor<Key<'a> = &'a K, Val<'a> = &'a usize>,
        K: ExchangeData,
        V: ExchangeData,
        V2: ExchangeData,
        R: Multiply<R2, Output: Semigroup + 'static> + Clone,
        R2: ExchangeData + Semigroup,
        I: IntoIterator<Item: differential_dataflow::Data>,
        L: FnMut(&K, &V, &V2) -> I + Clone + 'static,
    {
        let copies = copied(self.copy_to, other.clone(), |_| {});
        self.records
            .clone()
            .join_core(other, logic.clone())
            .concat(self.records.join_core(copies, logic))
    }

    /// As differential's `join_map`: `logic` of every pair of records with
    /// equal keys, this side's value first, `other` arranged on each key's
    /// owner and copied as in [`join_core`](Self::join_core).
    pub fn join_map<K, V, V2, R, R2, D, L>(
        self,
        other: VecCollection<'scope, Tr::Time, (K, V2), R2>,
        logic: L,
    ) -> VecCollection<'scope, Tr::Time, D, <R as Multiply<R2>>::Output>
    where
        BatchCursor<Tr>: Cursor<Diff = R, Time = Tr::Time, KeyContainer = Vec<K>>,
        for<'a> BatchCursor<Tr>: Cursor<Key<'a> = &'a K, Val<'a> = &'a V>,
        BatchCursor<Tm>: Cursor<Diff = Present, Time = Tr::Time, KeyContainer = Vec<K>>,
        for<'a> BatchCursor<Tm>: Cursor<Key<'a> = &'a K, Val<'a> = &'a usize>,
        K: ExchangeData + Hashable,
        V: ExchangeData,
        V2: ExchangeData,
        R: Multiply<R2, Output: Semigroup + 'static> + Clone,
        R2: ExchangeData + Semigroup,
        D: differential_dataflow::Data,
        L: Fn(&K, &V, &V2) -> D + Clone + 'static,
    {
        let other = other.arrange_by_key_named("SkewJoinOther");
        self.join_core(other, move |key, val, val2| Some(logic(key, val, val2)))
    }

    /// As differential's `join`: `(key, (val, val2))` for every pair of
    /// records with equal keys, this side's value first, multiplicities
    /// multiplied.
    pub fn join<K, V, V2, R, R2>(
        self,
        other: VecCollection<'scope, Tr::Time, (K, V2), R2>,
    ) -> Joined<'scope, Tr::Time, K, V, V2, R, R2>
    where
        BatchCursor<Tr>: Cursor<Diff = R, Time = Tr::Time, KeyContainer = Vec<K>>,
        for<'a> BatchCursor<Tr>: Cursor<Key<'a> = &'a K, Val<'a> = &'a V>,
        BatchCursor<Tm>: Cursor<Diff = Present, Time = Tr::Time, KeyContainer = Vec<K>>,
        for<'a> BatchCursor<Tm>: Cursor<Key<'a> = &'a K, Val<'a> = &'a usize>,
        K: ExchangeData + Hashable,
        V: ExchangeData,
        V2: ExchangeData,
        R: Multiply<R2, Output: Semigroup + 'static> + Clone,
        R2: ExchangeData + Semigroup,
    {
        self.join_map(other, |key, val, val2| (key.clone(), (val.clone(), val2.clone())))
    }
}

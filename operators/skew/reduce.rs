//! Counts and distincts whose hot keys are combined where they arise.

use differential_dataflow::difference::Semigroup;
use differential_dataflow::lattice::Lattice;
use differential_dataflow::{ExchangeData, Hashable, VecCollection};
use timely::progress::Timestamp;

use super::combine::{combine_every, combine_frequent};
use super::settings::Skew;

/// Reducing collections whose keys are skewed, with no key's work on one
/// worker.
pub trait SkewReduce<'scope, T: Timestamp, K, R> {
    /// The same collection as differential's `count()`: each key with its
    /// accumulated multiplicity, at every time.
    ///
    /// Each worker sums its own updates of the keys it sees often (those
    /// with about 1/2048 of its updates or more, and every key until it has
    /// sampled about a thousand updates) per key and time before
    /// they are exchanged, so a hot key reaches the worker that counts it
    /// as one update per worker, time and delivery of its input; the other
    /// keys go as `count()` sends them. Sums work the same way: the multiplicity `R` is any
    /// semigroup (an `isize` count, a sum carried in the difference).
    ///
    /// ```
    /// use differential_dataflow::input::Input;
    /// use equipoise::skew::SkewReduce;
    ///
    /// timely::example(|scope| {
    ///     // Key 0 takes half the updates.
    ///     let keys = scope.new_collection_from((0..10_000u64).map(|i| if i % 2 == 0 { 0 } else { i })).1;
    ///     keys.clone().skew_count().assert_eq(keys.clone().count());
    ///     keys.clone().skew_distinct().assert_eq(keys.distinct());
    /// });
    /// ```
    fn skew_count(self) -> VecCollection<'scope, T, (K, R), isize>;

    /// The same collection as differential's `distinct()`: each key whose
    /// multiplicity is not zero, once, at every time. Hot keys are combined as
    /// in [`skew_count`](Self::skew_count).
    fn skew_distinct(self) -> VecCollection<'scope, T, K, isize>;

    /// [`skew_count`](Self::skew_count) with the share of a worker's
    /// updates from which a key is summed before the exchange set by `skew`
    /// ([`Skew::with_combine_share`]; its other settings are the splitting
    /// operators').
    ///
    /// ```
    /// use differential_dataflow::input::Input;
    /// use equipoise::skew::{Skew, SkewReduce};
    ///
    /// timely::example(|scope| {
    ///     let keys = scope.new_collection_from((0..10_000u64).map(|i| if i % 2 == 0 { 0 } else { i })).1;
    ///     let skew = Skew::default().with_combine_share(0.01).unwrap();
    ///     keys.clone().skew_count_with(skew).assert_eq(keys.clone().count());
    ///     keys.clone().skew_distinct_with(skew).assert_eq(keys.distinct());
    /// });
    /// ```
    fn skew_count_with(self, skew: Skew) -> VecCollection<'scope, T, (K, R), isize>;

    /// [`skew_distinct`](Self::skew_distinct) with `skew`'s combine share.
    fn skew_distinct_with(self, skew: Skew) -> VecCollection<'scope, T, K, isize>;

    /// The same collection, each worker's updates summed per record and
    /// time within each delivery before they go on: a combiner for use
    /// before differential's `reduce` (or any operator that exchanges by
    /// key), where equal records recur within a time on a worker. Inside a
    /// loop this is what removes a popular key's skew from the reduce that
    /// follows a join: a breadth-first search's proposals to one
    /// destination within one iteration are equal, so each worker sends one
    /// of them per delivery however many of its edges lead there. Exact at any times,
    /// partially ordered ones included (summing equal updates never
    /// changes a collection). Unlike [`skew_count`](Self::skew_count), it
    /// combines every record, as a loop's records recur within one
    /// iteration and not across them: it has no settings, so no `_with`
    /// form.
    ///
    /// ```
    /// use differential_dataflow::input::Input;
    /// use equipoise::skew::SkewReduce;
    ///
    /// timely::example(|scope| {
    ///     let proposals = scope.new_collection_from((0..1000u64).map(|i| (i % 3, 7u64))).1;
    ///     proposals.clone().skew_combine().assert_eq(proposals);
    /// });
    /// ```
    fn skew_combine(self) -> VecCollection<'scope, T, K, R>;
}

impl<'scope, T, K, R> SkewReduce<'scope, T, K, R> for VecCollection<'scope, T, K, R>
where
    T: Timestamp + Lattice + Ord,
    K: ExchangeData + Hashable,
    R: ExchangeData + Semigroup,
{
    fn skew_count(self) -> VecCollection<'scope, T, (K, R), isize> {
        self.skew_count_with(Skew::default())
    }

    fn skew_distinct(self) -> VecCollection<'scope, T, K, isize> {
        self.skew_distinct_with(Skew::default())
    }

    fn skew_count_with(self, skew: Skew) -> VecCollection<'scope, T, (K, R), isize> {
        combine_frequent(self, &skew).count()
    }

    fn skew_distinct_with(self, skew: Skew) -> VecCollection<'scope, T, K, isize> {
        combine_frequent(self, &skew).distinct()
    }

    fn skew_combine(self) -> VecCollection<'scope, T, K, R> {
        combine_every(self)
    }
}

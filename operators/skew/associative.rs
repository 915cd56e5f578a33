//! Any reduction whose logic is associative, with hot keys reduced in two
//! levels.

use differential_dataflow::lattice::Lattice;
use differential_dataflow::{ExchangeData, Hashable, VecCollection};
use timely::order::TotalOrder;
use timely::progress::Timestamp;

use super::settings::Skew;
use super::two_level::{reduce_in_two_levels, Associative};

/// Reducing a skewed collection by logic that may be applied to parts of a
/// key's records and then to the parts' results, with no key's work on one
/// worker.
pub trait SkewAssociative<'scope, T: Timestamp, K, V> {
    /// The same collection as differential's `reduce(logic)`, at every
    /// time, for `logic` that is associative: applied to the results of
    /// `logic` on the parts of any split of a key's records (their
    /// multisets added up), it gives what it gives on all of them. The
    /// least, the greatest, a sum, the top k values, a union of sets are;
    /// a mean or a median is not (reduce a sum and a count instead of a
    /// mean).
    ///
    /// Hot keys are found and dealt as [`skew_min`](super::SkewMinMax::skew_min)
    /// deals them: each record of a hot key is reduced first on one of the
    /// key's workers, by a hash of the whole record, and the key's owner
    /// reduces the parts' results with the same `logic`. Other keys are
    /// reduced where `reduce` reduces them. Times must be totally ordered.
    ///
    /// ```
    /// use differential_dataflow::input::Input;
    /// use equipoise::skew::SkewAssociative;
    ///
    /// timely::example(|scope| {
    ///     // Bids per item; item 0 takes half of them.
    ///     let bids = scope.new_collection_from((0..1000u64).map(|i| (if i % 2 == 0 { 0 } else { i % 10 }, i * 7 % 1000))).1;
    ///     // The three highest bids of each item, each with its multiplicity
    ///     // (no more than three in all).
    ///     let top3 = |_: &u64, input: &[(&u64, isize)], output: &mut Vec<(u64, isize)>| {
    ///         let mut left = 3;
    ///         for &(bid, count) in input.iter().rev() {
    ///             if left == 0 {
    ///                 break;
    ///             }
    ///             let taken = count.min(left);
    ///             output.push((*bid, taken));
    ///             left -= taken;
    ///         }
    ///     };
    ///     bids.clone().skew_reduce_associative(top3).assert_eq(bids.reduce(top3));
    /// });
    /// ```
    fn skew_reduce_associative<L>(self, logic: L) -> VecCollection<'scope, T, (K, V), isize>
    where
        L: Fn(&K, &[(&V, isize)], &mut Vec<(V, isize)>) + Clone + 'static;

    /// [`skew_reduce_associative`](Self::skew_reduce_associative) with hot
    /// keys found and dealt by `skew`.
    fn skew_reduce_associative_with<L>(self, skew: Skew, logic: L) -> VecCollection<'scope, T, (K, V), isize>
    where
        L: Fn(&K, &[(&V, isize)], &mut Vec<(V, isize)>) + Clone + 'static;
}

impl<'scope, T, K, V> SkewAssociative<'scope, T, K, V> for VecCollection<'scope, T, (K, V), isize>
where
    T: Timestamp + Lattice + TotalOrder + Ord,
    K: ExchangeData + Hashable + std::hash::Hash + std::fmt::Debug,
    V: ExchangeData + Hashable,
{
    fn skew_reduce_associative<L>(self, logic: L) -> VecCollection<'scope, T, (K, V), isize>
    where
        L: Fn(&K, &[(&V, isize)], &mut Vec<(V, isize)>) + Clone + 'static,
    {
        self.skew_reduce_associative_with(Skew::default(), logic)
    }

    fn skew_reduce_associative_with<L>(self, skew: Skew, logic: L) -> VecCollection<'scope, T, (K, V), isize>
    where
        L: Fn(&K, &[(&V, isize)], &mut Vec<(V, isize)>) + Clone + 'static,
    {
        reduce_in_two_levels(self, skew, Associative(logic))
    }
}

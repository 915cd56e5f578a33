//! The least and the greatest value per key: associative reductions, in
//! two levels.

use differential_dataflow::difference::Semigroup;
use differential_dataflow::lattice::Lattice;
use differential_dataflow::{ExchangeData, Hashable, VecCollection};
use timely::order::TotalOrder;
use timely::progress::Timestamp;

use super::settings::Skew;
use super::two_level::{reduce_in_two_levels, TwoLevel};

/// The least or the greatest value of each key.
#[derive(Debug, Clone, Copy)]
enum Extreme {
    Min,
    Max,
}

impl Extreme {
    /// The least or the greatest of `input` (sorted, not empty).
    fn of<V: Clone, R>(self, input: &[(&V, R)], output: &mut Vec<(V, isize)>) {
        let (value, _) = match self {
            Extreme::Min => &input[0],
            Extreme::Max => &input[input.len() - 1],
        };
        output.push(((*value).clone(), 1));
    }
}

impl<K, V: Clone, R> TwoLevel<K, V, R> for Extreme {
    fn first(&self, _: &K, input: &[(&V, R)], output: &mut Vec<(V, isize)>) {
        self.of(input, output)
    }

    fn second(&self, _: &K, input: &[(&V, isize)], output: &mut Vec<(V, isize)>) {
        self.of(input, output)
    }
}

/// Each key's least or greatest value, with no key's work on one worker.
pub trait SkewMinMax<'scope, T: Timestamp, K, V, R> {
    /// The same collection as differential's
    /// `reduce(|_, values, out| out.push((values[0].0.clone(), 1)))`: each
    /// key with its least value (of those whose multiplicity is not zero),
    /// at every time.
    ///
    /// A key that carries a tenth of a worker's mean share of the updates
    /// or more, on a worker that carries more than the mean load by over
    /// [`Skew::with_tolerance`] (5 % by default), is reduced in two levels: it is dealt
    /// over the least loaded workers as [`skew_join`](super::SkewJoin::skew_join)
    /// deals a key (its first deal holds: a later one would separate
    /// records from their retractions), each record goes to one of them by
    /// a hash of the whole record, each worker finds the least of its part,
    /// and the key's owner the least of the parts'. Other keys are reduced
    /// where `reduce` reduces them. A key's records from before it turned
    /// hot are moved to their parts when it does. Times must be totally
    /// ordered.
    ///
    /// ```
    /// use differential_dataflow::input::Input;
    /// use equipoise::skew::SkewMinMax;
    ///
    /// timely::example(|scope| {
    ///     // Readings per sensor; sensor 0 sends half of them.
    ///     let readings = scope.new_collection_from((0..1000u64).map(|i| (if i % 2 == 0 { 0 } else { i % 10 }, i * 7 % 1000))).1;
    ///     let least = readings.clone().reduce(|_, values, out| out.push((*values[0].0, 1)));
    ///     let greatest = readings.clone().reduce(|_, values, out| out.push((*values[values.len() - 1].0, 1)));
    ///     readings.clone().skew_min().assert_eq(least);
    ///     readings.skew_max().assert_eq(greatest);
    /// });
    /// ```
    fn skew_min(self) -> VecCollection<'scope, T, (K, V), isize>;

    /// As [`skew_min`](Self::skew_min), each key's greatest value.
    fn skew_max(self) -> VecCollection<'scope, T, (K, V), isize>;

    /// [`skew_min`](Self::skew_min) with hot keys found and dealt by `skew`.
    fn skew_min_with(self, skew: Skew) -> VecCollection<'scope, T, (K, V), isize>;

    /// [`skew_max`](Self::skew_max) with hot keys found by `skew`.
    fn skew_max_with(self, skew: Skew) -> VecCollection<'scope, T, (K, V), isize>;
}

impl<'scope, T, K, V, R> SkewMinMax<'scope, T, K, V, R> for VecCollection<'scope, T, (K, V), R>
where
    T: Timestamp + Lattice + TotalOrder + Ord,
    K: ExchangeData + Hashable + std::hash::Hash + std::fmt::Debug,
    V: ExchangeData + Hashable,
    R: ExchangeData + Semigroup,
{
    fn skew_min(self) -> VecCollection<'scope, T, (K, V), isize> {
        reduce_in_two_levels(self, Skew::default(), Extreme::Min)
    }

    fn skew_max(self) -> VecCollection<'scope, T, (K, V), isize> {
        reduce_in_two_levels(self, Skew::default(), Extreme::Max)
    }

    fn skew_min_with(self, skew: Skew) -> VecCollection<'scope, T, (K, V), isize> {
        reduce_in_two_levels(self, skew, Extreme::Min)
    }

    fn skew_max_with(self, skew: Skew) -> VecCollection<'scope, T, (K, V), isize> {
        reduce_in_two_levels(self, skew, Extreme::Max)
    }
}

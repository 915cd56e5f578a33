//! Partial key grouping for differential dataflow collections.

use differential_dataflow::difference::{IsZero, Semigroup};
use differential_dataflow::lattice::Lattice;
use differential_dataflow::operators::arrange::arrangement::arrange_core;
use differential_dataflow::trace::implementations::{KeyBatcher, KeySpine, ValBuilder, ValSpine};
use differential_dataflow::{ExchangeData, Hashable, VecCollection};
use timely::progress::Timestamp;

use crate::common::hash::key_hash;

use super::pact::PartialKeyGrouping;

/// Counting a collection with its keys split over two workers.
pub trait PkgCountCollection<'scope, T: Timestamp, K, R> {
    /// The same collection as differential's `count()`: each key with its
    /// accumulated multiplicity, retractions included, at every time.
    ///
    /// Updates are arranged through a [`PartialKeyGrouping`] pact, counted per
    /// worker (a key's partial count lives on at most two workers), and the
    /// partial counts are summed by a keyed reduce.
    ///
    /// ```
    /// use differential_dataflow::input::Input;
    /// use equipoise::pkg::PkgCountCollection;
    ///
    /// timely::example(|scope| {
    ///     let (_input, words) = scope.new_collection_from(vec!["a", "b", "a"].into_iter().map(String::from));
    ///     words.clone().pkg_count().assert_eq(words.count());
    /// });
    /// ```
    fn pkg_count(self) -> VecCollection<'scope, T, (K, R), isize>;
}

impl<'scope, T, K, R> PkgCountCollection<'scope, T, K, R> for VecCollection<'scope, T, K, R>
where
    T: Timestamp + Lattice + Ord,
    K: ExchangeData + Hashable + std::hash::Hash,
    R: ExchangeData + Semigroup + IsZero,
{
    fn pkg_count(self) -> VecCollection<'scope, T, (K, R), isize> {
        let worker = self.scope().index();
        let pact = PartialKeyGrouping::new(|((key, ()), _time, _diff): &((K, ()), T, R)| key_hash(key));
        let arranged = arrange_core::<_, _, KeyBatcher<K, T, R>, KeySpine<K, T, R>>(
            self.map(|key| (key, ())).inner,
            pact,
            "PkgArrange",
            KeyBatcher::new,
        );
        // Local reduce: no exchange, so each worker counts only its share of
        // each key. A partial can be negative when a key's insertion and its
        // retraction went to different workers; the merge sums them.
        let partials = arranged
            .reduce_abelian::<_, ValBuilder<K, R, T, isize>, ValSpine<K, R, T, isize>, _, _>(
                "PkgPartialCount",
                |_key, input, output| output.push((input[0].1.clone(), 1)),
                |buffer, key, updates| {
                    buffer.clear();
                    buffer.extend(
                        updates
                            .drain(..)
                            .map(|(value, time, diff)| ((key.clone(), value), time, diff)),
                    );
                },
            )
            // Tag each partial with its worker: two workers may hold equal partials.
            .as_collection(move |key, partial| (key.clone(), (worker, partial.clone())));
        partials.reduce(|_key, input: &[(&(usize, R), isize)], output: &mut Vec<(R, isize)>| {
            let mut partials = input.iter().map(|((_, partial), diff)| {
                debug_assert_eq!(*diff, 1, "one partial per worker and key");
                partial.clone()
            });
            let mut total = partials.next().expect("reduce input is never empty");
            for partial in partials {
                total.plus_equals(&partial);
            }
            if !total.is_zero() {
                output.push((total, 1));
            }
        })
    }
}

//! Partial key grouping for differential dataflow collections.

use differential_dataflow::consolidation::ConsolidatingContainerBuilder;
use differential_dataflow::difference::Semigroup;
use differential_dataflow::lattice::Lattice;
use differential_dataflow::{AsCollection, ExchangeData, Hashable, VecCollection};
use timely::dataflow::operators::generic::Operator;
use timely::progress::Timestamp;

use super::grouping::Grouping;
use super::pact::Grouped;

/// Counting a collection with each key's updates spread over several
/// workers (two under PKG) before they are counted, for comparing
/// groupings (the skew-proof count is
/// [`skew_count`](crate::skew::SkewReduce::skew_count)).
pub trait PkgCountCollection<'scope, T: Timestamp, K, R> {
    /// The same collection as differential's `count()` (each key with its
    /// accumulated multiplicity, retractions included, at every time), with
    /// updates first routed by `grouping` (e.g. [`Pkg`](super::Pkg),
    /// [`HeadAware::d_choices()`](super::HeadAware::d_choices), a
    /// [`Scheme`](super::Scheme)) on the fingerprint `key` gives each key
    /// (a well-mixed 64-bit hash, as the pacts take it), consolidated on the
    /// worker they reach, and then counted by `count()`: an exchange more
    /// than `count()`, for comparing groupings.
    ///
    /// ```
    /// use differential_dataflow::input::Input;
    /// use equipoise::pkg::{key_hash, HeadAware, PkgCountCollection};
    ///
    /// timely::example(|scope| {
    ///     let (_input, words) = scope.new_collection_from(vec!["a", "b", "a"].into_iter().map(String::from));
    ///     let counts = words.clone().pkg_count_with(HeadAware::d_choices(), |word: &String| key_hash(word));
    ///     counts.assert_eq(words.count());
    /// });
    /// ```
    fn pkg_count_with<G, F>(self, grouping: G, key: F) -> VecCollection<'scope, T, (K, R), isize>
    where
        G: Grouping + 'static,
        F: Fn(&K) -> u64 + 'static;
}

impl<'scope, T, K, R> PkgCountCollection<'scope, T, K, R> for VecCollection<'scope, T, K, R>
where
    T: Timestamp + Lattice + Ord,
    K: ExchangeData + Hashable + std::hash::Hash,
    R: ExchangeData + Semigroup,
{
    fn pkg_count_with<G, F>(self, grouping: G, key: F) -> VecCollection<'scope, T, (K, R), isize>
    where
        G: Grouping + 'static,
        F: Fn(&K) -> u64 + 'static,
    {
        let pact = Grouped::with_grouping(grouping, move |(data, _time, _diff): &(K, T, R)| key(data));
        self.inner
            .unary::<ConsolidatingContainerBuilder<_>, _, _, _>(pact, "PkgConsolidate", |_, _| {
                |input, output| {
                    input.for_each(|time, data| {
                        output.session_with_builder(&time).give_iterator(data.drain(..));
                    });
                }
            })
            .as_collection()
            .count()
    }
}

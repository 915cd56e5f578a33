//! Reductions in two levels, the core of the skew-proof associative
//! reductions (the least and greatest among them): each worker reduces its
//! part of a hot key's records, and the key's owner reduces the parts'
//! results. A record of a hot key is reduced
//! first on a worker fixed by the record itself and the key's first deal,
//! so that a retraction meets its insertion. The owners hold each time's
//! records until its deals are learned, so a key is split from the time
//! that found it hot; its records from before move to their parts then.

use std::collections::HashSet;
use std::rc::Rc;

use differential_dataflow::difference::Semigroup;
use differential_dataflow::lattice::Lattice;
use differential_dataflow::trace::implementations::{ValBuilder, ValSpine};
use differential_dataflow::{ExchangeData, Hashable, VecCollection};
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::{Exchange, Pipeline};
use timely::dataflow::operators::generic::builder_rc::OperatorBuilder;
use timely::dataflow::operators::generic::OutputBuilder;
use timely::dataflow::operators::Concat;
use timely::dataflow::StreamVec;
use timely::order::TotalOrder;
use timely::progress::operate::FrontierInterest;
use timely::progress::Timestamp;

use super::arrange::{arrange_routed, mark_hot, Arranged};
use super::hot_keys::hot_keys;
use super::mover::hold_for_first_deal;
use super::route::{Routes, SharedRoutes};
use super::settings::Skew;

/// A reduction that gives the same result over the results of any split
/// of a key's values as over the values themselves (the least, the
/// greatest, a sum, the top k): what can be reduced in two levels. `first`
/// reduces the records of a part (or of a key reduced whole), `second` the
/// parts' results.
pub(crate) trait TwoLevel<K, V, R>: Clone + 'static {
    /// A key's records (not empty, sorted and consolidated as a reduction
    /// sees them) reduced to `output`.
    fn first(&self, key: &K, input: &[(&V, R)], output: &mut Vec<(V, isize)>);
    /// A key's parts' results (sorted and consolidated) reduced to `output`.
    fn second(&self, key: &K, input: &[(&V, isize)], output: &mut Vec<(V, isize)>);
}

/// A reduction the user states is associative in the sense of
/// [`TwoLevel`], over records counted in `isize`: one logic for both levels.
#[derive(Clone)]
pub(crate) struct Associative<L>(pub(crate) L);

impl<K, V, L> TwoLevel<K, V, isize> for Associative<L>
where
    L: Fn(&K, &[(&V, isize)], &mut Vec<(V, isize)>) + Clone + 'static,
{
    fn first(&self, key: &K, input: &[(&V, isize)], output: &mut Vec<(V, isize)>) {
        (self.0)(key, input, output)
    }

    fn second(&self, key: &K, input: &[(&V, isize)], output: &mut Vec<(V, isize)>) {
        (self.0)(key, input, output)
    }
}

/// The records of cold keys and those of hot keys, as `routes` tells them
/// apart (and counts them): one pass, each record moved once.
#[allow(clippy::type_complexity)]
fn split<'scope, T, K, V, R>(
    records: VecCollection<'scope, T, (K, V), R>,
    routes: &SharedRoutes<K, T>,
) -> (
    StreamVec<'scope, T, ((K, V), T, R)>,
    StreamVec<'scope, T, ((K, V), T, R)>,
)
where
    T: Timestamp + TotalOrder,
    K: ExchangeData + Hashable,
    V: ExchangeData + Hashable,
    R: ExchangeData,
{
    let routes = Rc::clone(routes);
    let mut builder = OperatorBuilder::new("SkewSplit".to_owned(), records.inner.scope());
    let mut input = builder.new_input(records.inner, Pipeline);
    builder.set_notify_for(0, FrontierInterest::Never);
    let (cold, cold_stream) = builder.new_output();
    let (hot, hot_stream) = builder.new_output();
    let mut cold = OutputBuilder::<T, CapacityContainerBuilder<Vec<((K, V), T, R)>>>::from(cold);
    let mut hot = OutputBuilder::<T, CapacityContainerBuilder<Vec<((K, V), T, R)>>>::from(hot);
    builder.build(move |_| {
        move |_| {
            let (mut cold, mut hot) = (cold.activate(), hot.activate());
            input.for_each_stamp(|cap, batches| {
                let (mut cold, mut hot) = (cold.session(&cap), hot.session(&cap));
                let mut routes = routes.borrow_mut();
                for ((key, val), time, diff) in batches.flat_map(|batch| batch.drain(..)) {
                    match routes.split(&key, &time, || val.hashed().into()) {
                        Some(_) => hot.give(((key, val), time, diff)),
                        None => cold.give(((key, val), time, diff)),
                    }
                }
            });
        }
    });
    (cold_stream, hot_stream)
}

/// Reduces the arranged `records` of each key by `logic`'s first level.
fn reduce_to<'scope, T, K, V, R, L>(
    records: Arranged<'scope, K, V, T, R>,
    name: &str,
    logic: L,
) -> Arranged<'scope, K, V, T, isize>
where
    T: Timestamp + Lattice + Ord,
    K: ExchangeData,
    V: ExchangeData,
    R: ExchangeData + Semigroup,
    L: TwoLevel<K, V, R>,
{
    records.reduce_abelian::<_, ValBuilder<K, V, T, isize>, ValSpine<K, V, T, isize>, _, _>(
        name,
        move |key, input, output| logic.first(key, input, output),
        |vec, key, updates| {
            vec.clear();
            vec.extend(updates.drain(..).map(|(v, t, r)| ((key.clone(), v), t, r)));
        },
    )
}

/// The same collection as differential's `reduce` by `logic`, with hot
/// keys (as `skew` finds them) reduced in two levels.
pub(crate) fn reduce_in_two_levels<'scope, T, K, V, R, L>(
    records: VecCollection<'scope, T, (K, V), R>,
    skew: Skew,
    logic: L,
) -> VecCollection<'scope, T, (K, V), isize>
where
    T: Timestamp + Lattice + TotalOrder + Ord,
    K: ExchangeData + Hashable + std::hash::Hash + std::fmt::Debug,
    V: ExchangeData + Hashable,
    R: ExchangeData + Semigroup,
    L: TwoLevel<K, V, R>,
{
    let scope = records.inner.scope();
    if scope.peers() == 1 {
        // Nothing to split over.
        return records.reduce(move |key, input, output| logic.first(key, input, output));
    }
    // Cold keys' records to their owners, hot keys' to their parts (as far
    // as this worker has learned the hot keys); the owners hold each time's
    // records until its deals are learned, and pass on those of keys hot
    // by then.
    let routes = Routes::shared(&scope);
    let (cold, split_hot) = split(records, &routes);
    let held = hold_for_first_deal(cold, &routes, "SkewCold");
    let cold = arrange_routed(held.here, Pipeline, "SkewColdArranged");
    let hot = hot_keys(held.routed, &[Rc::clone(&routes)], skew);
    // Every worker marks every hot key from the time it turned hot; a
    // key's first deal seen is its earliest. The key's deal is learned
    // before the mark: the records the mark moves go to their parts by it.
    let learn = Rc::clone(&routes);
    let mut marked = HashSet::new();
    let marks = mark_hot(hot, "SkewMark", move |time, _, key, shares, out| {
        if marked.insert(key.clone()) {
            learn.borrow_mut().deals.learn(time.clone(), (key.clone(), shares));
            out.push((key, ()));
        }
    });
    // A hot key's records from before it turned hot (and any routed cold
    // since, by a worker that learned late) join its other records on their parts.
    let by_deal = Rc::clone(&routes);
    let moved = marks
        .clone()
        .join_core(cold.clone(), |key, _, val| Some((key.clone(), val.clone())));
    let parts = arrange_routed(
        moved.inner.concat(split_hot).concat(held.on),
        Exchange::new(move |((key, val), _, _): &((K, V), T, R)| {
            by_deal.borrow().deals.first_part(key, val.hashed().into()) as u64
        }),
        "SkewParts",
    );
    let second = logic.clone();
    let hot_out = reduce_to(parts, "SkewPartial", logic.clone())
        .as_collection(|key, val| (key.clone(), val.clone()))
        .reduce(move |key, input, output| second.second(key, input, output));
    // Cold keys' results where they are reduced, less those of the keys
    // since turned hot.
    let cold_out = reduce_to(cold, "SkewCold", logic);
    let turned = marks.join_core(cold_out.clone(), |key, _, val| Some((key.clone(), val.clone())));
    cold_out
        .as_collection(|key, val| (key.clone(), val.clone()))
        .concat(turned.negate())
        .concat(hot_out)
}

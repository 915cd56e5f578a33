//! The least or greatest value per key, with hot keys reduced in two
//! levels: each worker reduces its part of a hot key's records, and the
//! key's owner reduces the parts' results. A record of a hot key is
//! reduced first on a worker fixed by the record itself and the key's
//! first deal, so that a retraction meets its insertion; a key's records
//! from before it turned hot move there when it does.

use std::collections::HashSet;
use std::rc::Rc;

use differential_dataflow::difference::{Present, Semigroup};
use differential_dataflow::lattice::Lattice;
use differential_dataflow::operators::arrange::arrangement::arrange_core;
use differential_dataflow::operators::arrange::TraceAgent;
use differential_dataflow::trace::implementations::{ValBatcher, ValBuilder, ValSpine};
use differential_dataflow::{AsCollection, ExchangeData, Hashable, VecCollection};
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::{Exchange, Pipeline};
use timely::dataflow::operators::generic::builder_rc::OperatorBuilder;
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::generic::OutputBuilder;
use timely::dataflow::operators::Concat;
use timely::dataflow::StreamVec;
use timely::order::TotalOrder;
use timely::progress::operate::FrontierInterest;
use timely::progress::Timestamp;

use super::hot_keys::Skew;
use super::skew_route::{hot_keys, Routes, SharedRoutes};

/// The least or the greatest value of each key.
#[derive(Debug, Clone, Copy)]
enum Extreme {
    Min,
    Max,
}

impl Extreme {
    /// Of a key's values, sorted as a reduction sees them.
    fn of<V: Clone, R>(self, values: &[(&V, R)]) -> V {
        match self {
            Extreme::Min => values[0].0.clone(),
            Extreme::Max => values[values.len() - 1].0.clone(),
        }
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
    /// use equipoise::pkg::SkewMinMax;
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
    K: ExchangeData + Hashable + std::hash::Hash,
    V: ExchangeData + Hashable,
    R: ExchangeData + Semigroup,
{
    fn skew_min(self) -> VecCollection<'scope, T, (K, V), isize> {
        extreme(self, Skew::default(), Extreme::Min)
    }

    fn skew_max(self) -> VecCollection<'scope, T, (K, V), isize> {
        extreme(self, Skew::default(), Extreme::Max)
    }

    fn skew_min_with(self, skew: Skew) -> VecCollection<'scope, T, (K, V), isize> {
        extreme(self, skew, Extreme::Min)
    }

    fn skew_max_with(self, skew: Skew) -> VecCollection<'scope, T, (K, V), isize> {
        extreme(self, skew, Extreme::Max)
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

/// Records arranged by key, with their multiplicities.
type Arranged<'scope, K, V, T, R> =
    differential_dataflow::operators::arrange::Arranged<'scope, TraceAgent<ValSpine<K, V, T, R>>>;

/// Reduces the arranged `records` to each key's `extreme`.
fn reduce_to<'scope, T, K, V, R>(
    records: Arranged<'scope, K, V, T, R>,
    name: &str,
    extreme: Extreme,
) -> Arranged<'scope, K, V, T, isize>
where
    T: Timestamp + Lattice + Ord,
    K: ExchangeData,
    V: ExchangeData,
    R: ExchangeData + Semigroup,
{
    records.reduce_abelian::<_, ValBuilder<K, V, T, isize>, ValSpine<K, V, T, isize>, _, _>(
        name,
        move |_, values, out| out.push((extreme.of(values), 1)),
        |vec, key, updates| {
            vec.clear();
            vec.extend(updates.drain(..).map(|(v, t, r)| ((key.clone(), v), t, r)));
        },
    )
}

fn extreme<'scope, T, K, V, R>(
    records: VecCollection<'scope, T, (K, V), R>,
    skew: Skew,
    extreme: Extreme,
) -> VecCollection<'scope, T, (K, V), isize>
where
    T: Timestamp + Lattice + TotalOrder + Ord,
    K: ExchangeData + Hashable + std::hash::Hash,
    V: ExchangeData + Hashable,
    R: ExchangeData + Semigroup,
{
    let scope = records.inner.scope();
    if scope.peers() == 1 {
        // Nothing to split over.
        return records.reduce(move |_, values, out| out.push((extreme.of(values), 1)));
    }
    // Cold keys' records to their owners, hot keys' to their parts (as far
    // as this worker has learned the hot keys).
    let routes = Routes::shared(&scope);
    let (cold, split_hot) = split(records, &routes);
    let cold = cold.as_collection().arrange_by_key();
    let hot = hot_keys(cold.stream.clone(), &[Rc::clone(&routes)], skew);
    // Every worker marks every hot key from the time it turned hot (never
    // retracted: a hot key stays hot). Worker 0 decides in time order and
    // the broadcast keeps it, so a key's first deal seen is its earliest.
    // The key's deal is learned before the mark: the records the mark moves
    // go to their parts by it.
    let learn = Rc::clone(&routes);
    let marks =
        hot.unary::<CapacityContainerBuilder<Vec<((K, ()), T, Present)>>, _, _, _>(Pipeline, "SkewMark", |_, _| {
            let mut marked = HashSet::new();
            move |input, output| {
                input.for_each_stamp(|cap, batches| {
                    let Some(time) = cap.least().cloned() else { return };
                    let mut session = output.session(&cap);
                    for (_, (key, shares)) in batches.flat_map(|batch| batch.drain(..)) {
                        if marked.insert(key.clone()) {
                            learn.borrow_mut().learn(time.clone(), (key.clone(), shares));
                            session.give(((key, ()), time.clone(), Present));
                        }
                    }
                });
            }
        });
    let marks = arrange_core::<_, _, ValBatcher<K, (), T, Present>, ValSpine<K, (), T, Present>>(
        marks,
        Pipeline,
        "SkewMarks",
        ValBatcher::new,
    );
    // A hot key's records from before it turned hot (and any routed cold
    // since, by a worker that learned late) join its other records on their parts.
    let by_deal = Rc::clone(&routes);
    let moved = marks
        .clone()
        .join_core(cold.clone(), |key, _, val| Some((key.clone(), val.clone())));
    let parts = arrange_core::<_, _, ValBatcher<K, V, T, R>, ValSpine<K, V, T, R>>(
        moved.inner.concat(split_hot),
        Exchange::new(move |((key, val), _, _): &((K, V), T, R)| {
            by_deal.borrow().first_part(key, val.hashed().into()) as u64
        }),
        "SkewParts",
        ValBatcher::new,
    );
    let hot_out = reduce_to(parts, "SkewPartial", extreme)
        .as_collection(|key, val| (key.clone(), val.clone()))
        .reduce(move |_, values, out| out.push((extreme.of(values), 1)));
    // Cold keys' results where they are reduced, less those of the keys
    // since turned hot.
    let cold_out = reduce_to(cold, "SkewCold", extreme);
    let turned = marks.join_core(cold_out.clone(), |key, _, val| Some((key.clone(), val.clone())));
    cold_out
        .as_collection(|key, val| (key.clone(), val.clone()))
        .concat(turned.negate())
        .concat(hot_out)
}

//! The plumbing every skew-proof operator shares: arranging updates by key
//! after routing them its own way, and marking each hot key from the time
//! it turned hot.

use differential_dataflow::difference::{Present, Semigroup};
use differential_dataflow::lattice::Lattice;
use differential_dataflow::operators::arrange::arrangement::arrange_core;
use differential_dataflow::operators::arrange::TraceAgent;
use differential_dataflow::trace::implementations::{ValBatcher, ValSpine};
use differential_dataflow::ExchangeData;
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::{ParallelizationContract, Pipeline};
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::StreamVec;
use timely::order::TotalOrder;
use timely::progress::Timestamp;

use super::decision::Shares;
use super::hot_keys::SideHotKey;

/// `(K, V)` updates arranged by key, as the skew-proof operators keep them.
pub(crate) type Arranged<'scope, K, V, T, R> =
    differential_dataflow::operators::arrange::Arranged<'scope, TraceAgent<ValSpine<K, V, T, R>>>;

/// `updates` arranged by key where `pact` sends them (differential's
/// `arrange_by_key` with a pact of the operator's own).
pub(crate) fn arrange_routed<'scope, K, V, T, R, P>(
    updates: StreamVec<'scope, T, ((K, V), T, R)>,
    pact: P,
    name: &str,
) -> Arranged<'scope, K, V, T, R>
where
    T: Timestamp + Lattice,
    K: ExchangeData,
    V: ExchangeData,
    R: ExchangeData + Semigroup,
    P: ParallelizationContract<T, Vec<((K, V), T, R)>>,
{
    arrange_core::<_, _, ValBatcher<K, V, T, R>, ValSpine<K, V, T, R>>(updates, pact, name, ValBatcher::new)
}

/// Marks of the hot keys `hot` decides, arranged on this worker: at each
/// deal's time, `mark` adds the marks of a key's deal (on the side it is
/// split on) to `out`, never retracted, as a hot key stays hot. `mark`
/// sees every deal in time order (worker 0 decides in time order and the
/// broadcast keeps it): a mark stamped later than a deal it serves would
/// miss updates.
pub(crate) fn mark_hot<'scope, T, K, V>(
    hot: StreamVec<'scope, T, SideHotKey<K>>,
    name: &str,
    mut mark: impl FnMut(&T, usize, K, Shares, &mut Vec<(K, V)>) + 'static,
) -> Arranged<'scope, K, V, T, Present>
where
    T: Timestamp + Lattice + TotalOrder,
    K: ExchangeData,
    V: ExchangeData,
{
    let marks =
        hot.unary::<CapacityContainerBuilder<Vec<((K, V), T, Present)>>, _, _, _>(Pipeline, name, move |_, _| {
            let mut last: Option<T> = None;
            let mut out = Vec::new();
            move |input, output| {
                input.for_each_stamp(|cap, batches| {
                    let Some(time) = cap.least().cloned() else { return };
                    debug_assert!(last.as_ref().is_none_or(|last| last.less_equal(&time)));
                    last = Some(time.clone());
                    for (side, (key, shares)) in batches.flat_map(|batch| batch.drain(..)) {
                        mark(&time, side, key, shares, &mut out);
                    }
                    output
                        .session(&cap)
                        .give_iterator(out.drain(..).map(|marked| (marked, time.clone(), Present)));
                });
            }
        });
    arrange_routed(marks, Pipeline, &format!("{name}Arranged"))
}

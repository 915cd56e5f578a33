//! The dispatcher: holds each epoch's records until the plan for it is final,
//! then tags them with their partitions under that plan (a point with its
//! one partition, a query or removal with every partition it overlaps, by
//! Algorithm 1) and the worker that holds the partition under that plan
//! (its owner; for a shared partition, one holder for a point and every
//! holder for a query), which an exchange by that worker then delivers.
//! (A pact may not change the number of records, as timely's progress
//! tracking counts them at both ends, so the copies of a query are made
//! here.)
//!
//! Registrations and removals reach the dispatcher of their query's home worker
//! (chosen by the query id), which remembers each active query's rectangle:
//! a removal names only the id, and is routed like the query it removes.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use serde::{Deserialize, Serialize};
use timely::communication::Pull;
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::{Exchange, Pipeline};
use timely::dataflow::channels::Message;
use timely::dataflow::operators::generic::builder_rc::OperatorBuilder;
use timely::dataflow::operators::generic::{InputHandleCore, OutputBuilder};
use timely::dataflow::operators::vec::Partition;
use timely::dataflow::StreamVec;
use timely::progress::Antichain;
use timely::ExchangeData;

use crate::common::hash::splitmix64;
use crate::common::stash::TimeStash;

use super::app::{Point, Query};
use super::geometry::{OutOfBounds, Rect};
use super::ids::PartitionId;
use super::index::{GlobalIndex, PlanChange};
use super::plan_history::{PlanHistory, PlanUpdate};
use super::record::{Item, Kind, Record};

/// A record on its way to one partition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) enum Dispatched<P, Q> {
    Point(Point<P>),
    Query(Query<Q>),
    /// A removal, with the rectangle its query was registered with.
    Removal {
        id: u64,
        rect: Rect,
    },
}

/// A routed record of application `S`, with the worker holding its partition and the partition.
pub(crate) type DispatchedTo<S> = (
    usize,
    PartitionId,
    Dispatched<<S as super::app::PartitionState>::Point, <S as super::app::PartitionState>::Query>,
);

impl<P, Q> Dispatched<P, Q> {
    /// Its kind, to order an epoch's records by.
    pub(crate) fn kind(&self) -> Kind {
        match self {
            Dispatched::Query(_) => Kind::Query,
            Dispatched::Removal { .. } => Kind::Removal,
            Dispatched::Point(_) => Kind::Point,
        }
    }
}

/// What the routers refused, counted on each worker.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Refused {
    /// Registrations of an id that was already active (the active one stays;
    /// of two registrations of one id in one epoch, the one the home dispatcher
    /// saw first).
    pub duplicate_queries: u64,
    /// Removals of an id that was not active.
    pub unknown_removals: u64,
}

/// One worker's routing: the plans by epoch and the rectangles of the
/// queries registered here, epoch by epoch (the operator around it in
/// [`dispatch`] decides only when).
struct Router {
    history: PlanHistory,
    active: HashMap<u64, Rect>,
    /// Each sender deals a shared partition's points among its holders in
    /// proportion to their weights, by smooth weighted round robin (each
    /// point to exactly one holder; over any run of points each holder's
    /// count is within two of its weight's share): the holders' credits.
    dealt: HashMap<PartitionId, Credits>,
    me: usize,
}

impl Router {
    /// Worker `me`'s router, from the plan `initial`.
    fn new(initial: GlobalIndex, me: usize) -> Self {
        Router {
            history: PlanHistory::new(initial),
            active: HashMap::new(),
            dealt: HashMap::new(),
            me,
        }
    }

    /// Installs a plan update the coordinator sent.
    fn install(&mut self, update: &PlanUpdate) {
        self.history
            .install(update)
            .expect("the coordinator sends only updates that apply");
        // What is no longer shared needs no turn kept.
        let latest = self.history.latest();
        self.dealt.retain(|id, _| !latest.replicas(*id).is_empty());
    }

    /// Routes the records of epoch `time` (registrations first) under its
    /// plan, handing each copy to `give` with its partition and holder;
    /// counts what it refuses in `refused`.
    fn route_epoch<P: Clone, Q: Clone>(
        &mut self,
        time: u64,
        mut held: Vec<Item<P, Q>>,
        refused: &mut Refused,
        mut give: impl FnMut((usize, PartitionId, Dispatched<P, Q>)),
    ) {
        let plan = self.history.at(time);
        let grid = plan.grid();
        held.sort_by_key(Item::kind);
        for item in held {
            let (rect, routed) = match item {
                Item::Point(point) => {
                    let cell = grid
                        .cell_of(point.x, point.y, OutOfBounds::Clamp)
                        .expect("points are finite by construction");
                    let (partition, mut holder, shared) = plan.at_shared(cell);
                    if shared {
                        let credits = self.dealt.entry(partition).or_default();
                        let pick = credits.deal(plan.weights(partition), self.me);
                        if pick > 0 {
                            holder = plan.replicas(partition)[pick - 1];
                        }
                    }
                    give((holder, partition, Dispatched::Point(point)));
                    continue;
                }
                Item::Query(query) => {
                    if self.active.contains_key(&query.id) {
                        refused.duplicate_queries += 1;
                        continue;
                    }
                    self.active.insert(query.id, query.rect);
                    (query.rect, Dispatched::Query(query))
                }
                Item::Removal(id) => match self.active.remove(&id) {
                    Some(rect) => (rect, Dispatched::Removal { id, rect }),
                    None => {
                        refused.unknown_removals += 1;
                        continue;
                    }
                },
            };
            let cells = super::query_store::query_cells_of(grid, &rect);
            // Every holder of a shared partition keeps its queries.
            for partition in plan.partitions_overlapping(&cells) {
                for holder in plan.holders(partition) {
                    give((holder, partition, routed.clone()));
                }
            }
        }
    }
}

/// A sender's credits for dealing one shared partition's points, for the
/// weights they were earned under.
#[derive(Debug, Default)]
struct Credits {
    weights: Vec<u32>,
    credits: Vec<i64>,
}

impl Credits {
    /// The holder (by position) of the next point of a partition whose
    /// holders weigh `weights`, by smooth weighted round robin (every holder
    /// gains its weight, the one with the most credit takes the point and
    /// pays the total). Credits start over when the weights change, staggered
    /// by the sender `me`, so that senders of a few points each do not all
    /// start with the same holder.
    fn deal(&mut self, weights: &[u32], me: usize) -> usize {
        let total: i64 = weights.iter().map(|&w| i64::from(w)).sum();
        if self.weights != weights {
            let holders = weights.len();
            self.weights = weights.to_vec();
            self.credits = (0..holders)
                .map(|i| ((me + i) % holders) as i64 * total / holders as i64)
                .collect();
        }
        for (credit, &weight) in self.credits.iter_mut().zip(weights) {
            *credit += i64::from(weight);
        }
        let credits = &mut self.credits;
        let pick = (0..credits.len())
            .max_by_key(|&i| (credits[i], std::cmp::Reverse(i)))
            .expect("a shared partition has holders");
        credits[pick] -= total;
        pick
    }
}

/// Builds the routers over `records`, with the plan starting from `initial`,
/// changed first by the `opening` and then by `plan`; refusals are counted
/// in `refused`.
pub(crate) fn dispatch<'scope, P: ExchangeData + Clone, Q: ExchangeData + Clone>(
    records: StreamVec<'scope, u64, Record<P, Q>>,
    (opening, plan): (
        StreamVec<'scope, u64, Vec<PlanChange>>,
        StreamVec<'scope, u64, PlanUpdate>,
    ),
    initial: GlobalIndex,
    refused: Rc<RefCell<Refused>>,
) -> StreamVec<'scope, u64, (usize, PartitionId, Dispatched<P, Q>)> {
    let mut router = Router::new(initial, records.scope().index());
    let (points, queries) = points_and_queries(records);
    let mut builder = OperatorBuilder::new("SwarmRouter".to_owned(), points.scope());
    let mut points_in = builder.new_input(points, Pipeline);
    let mut queries_in = builder.new_input(
        queries,
        Exchange::new(|item: &Item<P, Q>| match item {
            Item::Query(query) => splitmix64(query.id),
            Item::Removal(id) => splitmix64(*id),
            Item::Point(point) => splitmix64(point.id),
        }),
    );
    // Plan updates never cause output at their own time: no connection, so
    // the dispatcher's output frontier follows its records alone.
    let mut plan_in = builder.new_input(plan, Pipeline);
    let mut opening_in = builder.new_input(opening, Pipeline);
    let (routed_out, routed) = builder.new_output_connection::<Vec<(usize, PartitionId, Dispatched<P, Q>)>, _>([
        (0, Antichain::from_elem(0)),
        (1, Antichain::from_elem(0)),
    ]);
    let mut routed_out =
        OutputBuilder::<_, CapacityContainerBuilder<Vec<(usize, PartitionId, Dispatched<P, Q>)>>>::from(routed_out);
    builder.build(move |_caps| {
        let mut stash: TimeStash<u64, Vec<Item<P, Q>>> = TimeStash::default();
        move |frontiers| {
            let (points_frontier, queries_frontier) = (&frontiers[0], &frontiers[1]);
            let (plan_frontier, opening_frontier) = (&frontiers[2], &frontiers[3]);
            opening_in.for_each_stamp(|_, batches| {
                for changes in batches.flat_map(|batch| batch.drain(..)) {
                    router
                        .history
                        .open(&changes)
                        .expect("the opening comes before any update");
                }
            });
            hold(&mut points_in, &mut stash);
            hold(&mut queries_in, &mut stash);
            plan_in.for_each_stamp(|_, batches| {
                for update in batches.flat_map(|batch| batch.drain(..)) {
                    router.install(&update);
                }
            });
            let mut output = routed_out.activate();
            // An epoch is routed once its plan is final and all its
            // registrations and removals are here.
            let complete = |time: &u64| {
                [plan_frontier, queries_frontier, opening_frontier]
                    .iter()
                    .all(|frontier| !frontier.less_equal(time))
            };
            stash.drain_while(complete, |cap, held| {
                let mut session = output.session(&cap);
                router.route_epoch(*cap.time(), held, &mut refused.borrow_mut(), |routed| {
                    session.give(routed)
                });
            });
            // Versions older than every record still to come or held are done.
            let oldest = [points_frontier, queries_frontier]
                .into_iter()
                .filter_map(|frontier| frontier.frontier().first().copied())
                .chain(stash.first_time().copied())
                .min();
            if let Some(oldest) = oldest {
                router.history.forget_before(oldest);
            }
        }
    });
    routed
}

/// The points, which stay with the worker that read them, and the
/// registrations and removals, which go to their query's home dispatcher.
#[allow(clippy::type_complexity)]
fn points_and_queries<'scope, P: ExchangeData, Q: ExchangeData>(
    records: StreamVec<'scope, u64, Record<P, Q>>,
) -> (StreamVec<'scope, u64, Item<P, Q>>, StreamVec<'scope, u64, Item<P, Q>>) {
    let mut parts = records
        .partition(2, |record| match record.into_item() {
            Item::Point(point) => (0, Item::Point(point)),
            other => (1, other),
        })
        .into_iter();
    (parts.next().expect("two parts"), parts.next().expect("two parts"))
}

/// Holds each epoch's records from `input` until the epoch can be routed.
fn hold<P, Q, Puller: Pull<Message<u64, Vec<Item<P, Q>>>>>(
    input: &mut InputHandleCore<u64, Vec<Item<P, Q>>, Puller>,
    stash: &mut TimeStash<u64, Vec<Item<P, Q>>>,
) {
    input.for_each_stamp(|cap, batches| {
        if let Some(held) = stash.at(&cap) {
            batches.for_each(|batch| held.append(batch));
        }
    });
}

#[cfg(test)]
mod tests {
    use super::Credits;

    #[test]
    fn points_are_dealt_in_proportion_to_the_weights() {
        for (weights, me) in [
            (vec![3u32, 1], 0),
            (vec![5, 3, 2], 1),
            (vec![1, 1, 1, 1], 3),
            (vec![7], 2),
        ] {
            let total: u32 = weights.iter().sum();
            let mut credits = Credits::default();
            let mut dealt = vec![0u32; weights.len()];
            for n in 1..=10 * total {
                dealt[credits.deal(&weights, me)] += 1;
                // Every prefix is within two of its proportional share.
                for (count, &weight) in dealt.iter().zip(&weights) {
                    let share = f64::from(n) * f64::from(weight) / f64::from(total);
                    assert!(
                        (f64::from(*count) - share).abs() < 2.0,
                        "{weights:?}: {dealt:?} after {n}"
                    );
                }
            }
            let exact: Vec<u32> = weights.iter().map(|w| 10 * w).collect();
            assert_eq!(dealt, exact, "{weights:?}");
        }
    }
}

//! The census of epoch 0 and the opening plan as stages of the dataflow:
//! every worker counts its own records of epoch 0 by cell, worker 0's
//! coordinator plans the opening from the sums
//! ([`plan_opening`](super::opening::plan_opening)), and every worker gets
//! the changes at epoch 0, before it routes or processes anything: one
//! round trip, once.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::{Exchange, Pipeline};
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::vec::Broadcast;
use timely::dataflow::StreamVec;
use timely::ExchangeData;

use crate::common::stash::TimeStash;

use super::coordinator::Coordinator;
use super::cost::CostModel;
use super::geometry::{Cell, Grid, OutOfBounds};
use super::index::PlanChange;
use super::opening::CellCount;
use super::query_store::query_cells_of;
use super::record::{Item, Record};

/// Counts of cells.
type Counts = BTreeMap<Cell, CellCount>;

/// The opening's changes, at epoch 0 on every worker, planned by the
/// `coordinator` (used on worker 0) from the `records` of epoch 0 on the
/// `grid`, their cells' work by `model`.
pub(crate) fn open<'scope, P: ExchangeData, Q: ExchangeData, M: CostModel + 'static>(
    records: StreamVec<'scope, u64, Record<P, Q>>,
    grid: &Grid,
    model: M,
    coordinator: Rc<RefCell<Coordinator>>,
) -> StreamVec<'scope, u64, Vec<PlanChange>> {
    let grid = grid.clone();
    records
        .unary_frontier::<CapacityContainerBuilder<Vec<(Cell, CellCount)>>, _, _, _>(
            Pipeline,
            "SwarmCensus",
            move |_, _| {
                let mut stash: TimeStash<u64, Counts> = TimeStash::default();
                move |(input, frontier), output| {
                    input.for_each_stamp(|cap, batches| {
                        if cap.least() != Some(&0) {
                            return;
                        }
                        if let Some(counts) = stash.at(&cap) {
                            for record in batches.flat_map(|batch| batch.iter()) {
                                count(&grid, record.item(), counts);
                            }
                        }
                    });
                    stash.drain_complete(frontier, |cap, counts| {
                        output.session(&cap).give_iterator(counts.into_iter())
                    });
                }
            },
        )
        .unary_frontier::<CapacityContainerBuilder<Vec<Vec<PlanChange>>>, _, _, _>(
            Exchange::new(|_: &(Cell, CellCount)| 0),
            "SwarmOpening",
            move |_, _| {
                let mut stash: TimeStash<u64, Counts> = TimeStash::default();
                move |(input, frontier), output| {
                    input.for_each_stamp(|cap, batches| {
                        if let Some(counts) = stash.at(&cap) {
                            for (cell, count) in batches.flat_map(|batch| batch.drain(..)) {
                                let sum = counts.entry(cell).or_default();
                                sum.points += count.points;
                                sum.queries += count.queries;
                            }
                        }
                    });
                    stash.drain_complete(frontier, |cap, counts| {
                        let work = counts.iter().map(|(&cell, count)| (cell, count.work(&model))).collect();
                        let changes = coordinator.borrow_mut().open(&work);
                        output.session(&cap).give(changes);
                    });
                }
            },
        )
        .broadcast()
}

/// Counts a record in its cells: a point in its own, a registration in
/// every cell it covers; a removal changes nothing in epoch 0.
fn count<P, Q>(grid: &Grid, item: &Item<P, Q>, counts: &mut Counts) {
    match item {
        Item::Point(point) => {
            let cell = grid
                .cell_of(point.x, point.y, OutOfBounds::Clamp)
                .expect("points are finite by construction");
            counts.entry(cell).or_default().points += 1;
        }
        Item::Query(query) => {
            for cell in query_cells_of(grid, &query.rect).iter() {
                counts.entry(cell).or_default().queries += 1;
            }
        }
        Item::Removal(_) => {}
    }
}

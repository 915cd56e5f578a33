//! The coordinator as a stage of the dataflow: one message up from every
//! worker per round, at most one down. At each round end worker 0 takes
//! every executor's report (with what a loaded worker offers to shed),
//! concludes the round's plan update and sends it to every worker if it
//! changes the plan or the mean work moved (a round that changes nothing
//! sends nothing: the workers learn it from the progress of the plan
//! stream alone); one exchange round trip per round, which the plan depth
//! keeps off the records' path.

use std::cell::RefCell;
use std::rc::Rc;

use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::Exchange;
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::vec::Broadcast;
use timely::dataflow::StreamVec;

use crate::common::stash::TimeStash;

use super::coordinator::{Coordinator, Orders, RoundReport};
use super::plan_history::PlanUpdate;

/// The plan updates that the `coordinator` (used on worker 0) concludes from
/// the `reports`, delivered to every worker at the round's end time; what
/// was ordered is copied into `orders`.
pub(crate) fn coordinate<'scope>(
    reports: StreamVec<'scope, u64, RoundReport>,
    coordinator: Rc<RefCell<Coordinator>>,
    orders: Rc<RefCell<Orders>>,
) -> StreamVec<'scope, u64, PlanUpdate> {
    reports
        .unary_frontier::<CapacityContainerBuilder<Vec<PlanUpdate>>, _, _, _>(
            Exchange::new(|_: &RoundReport| 0),
            "SwarmCoordinate",
            move |_, _| {
                let mut stash: TimeStash<u64, Vec<RoundReport>> = TimeStash::default();
                move |(input, frontier), output| {
                    input.for_each_stamp(|cap, batches| {
                        if let Some(reports) = stash.at(&cap) {
                            reports.extend(batches.flat_map(|batch| batch.drain(..)));
                        }
                    });
                    stash.drain_complete(frontier, |cap, reports| {
                        let mut coordinator = coordinator.borrow_mut();
                        let update = coordinator.round(*cap.time(), reports);
                        *orders.borrow_mut() = coordinator.orders().clone();
                        if coordinator.worth_sending(&update) {
                            output.session(&cap).give(update);
                        }
                    });
                }
            },
        )
        .broadcast()
}

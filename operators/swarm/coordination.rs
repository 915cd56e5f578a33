//! The coordinator as a stage of the dataflow: round reports in, plan
//! updates out. Worker 0 decides at each round end and asks the loaded
//! workers for reductions; each asked worker answers from its own
//! statistics; worker 0 concludes the round's update and sends it to every
//! worker.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use serde::{Deserialize, Serialize};
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::{Exchange, Pipeline};
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::vec::Map;
use timely::dataflow::operators::Exchange as ExchangeRecords;
use timely::dataflow::StreamVec;

use crate::common::stash::TimeStash;

use super::coordinator::{Coordinator, Orders, Proposal, ReductionAsk, RoundReport};
use super::plan_history::PlanUpdate;

/// What the deciding coordinator sends on.
#[derive(Debug, Clone, Serialize, Deserialize)]
enum Coordination {
    /// Ask this worker for a reduction.
    Ask(usize, ReductionAsk),
    /// Conclude the round (always sent, so the update has a capability).
    Conclude,
}

/// The plan updates that the `coordinator` (used on worker 0) concludes from
/// the `reports`, delivered to every worker at the round's end time.
/// `propose` answers a reduction request on the asked worker; what was
/// ordered is copied into `orders`.
pub(crate) fn coordinate<'scope>(
    reports: StreamVec<'scope, u64, RoundReport>,
    coordinator: Coordinator,
    propose: impl FnMut(&ReductionAsk) -> Proposal + 'static,
    orders: Rc<RefCell<Orders>>,
) -> StreamVec<'scope, u64, PlanUpdate> {
    let coordinator = Rc::new(RefCell::new(coordinator));
    let decisions = decide(reports, Rc::clone(&coordinator));
    let proposals = reduce(decisions.clone(), propose);
    conclude(decisions, proposals, coordinator, orders)
}

/// Decides at worker 0 once all of a round's reports are in: the reduction
/// requests, then the mark that concludes the round.
fn decide<'scope>(
    reports: StreamVec<'scope, u64, RoundReport>,
    coordinator: Rc<RefCell<Coordinator>>,
) -> StreamVec<'scope, u64, Coordination> {
    reports.unary_frontier::<CapacityContainerBuilder<Vec<Coordination>>, _, _, _>(
        Exchange::new(|_: &RoundReport| 0),
        "SwarmDecide",
        move |_, _| {
            let mut stash: TimeStash<u64, Vec<RoundReport>> = TimeStash::default();
            move |(input, frontier), output| {
                input.for_each_stamp(|cap, batches| {
                    if let Some(reports) = stash.at(&cap) {
                        reports.extend(batches.flat_map(|batch| batch.drain(..)));
                    }
                });
                stash.drain_complete(frontier, |cap, reports| {
                    let asks = coordinator.borrow_mut().round_end(*cap.time(), reports);
                    let mut session = output.session(&cap);
                    session.give_iterator(asks.into_iter().map(|(worker, ask)| Coordination::Ask(worker, ask)));
                    session.give(Coordination::Conclude);
                });
            }
        },
    )
}

/// Each asked worker answers from its own statistics (`propose`), at the
/// round's end time.
fn reduce<'scope>(
    decisions: StreamVec<'scope, u64, Coordination>,
    mut propose: impl FnMut(&ReductionAsk) -> Proposal + 'static,
) -> StreamVec<'scope, u64, Proposal> {
    decisions
        .flat_map(|message| match message {
            Coordination::Ask(worker, ask) => Some((worker, ask)),
            Coordination::Conclude => None,
        })
        .unary::<CapacityContainerBuilder<Vec<Proposal>>, _, _, _>(
            Exchange::new(|(worker, _): &(usize, ReductionAsk)| *worker as u64),
            "SwarmReduce",
            move |_, _| {
                move |input, output| {
                    input.for_each_stamp(|cap, batches| {
                        let mut session = output.session(&cap);
                        for (_, ask) in batches.flat_map(|batch| batch.drain(..)) {
                            session.give(propose(&ask));
                        }
                    });
                }
            },
        )
}

/// Worker 0 concludes a round once its mark and every answer are in (the
/// mark comes even when no worker was asked, so that the update has a
/// capability), and sends the update to every worker.
fn conclude<'scope>(
    decisions: StreamVec<'scope, u64, Coordination>,
    proposals: StreamVec<'scope, u64, Proposal>,
    coordinator: Rc<RefCell<Coordinator>>,
    orders: Rc<RefCell<Orders>>,
) -> StreamVec<'scope, u64, PlanUpdate> {
    let workers = decisions.scope().peers();
    decisions
        .flat_map(|message| matches!(message, Coordination::Conclude).then_some(()))
        .binary_frontier::<_, CapacityContainerBuilder<Vec<(usize, PlanUpdate)>>, _, _, _, _>(
            proposals,
            Pipeline,
            Exchange::new(|_: &Proposal| 0),
            "SwarmConclude",
            move |_, _| {
                let mut marks: TimeStash<u64, ()> = TimeStash::default();
                let mut answers: BTreeMap<u64, Vec<Proposal>> = BTreeMap::new();
                move |(marks_in, marks_frontier), (answers_in, answers_frontier), output| {
                    marks_in.for_each_stamp(|cap, _| {
                        marks.at(&cap);
                    });
                    answers_in.for_each_stamp(|cap, batches| {
                        if let Some(&time) = cap.least() {
                            answers
                                .entry(time)
                                .or_default()
                                .extend(batches.flat_map(|batch| batch.drain(..)));
                        }
                    });
                    let complete = |time: &u64| !marks_frontier.less_equal(time) && !answers_frontier.less_equal(time);
                    marks.drain_while(complete, |cap, ()| {
                        let mut coordinator = coordinator.borrow_mut();
                        let update = coordinator.conclude(*cap.time(), answers.remove(cap.time()).unwrap_or_default());
                        *orders.borrow_mut() = coordinator.orders().clone();
                        output
                            .session(&cap)
                            .give_iterator((0..workers).map(|worker| (worker, update.clone())));
                    });
                }
            },
        )
        .exchange(|(worker, _): &(usize, PlanUpdate)| *worker as u64)
        .map(|(_, update)| update)
}

//! A plan that a program orders (Megaphone's control stream): the changes
//! on a control stream become the plan updates that the dispatchers and
//! executors carry out, in place of SWARM's coordinator.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::Exchange;
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::vec::Broadcast;
use timely::dataflow::operators::Capability;
use timely::dataflow::StreamVec;
use timely::logging_core::Logger;

use super::coordinator::{log_changes, Orders, Touched};
use super::events::SwarmEventBuilder;
use super::index::{GlobalIndex, PlanChange};
use super::plan_history::PlanUpdate;

/// Turns the changes ordered on a control stream into plan updates, one
/// per round, against its own copy of the plan.
pub(crate) struct Controller {
    index: GlobalIndex,
    workers: usize,
    /// Epochs per round: the plan changes only between rounds.
    round: u64,
    /// Changes that touch a partition an earlier change of the same update
    /// touched: they wait for the next round's update, in their order.
    deferred: Vec<PlanChange>,
    logger: Option<Logger<SwarmEventBuilder>>,
}

impl Controller {
    /// A controller of the plan `index` over `workers` workers, changing
    /// it every `round` epochs.
    pub(crate) fn new(
        index: GlobalIndex,
        workers: usize,
        round: u64,
        logger: Option<Logger<SwarmEventBuilder>>,
    ) -> Self {
        Controller {
            index,
            workers,
            round: round.max(1),
            deferred: Vec::new(),
            logger,
        }
    }

    /// The first epoch from which a change ordered at `time` holds: the
    /// next round's first.
    pub(crate) fn effective(&self, time: u64) -> u64 {
        (time / self.round + 1) * self.round
    }

    /// Whether changes wait for a later round.
    pub(crate) fn has_deferred(&self) -> bool {
        !self.deferred.is_empty()
    }

    /// The update that holds from `effective`: the changes deferred from
    /// earlier rounds, then `changes`, each applied to the plan in order. A
    /// change that touches a partition an earlier one of this update
    /// touched waits for the next round; one that does not apply to the
    /// plan as it then is is skipped and counted in `orders.refused`.
    pub(crate) fn conclude(&mut self, effective: u64, changes: Vec<PlanChange>, orders: &mut Orders) -> PlanUpdate {
        let mut touched = Touched::default();
        let mut admitted = Vec::new();
        let ordered = std::mem::take(&mut self.deferred).into_iter().chain(changes);
        for change in ordered {
            if !touched.admits(&change) {
                self.deferred.push(change);
            } else if names_workers_below(&change, self.workers) && self.index.apply(&change).is_ok() {
                touched.add(&change);
                admitted.push(change);
            } else {
                orders.refused += 1;
            }
        }
        orders.rounds += 1;
        orders.rebalanced += u64::from(!admitted.is_empty());
        orders.count(effective, &admitted);
        log_changes(self.logger.as_ref(), effective, &admitted);
        PlanUpdate {
            effective,
            changes: admitted,
            mean_work: 0.0,
        }
    }
}

/// Whether every worker `change` names is one of the `workers`.
fn names_workers_below(change: &PlanChange, workers: usize) -> bool {
    match *change {
        PlanChange::Move { to, .. } => to < workers,
        PlanChange::Split { first, second, .. } => first.1 < workers && second.1 < workers,
        PlanChange::Share { with, from, .. } => with < workers && from < workers,
        PlanChange::Unshare { from, .. } => from < workers,
        PlanChange::Merge { .. } => true,
    }
}

/// The plan updates the `controller` (used on worker 0) concludes from the
/// `changes` ordered at each time, delivered to every worker: the update
/// holding from round start `s` once the control stream has passed
/// `s - 1`, at the earliest time a change for it was ordered. What was
/// ordered is copied into `orders`.
pub(crate) fn control<'scope>(
    changes: StreamVec<'scope, u64, PlanChange>,
    mut controller: Controller,
    orders: Rc<RefCell<Orders>>,
) -> StreamVec<'scope, u64, PlanUpdate> {
    changes
        .unary_frontier::<CapacityContainerBuilder<Vec<PlanUpdate>>, _, _, _>(
            Exchange::new(|_: &PlanChange| 0),
            "SwarmControl",
            move |_, _| {
                let mut pending: BTreeMap<u64, (Capability<u64>, Vec<PlanChange>)> = BTreeMap::new();
                move |(input, frontier), output| {
                    input.for_each_stamp(|cap, batches| {
                        let Some(time) = cap.least().copied() else { return };
                        let (held, ordered) = pending
                            .entry(controller.effective(time))
                            .or_insert_with(|| (cap.retain_least(0).expect("a stamped message"), Vec::new()));
                        if time < *held.time() {
                            *held = cap.retain_least(0).expect("a stamped message");
                        }
                        ordered.extend(batches.flat_map(|batch| batch.drain(..)));
                    });
                    while let Some((&effective, _)) = pending.first_key_value() {
                        if frontier.less_equal(&(effective - 1)) {
                            break;
                        }
                        let (cap, ordered) = pending.pop_first().expect("a first entry").1;
                        let update = controller.conclude(effective, ordered, &mut orders.borrow_mut());
                        if controller.has_deferred() {
                            // Its records wait for the next round's update.
                            let next = effective + controller.round;
                            pending
                                .entry(next)
                                .or_insert_with(|| (cap.delayed(&effective), Vec::new()));
                        }
                        if !update.changes.is_empty() {
                            output.session(&cap).give(update);
                        }
                    }
                }
            },
        )
        .broadcast()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::swarm::geometry::{Grid, Rect};

    fn plan(workers: usize) -> GlobalIndex {
        let grid = Grid::new(Rect::new(0.0, 0.0, 8.0, 8.0).unwrap(), 8, 8).unwrap();
        GlobalIndex::initial(grid, workers).unwrap().0
    }

    #[test]
    fn a_change_holds_from_the_next_round() {
        let controller = Controller::new(plan(2), 2, 4, None);
        assert_eq!(controller.effective(0), 4);
        assert_eq!(controller.effective(3), 4);
        assert_eq!(controller.effective(4), 8);
    }

    #[test]
    fn changes_to_one_partition_in_one_round_wait_their_turn_and_bad_ones_are_counted() {
        let index = plan(2);
        let id = *index.partitions().keys().next().unwrap();
        let owner = index.info(id).unwrap().owner;
        let mut controller = Controller::new(index, 2, 2, None);
        let mut orders = Orders::default();
        let there = PlanChange::Move { id, to: 1 - owner };
        let back = PlanChange::Move { id, to: owner };
        let no_partition = PlanChange::Move { id: id + 1000, to: 0 };
        let no_worker = PlanChange::Move { id: id + 1, to: 2 };
        let ordered = vec![there.clone(), back.clone(), no_partition, no_worker];
        let first = controller.conclude(2, ordered, &mut orders);
        assert_eq!(first.changes, vec![there]);
        assert!(controller.has_deferred());
        let second = controller.conclude(4, Vec::new(), &mut orders);
        assert_eq!(second.changes, vec![back]);
        assert!(!controller.has_deferred());
        assert_eq!(
            (orders.moves, orders.refused, orders.rounds, orders.rebalanced),
            (2, 2, 2, 2)
        );
        assert_eq!(orders.changed_at, vec![2, 4]);
    }
}

//! A worker's executor, without timely: what it does with one epoch's
//! records, at a round's end, and with a plan update. The timely operator
//! around it (in [`operator`](super::operator)) decides only when.

#[cfg(test)]
use std::cell::Ref;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

use serde::{Deserialize, Serialize};
use timely::logging_core::Logger;

use crate::common::busy_work::BusyWork;
use crate::common::Error;

use super::app::PartitionState;
use super::coordinator::{Hot, Offer, RoundReport, MARGIN, OFFER_SHARES, PARTNER};
use super::cost::CostModel;
use super::cost::{normalized, WorkerLoad};
use super::dispatch::{Dispatched, DispatchedTo};
use super::events::{SwarmEvent, SwarmEventBuilder};
use super::ids::PartitionId;
use super::index::PlanChange;
use super::plan_history::PlanUpdate;
use super::rebalance::ReductionRequest;
use super::store::{PartitionPacket, Store};

/// What one executor did, readable by the program.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ExecutorFigures {
    /// Point–query checks made.
    pub checks: u64,
    /// Wall-clock nanoseconds spent evaluating points.
    pub busy_ns: u64,
    /// Results emitted.
    pub outputs: u64,
    /// Partitions sent to other workers.
    pub partitions_moved: u64,
    /// Bytes of state sent to other workers.
    pub bytes_moved: u64,
    /// Partitions held now.
    pub partitions_held: u64,
    /// The work of the most recent epochs this worker processed (at most
    /// [`RECENT_EPOCHS`], oldest first): a program that wants every epoch's
    /// reads them as epochs complete.
    pub recent_epochs: VecDeque<EpochWork>,
}

/// How many epochs [`ExecutorFigures::recent_epochs`] keeps.
pub const RECENT_EPOCHS: usize = 1024;

/// What one executor did in one epoch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EpochWork {
    /// The epoch.
    pub epoch: u64,
    /// Point–query checks made.
    pub checks: u64,
    /// Wall-clock nanoseconds spent evaluating its points.
    pub busy_ns: u64,
}

/// A worker's partitions and what it does with them each epoch.
pub(crate) struct Executor<S, M> {
    store: Store<S>,
    model: M,
    round: u64,
    merge_every: u64,
    split_gain: Option<f64>,
    plans_locally: bool,
    // The mean work per worker the coordinator last sent.
    mean_work: f64,
    work: BusyWork,
    // Shared with the program's handles, so nothing is copied per epoch.
    figures: Rc<RefCell<ExecutorFigures>>,
    logger: Option<Logger<SwarmEventBuilder>>,
}

impl<S: PartitionState, M: CostModel> Executor<S, M> {
    /// An executor over `store`, with rounds of `round` epochs, merges every
    /// `merge_every` rounds, splits in place by `split_gain` (see
    /// [`SwarmConfig`](super::SwarmConfig)), costs by `model` and `work`
    /// spent per check. Without `plans_locally` (a static plan) it proposes
    /// no split or merge of its own. What it does goes into `figures`.
    pub(crate) fn new(
        store: Store<S>,
        model: M,
        (round, merge_every): (u64, u64),
        split_gain: Option<f64>,
        plans_locally: bool,
        work: BusyWork,
        figures: Rc<RefCell<ExecutorFigures>>,
    ) -> Self {
        figures.borrow_mut().partitions_held = store.partitions().len() as u64;
        Executor {
            store,
            model,
            round: round.max(1),
            merge_every: merge_every.max(1),
            split_gain,
            plans_locally,
            mean_work: 0.0,
            work,
            figures,
            logger: None,
        }
    }

    /// Applies the opening's `changes` before the first epoch (see
    /// [`Store::open`]).
    pub(crate) fn open(&mut self, changes: &[PlanChange]) -> Result<(), Error> {
        self.store.open(changes)?;
        self.figures.borrow_mut().partitions_held = self.store.partitions().len() as u64;
        Ok(())
    }

    /// Logs each partition it sends away (a [`SwarmEvent::Migrated`]).
    pub(crate) fn with_logger(self, logger: Option<Logger<SwarmEventBuilder>>) -> Self {
        Executor { logger, ..self }
    }

    /// What it did so far.
    #[cfg(test)]
    pub(crate) fn figures(&self) -> Ref<'_, ExecutorFigures> {
        self.figures.borrow()
    }

    /// Processes epoch `time`: installs the partitions that arrived, then
    /// applies the epoch's registrations, removals and points in that order
    /// (records of one epoch come from many workers in no particular order),
    /// emitting the points' results.
    pub(crate) fn epoch(
        &mut self,
        time: u64,
        arrivals: Vec<PartitionPacket<S>>,
        mut records: Vec<DispatchedTo<S>>,
        emit: &mut dyn FnMut(S::Output),
    ) {
        for packet in arrivals {
            self.store.install(packet);
        }
        let round = time / self.round;
        records.sort_by_key(|(_, _, record)| record.kind());
        let start = std::time::Instant::now();
        let mut outputs = 0;
        let mut counted = |output| {
            outputs += 1;
            emit(output)
        };
        let (mut points, mut checks) = (false, 0);
        for (_, partition, record) in records {
            points |= matches!(record, Dispatched::Point(_));
            let made = self.store.apply(partition, record, round, &mut counted);
            self.work.repeat(made);
            checks += made;
        }
        let busy_ns = if points { start.elapsed().as_nanos() as u64 } else { 0 };
        let mut figures = self.figures.borrow_mut();
        figures.checks += checks;
        figures.outputs += outputs;
        figures.busy_ns += busy_ns;
        figures.partitions_held = self.store.partitions().len() as u64;
        if figures.recent_epochs.len() == RECENT_EPOCHS {
            figures.recent_epochs.pop_front();
        }
        figures.recent_epochs.push_back(EpochWork {
            epoch: time,
            checks,
            busy_ns,
        });
    }

    /// Whether epoch `time` ends a round.
    pub(crate) fn ends_round(&self, time: u64) -> bool {
        (time + 1).is_multiple_of(self.round)
    }

    /// Ends the round that `time` closes (Algorithm 2 on every partition):
    /// the report for the coordinator, with the splits in place that cut
    /// work (under a `split_gain`) and, every `merge_every` rounds, merges.
    pub(crate) fn end_round(&mut self, time: u64) -> RoundReport {
        let load = self.store.end_round(&self.model);
        let mut local = Vec::new();
        if self.plans_locally {
            // Each step here is skipped unless it can change something: a
            // round that changes nothing costs the statistics alone.
            if let Some(gain) = self.split_gain.filter(|_| self.model.splits_can_save()) {
                let floor = self.store.mean_work(&self.model);
                local = self.store.plan_refinement(&self.model, gain, floor, time / self.round);
            }
            let settled = (time / self.round).checked_sub(2 * self.merge_every);
            if let Some(settled) = settled {
                local.extend(self.store.plan_unshares(&self.model, self.mean_work, settled));
            }
            if (time / self.round + 1).is_multiple_of(self.merge_every) {
                // Neither what splits now nor what a change made in the
                // last two merge intervals: statistics of a few rounds are
                // noisy, and merging a fresh part undoes the split paid for.
                let round = time / self.round;
                let young = self
                    .store
                    .partitions()
                    .iter()
                    .filter(|(_, p)| p.born + 2 * self.merge_every > round)
                    .map(|(&id, _)| id);
                let splitting: Vec<PartitionId> = local.iter().flat_map(PlanChange::touched).chain(young).collect();
                let floor = self.store.mean_work(&self.model);
                let merges = self.store.plan_merges(&self.model, self.split_gain, floor, &splitting);
                local.extend(merges);
            }
        }
        let offers = self.offer(load, &local);
        // Only a worker that offers is loaded enough to spread.
        let busy: Vec<PartitionId> = local.iter().flat_map(PlanChange::touched).collect();
        let hot = (!offers.is_empty())
            .then(|| self.store.hottest_shareable(&self.model, &busy))
            .flatten()
            .map(|(id, work)| Hot { id, work });
        RoundReport {
            worker: self.store.me(),
            load,
            local,
            offers,
            hot,
        }
    }

    /// Notes the mean work of a plan update as it arrives (before it holds).
    pub(crate) fn note(&mut self, update: &PlanUpdate) {
        self.mean_work = update.mean_work;
    }

    /// What this worker offers to shed, sent with its report so that the
    /// coordinator need not ask (one message each way per round): when its
    /// `load` exceeds the last mean the coordinator sent by the margin, a
    /// reduction for each of [`OFFER_SHARES`] of its cost, by
    /// its own statistics. The coordinator picks the partner and the offer
    /// that best closes their gap, so the offers need no figure of the
    /// round but this worker's own. Nothing under a static plan, and
    /// nothing touching a partition its own changes (`local`) touch.
    fn offer(&mut self, load: WorkerLoad, local: &[PlanChange]) -> Vec<Offer> {
        // A worker within the margin of the mean is not worth a pair's
        // move (each offer is four reductions on the round's path).
        if !self.plans_locally || load.work <= self.mean_work * (1.0 + MARGIN) {
            return Vec::new();
        }
        // Costs are compared to each other only: any R(S) will do.
        let received = load.received.max(1.0);
        let cost = normalized(load.work, received);
        let busy: Vec<PartitionId> = local.iter().flat_map(PlanChange::touched).collect();
        let mut offers: Vec<Offer> = Vec::new();
        for share in OFFER_SHARES {
            // A partner that much below: half the gap is `share` of the cost.
            let request = ReductionRequest {
                low_cost: cost * (1.0 - 2.0 * share),
                system_received: received,
                margin: MARGIN,
            };
            let (changes, shed) = self.store.propose_reduction(&self.model, &request, PARTNER, &busy);
            if !changes.is_empty() && offers.iter().all(|offer| offer.changes != changes) {
                let work = shed * received;
                offers.push(Offer { changes, work });
            }
        }
        offers
    }

    /// Applies the plan update that holds from `time + 1` at the end of
    /// epoch `time`: the partitions leaving, as packets for their new owners.
    pub(crate) fn apply_update(
        &mut self,
        time: u64,
        update: &PlanUpdate,
    ) -> Result<Vec<(usize, PartitionPacket<S>)>, Error> {
        let leaving = self.store.apply_update(update, time / self.round)?;
        let mut figures = self.figures.borrow_mut();
        for (to, packet) in &leaving {
            let bytes = (packet.partition.state.moved_bytes()
                + std::mem::size_of_val(packet.partition.stats.rows())
                + std::mem::size_of_val(packet.partition.stats.cols())) as u64;
            figures.partitions_moved += 1;
            figures.bytes_moved += bytes;
            if let Some(logger) = &self.logger {
                logger.log(SwarmEvent::Migrated {
                    id: packet.id,
                    from: self.store.me(),
                    to: *to,
                    effective: time + 1,
                    bytes,
                });
            }
        }
        figures.partitions_held = self.store.partitions().len() as u64;
        Ok(leaving)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::swarm::app::{Point, Query};
    use crate::swarm::cost::RangeQueryCost;
    use crate::swarm::geometry::{Grid, OutOfBounds, Rect};
    use crate::swarm::ids::IdMint;
    use crate::swarm::index::GlobalIndex;
    use crate::swarm::range_queries::{Match, RangeQueries};

    fn executors() -> (GlobalIndex, Vec<Executor<RangeQueries, RangeQueryCost>>) {
        let grid = Grid::new(Rect::new(0.0, 0.0, 10.0, 10.0).unwrap(), 4, 4).unwrap();
        let (index, base) = GlobalIndex::initial(grid, 2).unwrap();
        let executors = (0..2)
            .map(|me| {
                let store = Store::new(me, index.clone(), IdMint::new(base, me, 3));
                Executor::new(
                    store,
                    RangeQueryCost::default(),
                    (2, 10),
                    None,
                    true,
                    BusyWork::default(),
                    Rc::default(),
                )
            })
            .collect();
        (index, executors)
    }

    /// A record routed as the dispatcher would route it under `index`.
    fn routed(index: &GlobalIndex, record: Dispatched<(), ()>) -> Vec<(usize, PartitionId, Dispatched<(), ()>)> {
        let grid = index.grid();
        match &record {
            Dispatched::Point(p) => {
                let (id, owner) = index.route_point(p.x, p.y, OutOfBounds::Reject).unwrap();
                vec![(owner, id, record)]
            }
            Dispatched::Query(Query { rect, .. }) | Dispatched::Removal { rect, .. } => {
                let cells = grid.cells_of(rect, OutOfBounds::Reject).unwrap();
                let ids = index.partitions_overlapping(&cells);
                ids.into_iter()
                    .map(|id| (index.info(id).unwrap().owner, id, record.clone()))
                    .collect()
            }
        }
    }

    /// Runs one epoch on both executors, each given what is routed to it.
    fn epoch(
        executors: &mut [Executor<RangeQueries, RangeQueryCost>],
        time: u64,
        records: Vec<(usize, PartitionId, Dispatched<(), ()>)>,
        arrivals: &mut [Vec<PartitionPacket<RangeQueries>>],
    ) -> Vec<Match> {
        let mut out = Vec::new();
        for (me, executor) in executors.iter_mut().enumerate() {
            let mine = records.iter().filter(|(owner, _, _)| *owner == me).cloned().collect();
            executor.epoch(time, std::mem::take(&mut arrivals[me]), mine, &mut |m| out.push(m));
        }
        out.sort();
        out
    }

    #[test]
    fn an_epoch_registers_removes_and_evaluates_in_order() {
        let (index, mut executors) = executors();
        let wide = Rect::new(1.0, 1.0, 9.0, 9.0).unwrap();
        let mut arrivals = vec![Vec::new(), Vec::new()];
        // A point of the same epoch as the registration is matched: queries first.
        let mut records = routed(&index, Dispatched::Point(Point::new(5, 2.0, 8.0)));
        records.extend(routed(&index, Dispatched::Query(Query::new(1, wide))));
        let seen = epoch(&mut executors, 0, records, &mut arrivals);
        assert_eq!(seen, vec![Match { query: 1, point: 5 }]);
        // One point, checked against the one query its partition holds.
        assert_eq!(executors.iter().map(|e| e.figures().checks).sum::<u64>(), 1);
        let removal = Dispatched::Removal { id: 1, rect: wide };
        let mut records = routed(&index, Dispatched::Point(Point::new(6, 8.0, 2.0)));
        records.extend(routed(&index, removal));
        assert_eq!(epoch(&mut executors, 1, records, &mut arrivals), vec![]);
    }

    /// Both executors after epoch 0 registered query 1 over the whole space.
    #[allow(clippy::type_complexity)]
    fn holding_a_query_everywhere() -> (
        GlobalIndex,
        Vec<Executor<RangeQueries, RangeQueryCost>>,
        Vec<Vec<PartitionPacket<RangeQueries>>>,
    ) {
        let (index, mut executors) = executors();
        let mut arrivals = vec![Vec::new(), Vec::new()];
        let query = Query::new(1, Rect::new(0.0, 0.0, 10.0, 10.0).unwrap());
        epoch(
            &mut executors,
            0,
            routed(&index, Dispatched::Query(query)),
            &mut arrivals,
        );
        (index, executors, arrivals)
    }

    /// Every executor applies `update` at the end of epoch `time`; what
    /// leaves goes to its new owner's arrivals.
    fn apply_everywhere(
        executors: &mut [Executor<RangeQueries, RangeQueryCost>],
        time: u64,
        update: &PlanUpdate,
        arrivals: &mut [Vec<PartitionPacket<RangeQueries>>],
    ) {
        for executor in executors.iter_mut() {
            for (to, packet) in executor.apply_update(time, update).unwrap() {
                arrivals[to].push(packet);
            }
        }
    }

    #[test]
    fn a_moved_partition_keeps_its_queries_at_its_new_owner() {
        let (index, mut executors, mut arrivals) = holding_a_query_everywhere();
        // Worker 0 gives its partition to worker 1 from epoch 2 on.
        let (&id, _) = index.partitions().iter().find(|(_, info)| info.owner == 0).unwrap();
        let update = PlanUpdate {
            effective: 2,
            changes: vec![PlanChange::Move { id, to: 1 }],
            ..PlanUpdate::default()
        };
        assert!(executors[0].ends_round(1));
        let report = executors[0].end_round(1);
        assert_eq!(report.worker, 0);
        apply_everywhere(&mut executors, 1, &update, &mut arrivals);
        assert_eq!(arrivals[1].len(), 1);
        assert_eq!(executors[0].figures().partitions_held, 0);
        let mut moved = index.clone();
        moved.apply(&update.changes[0]).unwrap();
        // A point in the moved partition now goes to worker 1, which matches it.
        let x = index.info(id).unwrap().rect;
        let (px, py) = (x.col0 as f64 * 2.5 + 0.1, x.row0 as f64 * 2.5 + 0.1);
        let records = routed(&moved, Dispatched::Point(Point::new(9, px, py)));
        assert!(records.iter().all(|(owner, _, _)| *owner == 1));
        assert_eq!(
            epoch(&mut executors, 2, records, &mut arrivals),
            vec![Match { query: 1, point: 9 }]
        );
        assert_eq!(executors[1].figures().partitions_held, 2);
    }

    #[test]
    fn a_part_split_and_moved_in_one_update_leaves_once() {
        let (index, mut executors, mut arrivals) = holding_a_query_everywhere();
        // Worker 0 splits its partition and deals the second part to worker 1.
        let (&id, info) = index.partitions().iter().find(|(_, info)| info.owner == 0).unwrap();
        let line = crate::swarm::plan::SplitLine {
            axis: crate::swarm::plan::Axis::Rows,
            after: info.rect.rows() / 2 - 1,
        };
        let update = PlanUpdate {
            effective: 2,
            changes: vec![
                PlanChange::Split {
                    id,
                    line,
                    first: (100, 0),
                    second: (101, 0),
                },
                PlanChange::Move { id: 101, to: 1 },
            ],
            ..PlanUpdate::default()
        };
        apply_everywhere(&mut executors, 1, &update, &mut arrivals);
        assert_eq!(arrivals[1].iter().map(|p| p.id).collect::<Vec<_>>(), vec![101]);
        let mut plan = index.clone();
        for change in &update.changes {
            plan.apply(change).unwrap();
        }
        // Every cell's point matches the query at its owner under the new plan.
        let mut records = Vec::new();
        for (i, (x, y)) in [(1.0, 1.0), (9.0, 1.0), (1.0, 9.0), (9.0, 9.0)].into_iter().enumerate() {
            records.extend(routed(&plan, Dispatched::Point(Point::new(i as u64, x, y))));
        }
        let seen = epoch(&mut executors, 2, records, &mut arrivals);
        assert_eq!(seen.iter().map(|m| m.point).collect::<Vec<_>>(), vec![0, 1, 2, 3]);
    }
}

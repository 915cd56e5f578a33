//! A worker's executor, without timely: what it does with one epoch's
//! records, at a round's end, and with a plan update. The timely operator
//! around it (in [`operator`](super::operator)) decides only when.

use serde::{Deserialize, Serialize};

use crate::common::spin::BusyWork;
use crate::common::Error;

use super::app::PartitionState;
use super::coordinator::{ReductionAsk, RoundReport};
use super::cost::CostModel;
use super::ids::PartitionId;
use super::index::PlanChange;
use super::plan::PlanUpdate;
use super::router::{Routed, RoutedTo};
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
}

/// A worker's partitions and what it does with them each epoch.
pub(crate) struct Executor<S, M> {
    store: Store<S>,
    model: M,
    round: u64,
    merge_every: u64,
    split_gain: Option<f64>,
    work: BusyWork,
    figures: ExecutorFigures,
}

impl<S: PartitionState, M: CostModel> Executor<S, M> {
    /// An executor over `store`, with rounds of `round` epochs, merges every
    /// `merge_every` rounds, splits in place by `split_gain` (see
    /// [`SwarmConfig`](super::SwarmConfig)), costs by `model` and `work`
    /// spent per check.
    pub(crate) fn new(
        store: Store<S>,
        model: M,
        round: u64,
        merge_every: u64,
        split_gain: Option<f64>,
        work: BusyWork,
    ) -> Self {
        let figures = ExecutorFigures {
            partitions_held: store.partitions().len() as u64,
            ..ExecutorFigures::default()
        };
        Executor {
            store,
            model,
            round: round.max(1),
            merge_every: merge_every.max(1),
            split_gain,
            work,
            figures,
        }
    }

    /// What it did so far.
    pub(crate) fn figures(&self) -> &ExecutorFigures {
        &self.figures
    }

    /// Processes epoch `time`: installs the partitions that arrived, then
    /// applies the epoch's registrations, removals and points in that order
    /// (records of one epoch come from many workers in no particular order),
    /// emitting the points' results.
    pub(crate) fn epoch(
        &mut self,
        time: u64,
        arrivals: Vec<PartitionPacket<S>>,
        mut records: Vec<RoutedTo<S>>,
        emit: &mut dyn FnMut(S::Output),
    ) {
        for packet in arrivals {
            self.store.install(packet);
        }
        let round = time / self.round;
        records.sort_by_key(|(_, _, record)| match record {
            Routed::Query(_) => 0,
            Routed::Removal { .. } => 1,
            Routed::Point(_) => 2,
        });
        let start = std::time::Instant::now();
        let mut outputs = 0;
        let mut counted = |output| {
            outputs += 1;
            emit(output)
        };
        let mut points = false;
        for (_, partition, record) in records {
            points |= matches!(record, Routed::Point(_));
            let checks = self.store.apply(partition, record, round, &mut counted);
            self.work.repeat(checks);
            self.figures.checks += checks;
        }
        self.figures.outputs += outputs;
        if points {
            self.figures.busy_ns += start.elapsed().as_nanos() as u64;
        }
        self.figures.partitions_held = self.store.partitions().len() as u64;
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
        let mut local = match self.split_gain {
            Some(gain) => self.store.plan_refinement(&self.model, gain),
            None => Vec::new(),
        };
        if (time / self.round + 1).is_multiple_of(self.merge_every) {
            let splitting: Vec<PartitionId> = local.iter().flat_map(PlanChange::touched).collect();
            let merges = self.store.plan_merges(&self.model, self.split_gain, &splitting);
            local.extend(merges);
        }
        RoundReport {
            worker: self.store.me(),
            load,
            local,
        }
    }

    /// This worker's answer to a reduction request, by its own statistics.
    pub(crate) fn propose(&mut self, ask: &ReductionAsk) -> Vec<PlanChange> {
        self.store.propose_reduction(&self.model, &ask.request, ask.low_worker)
    }

    /// Applies the plan update that holds from `time + 1` at the end of
    /// epoch `time`: the partitions leaving, as packets for their new owners.
    pub(crate) fn apply_update(
        &mut self,
        time: u64,
        update: &PlanUpdate,
    ) -> Result<Vec<(usize, PartitionPacket<S>)>, Error> {
        let leaving = self.store.apply_update(update, time / self.round)?;
        for (_, packet) in &leaving {
            self.figures.partitions_moved += 1;
            self.figures.bytes_moved += (packet.partition.state.moved_bytes()
                + std::mem::size_of_val(packet.partition.stats.rows())
                + std::mem::size_of_val(packet.partition.stats.cols())) as u64;
        }
        self.figures.partitions_held = self.store.partitions().len() as u64;
        Ok(leaving)
    }
}

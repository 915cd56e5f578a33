//! The coordinator's side of load balancing: from the two numbers every
//! worker sends per round, decide, ask for reductions, and conclude the
//! round's plan update.

use std::collections::HashMap;
use std::time::Instant;

use rand::rngs::SmallRng;
use rand::SeedableRng;
use serde::{Deserialize, Serialize};
use timely::logging_core::Logger;

use crate::common::{keep_recent, Error};

use super::cost::{normalized, system_received, WorkerLoad};
use super::decision::{Decision, DecisionPolicy, FiveStage, RoundSummary, Threshold};
use super::events::{SwarmEvent, SwarmEventBuilder};
use super::forced::random_change;
use super::ids::{IdMint, PartitionId};
use super::index::{GlobalIndex, PlanChange};
use super::plan::PlanUpdate;
use super::rebalance::ReductionRequest;

/// What a worker sends the coordinator at the end of a round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct RoundReport {
    /// The worker.
    pub worker: usize,
    /// Num(C(m)) and R(m).
    pub load: WorkerLoad,
    /// Changes to its own partitions: splits in place that cut work, and
    /// merges (every M rounds).
    pub local: Vec<PlanChange>,
}

/// A request to a worker to shed load toward `low_worker`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct ReductionAsk {
    /// The pair: 0 for the most loaded worker (asked toward the least
    /// loaded), 1 for the next (toward the next least loaded), ...
    pub rank: usize,
    /// The figures it needs.
    pub request: ReductionRequest,
    /// The worker to shed load toward.
    pub low_worker: usize,
}

/// How the plan evolves.
pub enum Policy {
    /// Never change the initial plan (the baseline).
    Static,
    /// SWARM: a decision policy, then reductions from the workers.
    Adaptive(Box<dyn DecisionPolicy + Send>),
    /// A random move, split, merge, share or unshare every round (tests the
    /// migrations), drawn from this seed.
    Forced(u64),
}

impl Policy {
    /// SWARM deciding by the paper's five-stage mechanism (β = 20).
    pub fn paper() -> Self {
        Policy::Adaptive(Box::new(FiveStage::default()))
    }

    /// SWARM rebalancing whenever the most loaded worker's cost exceeds `tau`
    /// times the mean (or half as far above it two rounds in a row: see
    /// [`Threshold`]).
    pub fn threshold(tau: f64) -> Self {
        Policy::Adaptive(Box::new(Threshold::new(tau)))
    }

    /// A forced schedule seeded with `seed`.
    pub fn forced(seed: u64) -> Self {
        Policy::Forced(seed)
    }

    /// Whether the policy's settings can be used: `swarm` refuses one that
    /// cannot (a threshold that is NaN or below 1).
    pub fn validate(&self) -> Result<(), Error> {
        match self {
            Policy::Adaptive(decision) => decision.validate(),
            Policy::Static | Policy::Forced(_) => Ok(()),
        }
    }
}

/// How many of the latest plan changes [`Orders::changed_at`] keeps: the
/// counts are for the whole run, the epochs for a window, so that what the
/// coordinator keeps stays bounded on a stream that never ends.
pub const CHANGES_KEPT: usize = 1024;

/// Counts of what the coordinator ordered.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Orders {
    /// Rounds concluded.
    pub rounds: u64,
    /// Rounds in which the coordinator rebalanced: some pair's proposal (or
    /// the forced change) applied. Workers' splits and merges of their own
    /// partitions are not counted here.
    pub rebalanced: u64,
    /// Partitions moved whole.
    pub moves: u64,
    /// Partitions split.
    pub splits: u64,
    /// Pairs of partitions merged.
    pub merges: u64,
    /// Holders added to shared partitions.
    pub shares: u64,
    /// Holders that left shared partitions.
    pub unshares: u64,
    /// The epochs from which non-empty updates held (when state moved):
    /// the most recent [`CHANGES_KEPT`] of them.
    pub changed_at: Vec<u64>,
}

/// The partitions an update's changes touched so far, and whether only
/// shares did. The workers carry out an update's changes on what they hold
/// at the round's end, so a partition whose copy a change sends on its way
/// cannot be moved, split, merged or given back by a later change of the
/// same update; shares of one partition by several holders combine.
#[derive(Default)]
struct Touched(HashMap<PartitionId, bool>);

impl Touched {
    /// Whether `change` may follow the changes added so far.
    fn admits(&self, change: &PlanChange) -> bool {
        let share = matches!(change, PlanChange::Share { .. });
        change
            .touched()
            .iter()
            .all(|id| self.0.get(id).is_none_or(|&only_shares| share && only_shares))
    }

    /// Adds `change` (true, to chain in a filter).
    fn add(&mut self, change: &PlanChange) -> bool {
        let share = matches!(change, PlanChange::Share { .. });
        for id in change.touched() {
            *self.0.entry(id).or_insert(share) &= share;
        }
        true
    }
}

/// The coordinator (on worker 0).
pub(crate) struct Coordinator {
    policy: Policy,
    /// The forced schedule's draws.
    rng: SmallRng,
    index: GlobalIndex,
    mint: IdMint,
    workers: usize,
    margin: f64,
    plan_lag: u64,
    last_round: Instant,
    pending_local: Vec<(usize, PlanChange)>,
    // The mean work per worker in the last round, sent with the update.
    mean_work: f64,
    forced: Option<PlanChange>,
    orders: Orders,
    /// Where decisions are logged, if anyone listens.
    logger: Option<Logger<SwarmEventBuilder>>,
}

impl Coordinator {
    /// A coordinator for `workers` workers under the initial plan `index`;
    /// updates take effect `plan_lag + 1` epochs after the round end that
    /// decided them; forced changes mint ids from `mint`.
    pub(crate) fn new(policy: Policy, index: GlobalIndex, mint: IdMint, workers: usize, plan_lag: u64) -> Self {
        let seed = match policy {
            Policy::Forced(seed) => seed,
            _ => 0,
        };
        Coordinator {
            rng: SmallRng::seed_from_u64(seed),
            policy,
            index,
            mint,
            workers,
            margin: 0.05,
            plan_lag,
            last_round: Instant::now(),
            pending_local: Vec::new(),
            mean_work: 0.0,
            forced: None,
            orders: Orders::default(),
            logger: None,
        }
    }

    /// Logs decisions to `logger` (see [`super::LOG_NAME`]).
    pub(crate) fn with_logger(self, logger: Option<Logger<SwarmEventBuilder>>) -> Self {
        Coordinator { logger, ..self }
    }

    /// What was ordered so far.
    pub(crate) fn orders(&self) -> &Orders {
        &self.orders
    }

    /// A round ended with these reports (one per worker): decides, and
    /// returns the reduction requests to send, by worker.
    pub(crate) fn round_end(&mut self, epoch: u64, mut reports: Vec<RoundReport>) -> Vec<(usize, ReductionAsk)> {
        reports.sort_by_key(|report| report.worker);
        if let Some(logger) = &self.logger {
            let mut loads = vec![WorkerLoad::default(); self.workers];
            for report in &reports {
                if let Some(load) = loads.get_mut(report.worker) {
                    *load = report.load;
                }
            }
            logger.log(SwarmEvent::Round { epoch, loads });
        }
        self.pending_local = reports
            .iter_mut()
            .flat_map(|report| report.local.drain(..).map(|change| (report.worker, change)))
            .collect();
        // By worker: a worker whose input has ended no longer reports.
        let mut loads = vec![WorkerLoad::default(); self.workers];
        for report in &reports {
            loads[report.worker] = report.load;
        }
        self.mean_work = loads.iter().map(|load| load.work).sum::<f64>() / self.workers.max(1) as f64;
        let elapsed = self.last_round.elapsed().as_secs_f64().max(1e-9);
        self.last_round = Instant::now();
        match &mut self.policy {
            Policy::Static => {
                self.pending_local.clear();
                Vec::new()
            }
            Policy::Forced(_) => {
                self.forced = random_change(&mut self.rng, &self.index, self.workers, &mut self.mint);
                Vec::new()
            }
            Policy::Adaptive(decision) => {
                let received = system_received(&loads);
                let costs: Vec<f64> = loads.iter().map(|load| normalized(load.work, received)).collect();
                let verdict = decision.decide(&RoundSummary {
                    throughput: received / elapsed,
                    costs: &costs,
                });
                if verdict.decision == Decision::DoNothing || costs.len() < 2 {
                    return Vec::new();
                }
                let mut order: Vec<usize> = (0..costs.len()).collect();
                order.sort_by(|&a, &b| costs[b].total_cmp(&costs[a]).then(a.cmp(&b)));
                // The i-th most loaded worker sheds toward the i-th least
                // loaded: disjoint pairs, so that many workers balance at once.
                // A pair closer than twice the margin is left alone: moving
                // state for noise costs more than it balances.
                let margin = self.margin;
                (0..order.len() / 2)
                    .map(|rank| (rank, order[rank], order[order.len() - 1 - rank]))
                    .filter(|&(_, high, low)| costs[high] > costs[low] * (1.0 + 2.0 * margin))
                    .map(|(rank, high, low)| {
                        let request = ReductionRequest {
                            low_cost: costs[low],
                            system_received: received,
                            margin,
                        };
                        (
                            high,
                            ReductionAsk {
                                rank,
                                request,
                                low_worker: low,
                            },
                        )
                    })
                    .collect()
            }
        }
    }

    /// Concludes the round that ended at epoch `time`: every pair's
    /// proposal (each changes only partitions the asking worker holds,
    /// toward its own partner), or the forced change, plus the
    /// workers' changes to their own partitions that touch none of its
    /// partitions (and that still own them: a worker reports from a plan
    /// that may lag the coordinator's). No change touches a partition an
    /// earlier one in the update touched, but shares after shares (see
    /// [`Touched`]).
    pub(crate) fn conclude(&mut self, time: u64, mut proposals: Vec<(usize, Vec<PlanChange>)>) -> PlanUpdate {
        proposals.sort_by_key(|(rank, _)| *rank);
        let mut changes: Vec<PlanChange> = match self.forced.take() {
            Some(change) => vec![change],
            None => proposals.into_iter().flat_map(|(_, changes)| changes).collect(),
        };
        let busy: Vec<PartitionId> = changes.iter().flat_map(PlanChange::touched).collect();
        // Keep only what applies, in order, to the coordinator's plan; the
        // workers apply the same list to theirs.
        let mut touched = Touched::default();
        changes.retain(|change| touched.admits(change) && self.index.apply(change).is_ok() && touched.add(change));
        if !changes.is_empty() {
            self.orders.rebalanced += 1;
        }
        // Then each worker's changes to its own partitions, in order (a part
        // of a split may be split again), if it still owns them.
        for (worker, change) in std::mem::take(&mut self.pending_local) {
            let owned = change
                .touched()
                .iter()
                .all(|id| !busy.contains(id) && self.index.info(*id).is_some_and(|info| info.owner == worker));
            if owned && touched.admits(&change) && self.index.apply(&change).is_ok() && touched.add(&change) {
                changes.push(change);
            }
        }
        for change in &changes {
            match change {
                PlanChange::Move { .. } => self.orders.moves += 1,
                PlanChange::Split { .. } => self.orders.splits += 1,
                PlanChange::Merge { .. } => self.orders.merges += 1,
                PlanChange::Share { .. } => self.orders.shares += 1,
                PlanChange::Unshare { .. } => self.orders.unshares += 1,
            }
        }
        self.orders.rounds += 1;
        let effective = time + self.plan_lag + 1;
        if let Some(logger) = &self.logger {
            for change in &changes {
                logger.log(SwarmEvent::Change {
                    effective,
                    change: change.clone(),
                });
            }
        }
        if !changes.is_empty() {
            keep_recent(&mut self.orders.changed_at, effective, CHANGES_KEPT);
        }
        PlanUpdate {
            effective,
            changes,
            mean_work: self.mean_work,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_update_touches_a_partition_once_but_for_shares_after_shares() {
        let share = |with| PlanChange::Share {
            id: 1,
            with,
            from: 0,
            weight: 1,
        };
        let mut touched = Touched::default();
        assert!(touched.admits(&share(2)) && touched.add(&share(2)));
        // Two holders' shares of one partition combine.
        assert!(touched.admits(&share(3)) && touched.add(&share(3)));
        // A copy on its way cannot be given back, moved or split.
        assert!(!touched.admits(&PlanChange::Unshare { id: 1, from: 2 }));
        assert!(!touched.admits(&PlanChange::Move { id: 1, to: 4 }));
        assert!(touched.admits(&PlanChange::Move { id: 5, to: 4 }) && touched.add(&PlanChange::Move { id: 5, to: 4 }));
        // Nor is a partition moved this update shared.
        let moved = PlanChange::Share {
            id: 5,
            with: 6,
            from: 4,
            weight: 1,
        };
        assert!(!touched.admits(&moved));
    }
}

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
use super::plan_history::PlanUpdate;
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ReductionAsk {
    /// The pair: 0 for the most loaded worker (asked toward the least
    /// loaded), 1 for the next (toward the next least loaded), ...
    pub rank: usize,
    /// The figures it needs.
    pub request: ReductionRequest,
    /// The worker to shed load toward.
    pub low_worker: usize,
    /// Its partitions that an update not yet in force already gives away:
    /// it proposes among the others.
    pub leaving: Vec<PartitionId>,
}

/// An asked worker's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Proposal {
    /// The pair's rank (see [`ReductionAsk::rank`]).
    pub rank: usize,
    /// The changes, to partitions the asked worker holds.
    pub changes: Vec<PlanChange>,
    /// The cost they hand to the pair's other worker, normalized as in the
    /// request, as the asked worker's statistics measure it.
    pub shed: f64,
}

/// Load that a concluded update moves between two workers from `effective`
/// on: until a round that began there has been measured, the workers'
/// reports do not show it, and the coordinator adds it to their costs.
#[derive(Debug, Clone)]
struct InFlight {
    effective: u64,
    from: usize,
    to: usize,
    /// In the units of [`WorkerLoad::work`].
    work: f64,
    partitions: Vec<PartitionId>,
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

    /// Whether `change` may follow the changes added so far and applies to
    /// the coordinator's plan `index`; if so it is applied and added, as
    /// the workers apply the same list to theirs.
    fn admit(&mut self, index: &mut GlobalIndex, change: &PlanChange) -> bool {
        self.admits(change) && index.apply(change).is_ok() && self.add(change)
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
    /// Epochs per round.
    round: u64,
    /// Epochs from a round end to the last epoch before its update holds.
    lead: u64,
    last_round: Instant,
    pending_local: Vec<(usize, PlanChange)>,
    /// The pairs asked at the last round end, by rank: (most loaded, least loaded).
    asked: Vec<(usize, usize)>,
    /// R(S) of the last round end.
    received: f64,
    /// Loads moving under updates concluded but not yet measured: at most
    /// `lead` epochs and a round's worth.
    in_flight: Vec<InFlight>,
    // The mean work per worker in the last round, sent with the update.
    mean_work: f64,
    forced: Option<PlanChange>,
    orders: Orders,
    /// Where decisions are logged, if anyone listens.
    logger: Option<Logger<SwarmEventBuilder>>,
}

impl Coordinator {
    /// A coordinator for `workers` workers under the initial plan `index`,
    /// with rounds of `round` epochs; updates take effect `lead + 1`
    /// epochs after the round end that decided them; forced changes mint
    /// ids from `mint`.
    pub(crate) fn new(
        policy: Policy,
        index: GlobalIndex,
        mint: IdMint,
        workers: usize,
        (round, lead): (u64, u64),
    ) -> Self {
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
            round,
            lead,
            last_round: Instant::now(),
            pending_local: Vec::new(),
            asked: Vec::new(),
            received: 0.0,
            in_flight: Vec::new(),
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
        self.asked.clear();
        // What held from the round's first epoch on is in its reports.
        let round_start = (epoch + 1).saturating_sub(self.round);
        self.in_flight.retain(|flight| flight.effective > round_start);
        self.log_round(epoch, &reports);
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
                self.received = received;
                let costs = planned_costs(&loads, &self.in_flight, received);
                let verdict = decision.decide(&RoundSummary {
                    throughput: received / elapsed,
                    costs: &costs,
                });
                if verdict.decision == Decision::DoNothing || costs.len() < 2 {
                    return Vec::new();
                }
                self.ask_pairs(&costs, received)
            }
        }
    }

    /// Logs the round's loads, by worker (a worker that did not report
    /// shows none), for those who follow the balance round by round.
    fn log_round(&self, epoch: u64, reports: &[RoundReport]) {
        if let Some(logger) = &self.logger {
            let mut loads = vec![WorkerLoad::default(); self.workers];
            for report in reports {
                if let Some(load) = loads.get_mut(report.worker) {
                    *load = report.load;
                }
            }
            logger.log(SwarmEvent::Round { epoch, loads });
        }
    }

    /// The pairs to rebalance, by the workers' planned `costs`, and the
    /// reduction requests to send their most loaded workers.
    fn ask_pairs(&mut self, costs: &[f64], received: f64) -> Vec<(usize, ReductionAsk)> {
        let mut order: Vec<usize> = (0..costs.len()).collect();
        order.sort_by(|&a, &b| costs[b].total_cmp(&costs[a]).then(a.cmp(&b)));
        // The i-th most loaded worker sheds toward the i-th least
        // loaded: disjoint pairs, so that many workers balance at once.
        // A pair closer than twice the margin is left alone: moving
        // state for noise costs more than it balances.
        let margin = self.margin;
        self.asked = (0..order.len() / 2)
            .map(|rank| (order[rank], order[order.len() - 1 - rank]))
            .filter(|&(high, low)| costs[high] > costs[low] * (1.0 + 2.0 * margin))
            .collect();
        let in_flight = &self.in_flight;
        self.asked
            .iter()
            .enumerate()
            .map(|(rank, &(high, low))| {
                let ask = ReductionAsk {
                    rank,
                    request: ReductionRequest {
                        low_cost: costs[low],
                        system_received: received,
                        margin,
                    },
                    low_worker: low,
                    leaving: in_flight
                        .iter()
                        .filter(|flight| flight.from == high)
                        .flat_map(|flight| flight.partitions.iter().copied())
                        .collect(),
                };
                (high, ask)
            })
            .collect()
    }

    /// Concludes the round that ended at epoch `time`: every pair's
    /// proposal (each changes only partitions the asking worker holds,
    /// toward its own partner), or the forced change, plus the
    /// workers' changes to their own partitions that touch none of its
    /// partitions (and that still own them: a worker reports from a plan
    /// that may lag the coordinator's). No change touches a partition an
    /// earlier one in the update touched, but shares after shares (see
    /// [`Touched`]).
    pub(crate) fn conclude(&mut self, time: u64, mut proposals: Vec<Proposal>) -> PlanUpdate {
        proposals.sort_by_key(|proposal| proposal.rank);
        let effective = time + self.lead + 1;
        let forced = self.forced.take();
        let busy: Vec<PartitionId> = forced
            .iter()
            .chain(proposals.iter().flat_map(|proposal| &proposal.changes))
            .flat_map(PlanChange::touched)
            .collect();
        // Keep only what applies, in order, to the coordinator's plan; the
        // workers apply the same list to theirs.
        let mut touched = Touched::default();
        let mut changes: Vec<PlanChange> = Vec::new();
        if let Some(change) = forced
            && touched.admit(&mut self.index, &change)
        {
            changes.push(change);
        }
        for proposal in proposals {
            changes.extend(self.admit_proposal(proposal, &mut touched, effective));
        }
        if !changes.is_empty() {
            self.orders.rebalanced += 1;
        }
        changes.extend(self.admit_local(&mut touched, &busy));
        self.record(effective, &changes);
        PlanUpdate {
            effective,
            changes,
            mean_work: self.mean_work,
        }
    }

    /// The changes of a pair's proposal that apply, the load they move
    /// noted as in flight from `effective` on, so that the next rounds'
    /// decisions count it where it goes.
    fn admit_proposal(&mut self, proposal: Proposal, touched: &mut Touched, effective: u64) -> Vec<PlanChange> {
        let offered = proposal.changes.len();
        let applied: Vec<PlanChange> = proposal
            .changes
            .into_iter()
            .filter(|change| touched.admit(&mut self.index, change))
            .collect();
        if let (Some(&(from, to)), false) = (self.asked.get(proposal.rank), applied.is_empty()) {
            // A proposal cut short hands over about its share of the figure.
            let work = proposal.shed * self.received * applied.len() as f64 / offered as f64;
            let partitions = applied.iter().flat_map(PlanChange::touched).collect();
            self.in_flight.push(InFlight {
                effective,
                from,
                to,
                work,
                partitions,
            });
        }
        applied
    }

    /// Each worker's changes to its own partitions that apply, in
    /// order (a part of a split may be split again), if it still owns them
    /// and no pair's proposal nor the forced change touches them (`busy`).
    fn admit_local(&mut self, touched: &mut Touched, busy: &[PartitionId]) -> Vec<PlanChange> {
        let mut changes = Vec::new();
        for (worker, change) in std::mem::take(&mut self.pending_local) {
            let owned = change
                .touched()
                .iter()
                .all(|id| !busy.contains(id) && self.index.info(*id).is_some_and(|info| info.owner == worker));
            if owned && touched.admit(&mut self.index, &change) {
                changes.push(change);
            }
        }
        changes
    }

    /// Counts the round and the update's `changes` among the orders, and
    /// logs them: what a run reports of the plan's evolution.
    fn record(&mut self, effective: u64, changes: &[PlanChange]) {
        for change in changes {
            match change {
                PlanChange::Move { .. } => self.orders.moves += 1,
                PlanChange::Split { .. } => self.orders.splits += 1,
                PlanChange::Merge { .. } => self.orders.merges += 1,
                PlanChange::Share { .. } => self.orders.shares += 1,
                PlanChange::Unshare { .. } => self.orders.unshares += 1,
            }
        }
        self.orders.rounds += 1;
        if let Some(logger) = &self.logger {
            for change in changes {
                logger.log(SwarmEvent::Change {
                    effective,
                    change: change.clone(),
                });
            }
        }
        if !changes.is_empty() {
            keep_recent(&mut self.orders.changed_at, effective, CHANGES_KEPT);
        }
    }
}

/// The workers' costs with the plan as it will be: the load that concluded
/// updates are moving (`in_flight`), which this round's reports do not show
/// yet, counted where it goes. Asking on the reports alone would shed (or
/// send) the same load twice.
fn planned_costs(loads: &[WorkerLoad], in_flight: &[InFlight], received: f64) -> Vec<f64> {
    let mut work: Vec<f64> = loads.iter().map(|load| load.work).collect();
    for flight in in_flight {
        work[flight.from] = (work[flight.from] - flight.work).max(0.0);
        work[flight.to] += flight.work;
    }
    work.iter().map(|&work| normalized(work, received)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::swarm::geometry::{Grid, Rect};

    fn report(worker: usize, work: f64) -> RoundReport {
        RoundReport {
            worker,
            load: WorkerLoad { work, received: 100.0 },
            local: Vec::new(),
        }
    }

    #[test]
    fn load_an_update_is_moving_is_counted_where_it_goes_until_measured() {
        let grid = Grid::new(Rect::new(0.0, 0.0, 4.0, 4.0).unwrap(), 4, 4).unwrap();
        let (index, base) = GlobalIndex::blocks(grid, 2, 2).unwrap();
        let mut coordinator = Coordinator::new(
            Policy::threshold(1.2),
            index.clone(),
            IdMint::new(base, 2, 3),
            2,
            (2, 2),
        );
        // Round 0 (epochs 0-1): worker 0 does 9x worker 1's work and is asked.
        let asks = coordinator.round_end(1, vec![report(0, 900.0), report(1, 100.0)]);
        assert_eq!(asks.len(), 1);
        let (asked, ask) = &asks[0];
        assert_eq!((*asked, ask.low_worker), (0, 1));
        assert!(ask.leaving.is_empty());
        let moving = *index.partitions().iter().find(|(_, info)| info.owner == 0).unwrap().0;
        // It hands over 400 of its 900 (normalized by the 200 objects received).
        let update = coordinator.conclude(
            1,
            vec![Proposal {
                rank: 0,
                changes: vec![PlanChange::Move { id: moving, to: 1 }],
                shed: 400.0 / 200.0,
            }],
        );
        assert_eq!(update.effective, 4);
        // Round 1 (epochs 2-3) still ran on the old plan and shows the same
        // loads; with the move counted the workers are even: nobody is asked.
        assert!(coordinator
            .round_end(3, vec![report(0, 900.0), report(1, 100.0)])
            .is_empty());
        // Round 2 (epochs 4-5) ran on the new plan: its reports are the truth.
        // Had the move not helped, worker 0 is asked again, among the rest.
        let asks = coordinator.round_end(5, vec![report(0, 900.0), report(1, 100.0)]);
        assert_eq!(asks.len(), 1);
        assert!(asks[0].1.leaving.is_empty(), "the move is in force and measured");
    }

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

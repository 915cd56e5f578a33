//! The coordinator's side of load balancing: from one message of every
//! worker per round (its two numbers, its own splits and merges, and, when
//! it is loaded, what it offers to shed), decide, pair the loaded workers
//! with the least loaded, and conclude the round's plan update: one
//! message each way per round.

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

use serde::{Deserialize, Serialize};
use timely::logging_core::Logger;

use crate::common::{keep_recent, Error};

use super::cost::{normalized, system_received, WorkerLoad};
use super::decision::{Decision, DecisionPolicy, FiveStage, RoundSummary, Threshold};
use super::events::{SwarmEvent, SwarmEventBuilder};
use super::geometry::Cell;
#[cfg(test)]
use super::ids::IdMint;
use super::ids::PartitionId;
#[cfg(test)]
use super::index::SHARE_WEIGHT;
use super::index::{GlobalIndex, PlanChange};
use super::opening::{plan_opening, OPENING_TOLERANCE};
use super::plan_history::PlanUpdate;
use super::spread::plan_spread;

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
    /// What it offers to shed, if it is loaded: one reduction for each of
    /// [`OFFER_SHARES`] of its cost (fewer where two are the same).
    pub offers: Vec<Offer>,
    /// With its offers: its costliest partition that can only be shared
    /// (one cell, or shared already), which the coordinator may spread
    /// over several workers at once ([`plan_spread`]).
    pub hot: Option<Hot>,
}

/// A partition a loaded worker could hand pieces of to several workers.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct Hot {
    /// The partition.
    pub id: PartitionId,
    /// This worker's work in it (in the units of [`WorkerLoad::work`]).
    pub work: f64,
}

/// A reduction a loaded worker offers toward a partner the coordinator
/// picks ([`PARTNER`] in its changes until then).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Offer {
    /// The changes, to partitions the worker holds.
    pub changes: Vec<PlanChange>,
    /// The work they hand over (in the units of [`WorkerLoad::work`]), as
    /// the worker's statistics measure it.
    pub work: f64,
}

/// The shares of its cost a loaded worker offers to hand over, one offer
/// each: the coordinator takes the one that best closes the gap to the
/// partner it pairs the worker with. A pair a tenth apart asks for about
/// a twentieth of the higher cost, one 3× apart for a third.
pub(crate) const OFFER_SHARES: [f64; 4] = [0.05, 0.1, 0.2, 0.35];

/// The partner in an offer's changes until the coordinator names one.
pub(crate) const PARTNER: usize = usize::MAX;

/// A pair closer than twice this share of the lower cost is left alone, and
/// a reduction must narrow a pair's gap by this share of the higher cost:
/// moving state for noise costs more than it balances.
pub(crate) const MARGIN: f64 = 0.05;

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

    /// Whether the policy's settings can be used: `swarm` refuses one that
    /// cannot (a threshold that is NaN or below 1).
    pub fn validate(&self) -> Result<(), Error> {
        match self {
            Policy::Adaptive(decision) => decision.validate(),
            Policy::Static => Ok(()),
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
    /// Rounds in which the coordinator rebalanced: some pair's offer (or
    /// a change of the control stream) applied. Workers' splits and merges of their own
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
    /// Changes a control stream ordered that did not apply to the plan as
    /// it then was (a partition that no longer exists, a worker out of
    /// range, a move to a holder), skipped
    /// ([`Swarm::swarm_controlled`](super::Swarm::swarm_controlled)).
    #[serde(default)]
    pub refused: u64,
}

impl Orders {
    /// Counts `changes`, holding from `effective`.
    pub(crate) fn count(&mut self, effective: u64, changes: &[PlanChange]) {
        for change in changes {
            match change {
                PlanChange::Move { .. } => self.moves += 1,
                PlanChange::Split { .. } => self.splits += 1,
                PlanChange::Merge { .. } => self.merges += 1,
                PlanChange::Share { .. } => self.shares += 1,
                PlanChange::Unshare { .. } => self.unshares += 1,
            }
        }
        if !changes.is_empty() {
            keep_recent(&mut self.changed_at, effective, CHANGES_KEPT);
        }
    }
}

/// Logs `changes`, holding from `effective`, to `logger` if anyone listens.
pub(crate) fn log_changes(logger: Option<&Logger<SwarmEventBuilder>>, effective: u64, changes: &[PlanChange]) {
    if let Some(logger) = logger {
        for change in changes {
            logger.log(SwarmEvent::Change {
                effective,
                change: change.clone(),
            });
        }
    }
}

/// The partitions an update's changes touched so far, and whether only
/// shares did. The workers carry out an update's changes on what they hold
/// at the round's end, so a partition whose copy a change sends on its way
/// cannot be moved, split, merged or given back by a later change of the
/// same update; shares of one partition by several holders combine.
#[derive(Default)]
pub(crate) struct Touched(HashMap<PartitionId, bool>);

impl Touched {
    /// Whether `change` may follow the changes added so far.
    pub(crate) fn admits(&self, change: &PlanChange) -> bool {
        let share = matches!(change, PlanChange::Share { .. });
        change
            .touched()
            .iter()
            .all(|id| self.0.get(id).is_none_or(|&only_shares| share && only_shares))
    }

    /// Adds `change` (true, to chain in a filter).
    pub(crate) fn add(&mut self, change: &PlanChange) -> bool {
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
    index: GlobalIndex,
    workers: usize,
    /// Epochs per round.
    round: u64,
    /// Epochs from a round end to the last epoch before its update holds.
    lead: u64,
    last_round: Instant,
    /// Loads moving under updates concluded but not yet measured: at most
    /// `lead` epochs and a round's worth.
    in_flight: Vec<InFlight>,
    orders: Orders,
    /// The mean work of the last update sent.
    sent_mean: f64,
    /// Where decisions are logged, if anyone listens.
    logger: Option<Logger<SwarmEventBuilder>>,
}

impl Coordinator {
    /// A coordinator for `workers` workers under the initial plan `index`,
    /// with rounds of `round` epochs; updates take effect `lead + 1`
    /// epochs after the round end that decided them.
    pub(crate) fn new(policy: Policy, index: GlobalIndex, workers: usize, (round, lead): (u64, u64)) -> Self {
        Coordinator {
            policy,
            index,
            workers,
            round,
            lead,
            last_round: Instant::now(),
            in_flight: Vec::new(),
            orders: Orders::default(),
            sent_mean: 0.0,
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

    /// The opening: the changes that balance the initial plan for the
    /// expected `work` of epoch 0's cells ([`plan_opening`]), applied to
    /// the coordinator's plan and recorded as holding from epoch 0.
    pub(crate) fn open(&mut self, work: &BTreeMap<Cell, f64>) -> Vec<PlanChange> {
        let changes = plan_opening(&self.index, work, self.workers, OPENING_TOLERANCE);
        for change in &changes {
            self.index
                .apply(change)
                .expect("the opening applies to the initial plan");
        }
        self.count(0, &changes);
        changes
    }

    /// Whether `update` must go to the workers: it changes the plan, or
    /// the mean work they compare themselves with has moved by the margin
    /// since the last one sent. A round that changes nothing sends nothing.
    pub(crate) fn worth_sending(&mut self, update: &PlanUpdate) -> bool {
        let moved = (update.mean_work - self.sent_mean).abs() > MARGIN * self.sent_mean;
        let send = !update.changes.is_empty() || moved;
        if send {
            self.sent_mean = update.mean_work;
        }
        send
    }

    /// The round that ended at `epoch`, from its reports (one per worker
    /// whose input has not ended): decides, pairs each loaded worker with a
    /// least loaded one and takes what the loaded one offered, and returns
    /// the plan update, which holds from `epoch + lead + 1`.
    pub(crate) fn round(&mut self, epoch: u64, mut reports: Vec<RoundReport>) -> PlanUpdate {
        reports.sort_by_key(|report| report.worker);
        // What held from the round's first epoch on is in its reports.
        let round_start = (epoch + 1).saturating_sub(self.round);
        self.in_flight.retain(|flight| flight.effective > round_start);
        self.log_round(epoch, &reports);
        let mut loads = vec![WorkerLoad::default(); self.workers];
        let mut offers: Vec<(Vec<Offer>, Option<Hot>)> = vec![(Vec::new(), None); self.workers];
        let mut local = Vec::new();
        for report in reports {
            loads[report.worker] = report.load;
            offers[report.worker] = (report.offers, report.hot);
            local.extend(report.local.into_iter().map(|change| (report.worker, change)));
        }
        let mean_work = loads.iter().map(|load| load.work).sum::<f64>() / self.workers.max(1) as f64;
        let effective = epoch + self.lead + 1;
        let mut update = PlanUpdate {
            effective,
            mean_work,
            ..PlanUpdate::default()
        };
        let mut touched = Touched::default();
        match &mut self.policy {
            // Never built for a static plan, whose workers plan nothing of their own.
            Policy::Static => {}
            Policy::Adaptive(_) => {
                let received = system_received(&loads);
                let costs = planned_costs(&loads, &self.in_flight, received);
                update.changes = self.take_offers(costs, received, offers, &mut touched, effective);
            }
        }
        if !update.changes.is_empty() {
            self.orders.rebalanced += 1;
        }
        let busy: Vec<PartitionId> = update.changes.iter().flat_map(PlanChange::touched).collect();
        update.changes.extend(self.admit_local(local, &mut touched, &busy));
        self.record(effective, &update.changes);
        update
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

    /// If the decision policy rebalances on the workers' planned `costs`:
    /// each loaded worker, the most loaded first, sheds toward the least
    /// loaded worker not yet paired, by the offer that best narrows their
    /// gap, with the partner named, if it narrows it by the margin (else by
    /// cuts that stay, if it offered them, so that a later round can move
    /// the parts); or, when that partner could not take its excess without
    /// rising above the mean, spreads its hottest shareable partition over
    /// as many of the least loaded as the excess needs ([`plan_spread`]).
    /// The changes that apply, in order; the load they move noted as in
    /// flight from `effective` on, so that the next rounds' decisions count
    /// it where it goes.
    fn take_offers(
        &mut self,
        mut costs: Vec<f64>,
        received: f64,
        mut reports: Vec<(Vec<Offer>, Option<Hot>)>,
        touched: &mut Touched,
        effective: u64,
    ) -> Vec<PlanChange> {
        let Policy::Adaptive(decision) = &mut self.policy else {
            return Vec::new();
        };
        let elapsed = self.last_round.elapsed().as_secs_f64().max(1e-9);
        self.last_round = Instant::now();
        let verdict = decision.decide(&RoundSummary {
            throughput: received / elapsed,
            costs: &costs,
        });
        if verdict.decision == Decision::DoNothing || costs.len() < 2 {
            return Vec::new();
        }
        let mut order: Vec<usize> = (0..costs.len()).collect();
        order.sort_by(|&a, &b| costs[b].total_cmp(&costs[a]).then(a.cmp(&b)));
        let mut free = vec![true; costs.len()];
        let mut changes = Vec::new();
        for &high in &order[..order.len() / 2] {
            let Some(&low) = order.iter().rev().find(|&&w| free[w] && w != high) else {
                break;
            };
            if !free[high] || costs[high] <= costs[low] * (1.0 + 2.0 * MARGIN) {
                continue;
            }
            let (offers, hot) = std::mem::take(&mut reports[high]);
            let spread = hot.and_then(|hot| self.spread(high, hot, &costs, &free, received));
            let proposed = spread.unwrap_or_else(|| self.pair(high, low, offers, (costs[high], costs[low]), received));
            for (change, to, work) in proposed {
                if !touched.admit(&mut self.index, &change) {
                    continue;
                }
                free[to] = false;
                costs[high] -= normalized(work, received);
                costs[to] += normalized(work, received);
                self.in_flight.push(InFlight {
                    effective,
                    from: high,
                    to,
                    work,
                    partitions: change.touched(),
                });
                changes.push(change);
            }
        }
        changes
    }

    /// The partitions worker `high` still holds and no concluded update is
    /// moving: those its offers and spreads may name.
    fn held_by(&self, high: usize) -> impl Fn(&PartitionId) -> bool + '_ {
        let leaving: Vec<PartitionId> = self
            .in_flight
            .iter()
            .filter(|flight| flight.from == high)
            .flat_map(|flight| flight.partitions.iter().copied())
            .collect();
        move |id: &PartitionId| {
            !leaving.contains(id) && (self.index.info(*id).is_none() || self.index.holders(*id).any(|h| h == high))
        }
    }

    /// The offer of `high` that best narrows its gap with `low` (by their
    /// `costs`; if by the margin, else cuts that stay), whose partitions it
    /// still holds, with `low` named: each change with the worker it hands
    /// work to and its part of the work.
    fn pair(
        &self,
        high: usize,
        low: usize,
        mut offered: Vec<Offer>,
        costs: (f64, f64),
        received: f64,
    ) -> Vec<(PlanChange, usize, f64)> {
        let gap = costs.0 - costs.1;
        let narrows = |offer: &Offer| gap - (gap - 2.0 * normalized(offer.work, received)).abs();
        // The offers that narrow the gap by the margin, the best first,
        // then cuts that stay (which shed nothing yet).
        offered.retain(|offer| offer.work == 0.0 || narrows(offer) > MARGIN * costs.0);
        offered.sort_by(|a, b| narrows(b).total_cmp(&narrows(a)));
        offered.sort_by_key(|offer| offer.work == 0.0);
        // The first whose partitions the worker still holds and no update
        // is moving (a part an earlier change of the offer makes is not in
        // the plan yet), whole.
        let held = self.held_by(high);
        let Some(offer) = offered
            .into_iter()
            .find(|offer| offer.changes.iter().all(|change| change.touched().iter().all(&held)))
        else {
            return Vec::new();
        };
        // An offer cut short hands over about its share of the figure.
        let work = offer.work / offer.changes.len() as f64;
        let named = offer.changes.into_iter().map(|change| change.with_worker(PARTNER, low));
        named.map(|change| (change, low, work)).collect()
    }

    /// Pieces of `high`'s `hot` partition for the least loaded workers
    /// still free, if one pair could not take its excess and no concluded
    /// update is changing the partition: the shares, and the work each
    /// hands over.
    fn spread(
        &self,
        high: usize,
        hot: Hot,
        costs: &[f64],
        free: &[bool],
        received: f64,
    ) -> Option<Vec<(PlanChange, usize, f64)>> {
        let moving = self.in_flight.iter().any(|flight| flight.partitions.contains(&hot.id));
        let weight = self.index.weight_of(hot.id, high);
        if moving || weight < 2 || !self.held_by(high)(&hot.id) {
            return None;
        }
        let part = normalized(hot.work, received);
        let pieces = plan_spread(costs, high, part, free, MARGIN);
        let mut left = weight;
        let mut shares = Vec::new();
        for (with, piece) in pieces {
            let given = ((piece / part) * f64::from(weight)).floor() as u32;
            if given == 0 || given >= left {
                continue;
            }
            left -= given;
            let share = PlanChange::Share {
                id: hot.id,
                with,
                from: high,
                weight: given,
            };
            shares.push((share, with, hot.work * f64::from(given) / f64::from(weight)));
        }
        // One piece: a pair's offer does as well.
        (shares.len() > 1).then_some(shares)
    }

    /// Each worker's changes to its own partitions that apply, in
    /// order (a part of a split may be split again), if it still owns them
    /// and no pair's offer nor the forced change touches them (`busy`).
    fn admit_local(
        &mut self,
        local: Vec<(usize, PlanChange)>,
        touched: &mut Touched,
        busy: &[PartitionId],
    ) -> Vec<PlanChange> {
        let mut changes = Vec::new();
        for (worker, change) in local {
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
        self.orders.rounds += 1;
        self.count(effective, changes);
    }

    /// Counts `changes`, holding from `effective`, among the orders, and logs them.
    fn count(&mut self, effective: u64, changes: &[PlanChange]) {
        self.orders.count(effective, changes);
        log_changes(self.logger.as_ref(), effective, changes);
    }
}

/// The workers' costs with the plan as it will be: the load that concluded
/// updates are moving (`in_flight`), which this round's reports do not show
/// yet, counted where it goes. Taking offers on the reports alone would
/// shed (or send) the same load twice.
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
    use crate::swarm::index::{Axis, SplitLine};

    /// A coordinator (rounds of 2 epochs, updates 2 epochs ahead) over `k`
    /// blocks per worker of a `cells` × `cells` grid, and its initial plan.
    fn coordinator(cells: u32, workers: usize, k: usize) -> (Coordinator, GlobalIndex, PartitionId) {
        let side = f64::from(cells);
        let grid = Grid::new(Rect::new(0.0, 0.0, side, side).unwrap(), cells, cells).unwrap();
        let (index, base) = GlobalIndex::blocks(grid, workers, k).unwrap();
        let coordinator = Coordinator::new(Policy::threshold(1.2), index.clone(), workers, (2, 2));
        (coordinator, index, base)
    }

    fn report(worker: usize, work: f64) -> RoundReport {
        RoundReport {
            worker,
            load: WorkerLoad { work, received: 100.0 },
            local: Vec::new(),
            offers: Vec::new(),
            hot: None,
        }
    }

    #[test]
    fn an_offer_goes_to_the_least_loaded_and_its_load_counts_there_until_measured() {
        let (mut coordinator, index, _) = coordinator(4, 3, 2);
        let mut worker_0 = index
            .partitions()
            .iter()
            .filter(|(_, info)| info.owner == 0)
            .map(|(&id, _)| id);
        let (moving, other) = (worker_0.next().unwrap(), worker_0.next().unwrap());
        // Worker 0 does 9x worker 2's work and offers to hand 400 of its 900
        // to a partner it does not know.
        let loads = |offered: Option<PartitionId>| {
            let mut reports = vec![report(0, 900.0), report(1, 500.0), report(2, 100.0)];
            // Among offers that close the gap less well.
            reports[0].offers = offered
                .into_iter()
                .flat_map(|id| {
                    let offer = |work| Offer {
                        changes: vec![PlanChange::Move { id, to: PARTNER }],
                        work,
                    };
                    [offer(40.0), offer(400.0), offer(800.0)]
                })
                .collect();
            reports
        };
        // Round 0 (epochs 0-1): the coordinator names the least loaded.
        let update = coordinator.round(1, loads(Some(moving)));
        assert_eq!(update.effective, 4);
        assert_eq!(update.changes, vec![PlanChange::Move { id: moving, to: 2 }]);
        assert_eq!(update.mean_work, 500.0);
        // Round 1 (epochs 2-3) still ran on the old plan and shows the same
        // loads; with the move counted the workers are even: a new offer of
        // the same partition is not taken.
        assert!(coordinator.round(3, loads(Some(other))).changes.is_empty());
        // Round 2 (epochs 4-5) ran on the new plan: its reports are the truth.
        // Had the move not helped, worker 0's offer is taken again, but not
        // of a partition it no longer holds.
        assert!(coordinator.round(5, loads(Some(moving))).changes.is_empty());
        let update = coordinator.round(7, loads(Some(other)));
        assert_eq!(update.changes, vec![PlanChange::Move { id: other, to: 2 }]);
        // No offer, no change, however loaded.
        assert!(coordinator.round(11, loads(None)).changes.is_empty());
    }

    #[test]
    fn cuts_that_stay_are_taken_whole_when_no_offer_narrows_the_gap() {
        let (mut coordinator, index, base) = coordinator(8, 2, 1);
        let (&hot, info) = index.partitions().iter().find(|(_, info)| info.owner == 0).unwrap();
        assert!(info.rect.rows() >= 4 && info.rect.cols() >= 4, "{info:?}");
        // Worker 0 cuts its partition toward a hot corner in two steps, the
        // second through a part the first makes, both parts staying.
        let mut mint = IdMint::new(base, 0, 3);
        let (a, b, c, d) = (mint.mint(), mint.mint(), mint.mint(), mint.mint());
        let cut = |id, axis, first, second| PlanChange::Split {
            id,
            line: SplitLine { axis, after: 1 },
            first: (first, 0),
            second: (second, 0),
        };
        let cuts = vec![cut(hot, Axis::Rows, a, b), cut(a, Axis::Columns, c, d)];
        let mut reports = vec![report(0, 900.0), report(1, 100.0)];
        reports[0].offers = vec![Offer {
            changes: cuts.clone(),
            work: 0.0,
        }];
        assert_eq!(coordinator.round(1, reports).changes, cuts);
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

    #[test]
    fn a_round_that_changes_nothing_sends_nothing() {
        let (mut coordinator, index, _) = coordinator(8, 2, 1);
        let id = *index.partitions().keys().next().unwrap();
        let update = |mean_work, changes| PlanUpdate {
            effective: 3,
            changes,
            mean_work,
        };
        // The first mean is news; one within the margin of it is not.
        assert!(coordinator.worth_sending(&update(100.0, vec![])));
        assert!(!coordinator.worth_sending(&update(104.0, vec![])));
        assert!(!coordinator.worth_sending(&update(96.0, vec![])));
        assert!(coordinator.worth_sending(&update(106.0, vec![])));
        // A change always goes.
        assert!(coordinator.worth_sending(&update(106.0, vec![PlanChange::Move { id, to: 1 }])));
    }

    #[test]
    fn a_hot_cell_beyond_what_one_partner_can_take_is_spread_over_several() {
        let (mut coordinator, index, _) = coordinator(8, 6, 4);
        let (&hot, _) = index.partitions().iter().find(|(_, info)| info.owner == 0).unwrap();
        // Worker 0 does 3 times the mean (1000 of 2000 in all), 800 of it in
        // a partition it can only share; its pair's offer sheds 100.
        let mut reports: Vec<RoundReport> = (0..6).map(|w| report(w, if w == 0 { 1000.0 } else { 200.0 })).collect();
        reports[0].offers = vec![Offer {
            changes: vec![PlanChange::Move { id: hot, to: PARTNER }],
            work: 100.0,
        }];
        reports[0].hot = Some(Hot { id: hot, work: 800.0 });
        let changes = coordinator.round(1, reports).changes;
        let partners: Vec<usize> = changes
            .iter()
            .map(|change| match *change {
                PlanChange::Share { id, with, from: 0, .. } if id == hot => with,
                ref other => panic!("not a share of the hot partition: {other:?}"),
            })
            .collect();
        // Each partner filled to the mean and the margin (350 of 333.3): 150
        // each for four, the 50 left of worker 0's excess to the fifth.
        assert_eq!(partners, vec![1, 2, 3, 4, 5], "{changes:?}");
        let weights: Vec<u32> = changes
            .iter()
            .map(|change| match *change {
                PlanChange::Share { weight, .. } => weight,
                _ => unreachable!(),
            })
            .collect();
        let piece = |work: f64| (work / 800.0 * f64::from(SHARE_WEIGHT)).floor() as u32;
        assert!(weights
            .iter()
            .zip([150.0, 150.0, 150.0, 150.0, 50.0])
            .all(|(&w, work)| w.abs_diff(piece(work)) <= 1));
        // Worker 0 keeps a piece as large as any it gives.
        assert!(coordinator.index.weight_of(hot, 0) >= piece(150.0), "{weights:?}");
    }
}

//! A worker's partitions: their application state and statistics, how
//! records update them, and how plan changes split, merge and move them.

use std::collections::{HashMap, HashSet};
use std::hash::BuildHasherDefault;

use crate::common::hash::FingerprintHasher;

use serde::{Deserialize, Serialize};

use crate::common::Error;

use super::app::PartitionState;
use super::cost::{CostModel, WorkerLoad};
use super::dispatch::Dispatched;
use super::geometry::{Cell, CellRect, OutOfBounds, Rect};
use super::granularity::{best_split, cheap_merge, smoothed};
use super::ids::{IdMint, PartitionId};
use super::index::{GlobalIndex, PlanChange, SplitLine};
use super::merge::plan_merges;
use super::plan_history::PlanUpdate;
use super::query_store::query_cells_of;
use super::rebalance::{plan_reduction, Candidate, Reduction, ReductionRequest};
use super::stats::PartitionStats;

/// One partition held by a worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Partition<S> {
    /// Its cells.
    pub rect: CellRect,
    /// Its statistics.
    pub stats: PartitionStats,
    /// Its application state.
    pub state: S,
    /// The round it last changed: a split or merge made it, or its holders
    /// or their weights changed.
    pub born: u64,
}

impl<S> Partition<S> {
    /// A partition made (by a split or merge) at round `born`.
    fn new(rect: CellRect, stats: PartitionStats, state: S, born: u64) -> Self {
        Partition {
            rect,
            stats,
            state,
            born,
        }
    }
}

/// The partitions a worker holds, by id.
pub(crate) type Partitions<S> = HashMap<PartitionId, Partition<S>, BuildHasherDefault<FingerprintHasher>>;

/// A partition on its way to another worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct PartitionPacket<S> {
    /// Its id.
    pub id: PartitionId,
    /// Everything it holds.
    pub partition: Partition<S>,
    /// What the receiver does with it.
    pub kind: PacketKind,
}

/// Why a partition travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum PacketKind {
    /// It moved (whole, or a part of a split or merge): its new owner holds it.
    Moved,
    /// A copy for a new holder of a shared partition.
    Shared,
    /// A holder left a shared partition: the owner merges its state.
    Returned,
}

/// The partitions one worker holds, with its copy of the plan.
#[derive(Debug, Clone)]
pub(crate) struct Store<S> {
    me: usize,
    index: GlobalIndex,
    // Looked up once per record: ids are small integers, no SipHash needed.
    partitions: Partitions<S>,
    mint: IdMint,
}

impl<S: PartitionState> Store<S> {
    /// Worker `me`'s empty partitions under the initial plan `index`; ids it
    /// mints come from `mint`.
    pub(crate) fn new(me: usize, index: GlobalIndex, mint: IdMint) -> Self {
        Store {
            me,
            partitions: Self::empty(me, &index),
            index,
            mint,
        }
    }

    /// Empty partitions for every one `index` gives worker `me` a share of.
    fn empty(me: usize, index: &GlobalIndex) -> Partitions<S> {
        index
            .partitions()
            .iter()
            .filter(|&(&id, _)| index.holders(id).any(|holder| holder == me))
            .map(|(&id, info)| {
                let stats = PartitionStats::new(info.rect.rows(), info.rect.cols());
                (id, Partition::new(info.rect, stats, S::default(), 0))
            })
            .collect()
    }

    /// Applies the opening's `changes` to the initial plan, before anything
    /// is held: the partitions are made again, empty, as the plan now deals them.
    pub(crate) fn open(&mut self, changes: &[PlanChange]) -> Result<(), Error> {
        for change in changes {
            self.index.apply(change)?;
        }
        self.partitions = Self::empty(self.me, &self.index);
        Ok(())
    }

    /// The worker holding the partitions.
    pub(crate) fn me(&self) -> usize {
        self.me
    }

    /// The partitions held.
    pub(crate) fn partitions(&self) -> &Partitions<S> {
        &self.partitions
    }

    /// Applies one record routed to partition `id` in round `round`: queries
    /// are registered or removed, points evaluated (their results go to
    /// `emit`). Returns the point–query checks made.
    pub(crate) fn apply(
        &mut self,
        id: PartitionId,
        record: Dispatched<S::Point, S::Query>,
        round: u64,
        emit: &mut dyn FnMut(S::Output),
    ) -> u64 {
        let me = self.me;
        let Store { index, partitions, .. } = self;
        let grid = index.grid();
        // Routing by the plan valid at a record's time sends it only to a
        // holder of the partition at that time (its owner, or one of a
        // shared partition's), which holds it.
        let partition = partitions
            .get_mut(&id)
            .unwrap_or_else(|| panic!("worker {me} does not hold partition {id}"));
        let rect = partition.rect;
        // The query's cells in the partition.
        let clip = |query: &Rect| {
            query_cells_of(grid, query)
                .intersection(&rect)
                .expect("a query copy goes only to partitions it overlaps")
        };
        match record {
            Dispatched::Query(query) => {
                let cells = clip(&query.rect);
                partition.stats.record_query(&cells.relative_to(&rect));
                partition.state.add_query(query, cells, round);
                0
            }
            Dispatched::Removal { id, rect: area } => {
                partition.stats.record_removal(&clip(&area).relative_to(&rect));
                partition.state.remove_query(id);
                0
            }
            Dispatched::Point(point) => {
                let cell = grid
                    .cell_of(point.x, point.y, OutOfBounds::Clamp)
                    .expect("points are finite by construction");
                let relative = Cell {
                    row: cell.row - rect.row0,
                    col: cell.col - rect.col0,
                };
                partition.stats.record_point(relative);
                let checks = partition.state.evaluate(&point, cell, emit);
                partition.stats.record_checks(relative, checks);
                checks
            }
        }
    }

    /// Ends the round on every partition (Algorithm 2) and returns the two
    /// numbers for the coordinator.
    pub(crate) fn end_round(&mut self, model: &dyn CostModel) -> WorkerLoad {
        for partition in self.partitions.values_mut() {
            partition.stats.end_round();
        }
        let totals: Vec<_> = self.partitions.values().map(|p| p.stats.totals()).collect();
        WorkerLoad::of(model, &totals)
    }

    /// The costliest partition held, by its last round, that can only be
    /// shared (one cell, or shared already) and no change in `busy` names,
    /// with its work.
    pub(crate) fn hottest_shareable(&self, model: &dyn CostModel, busy: &[PartitionId]) -> Option<(PartitionId, f64)> {
        self.partitions
            .iter()
            .filter(|&(id, p)| !busy.contains(id) && (p.rect.area() == 1 || !self.index.replicas(*id).is_empty()))
            .map(|(&id, p)| (id, model.work(&p.stats.totals())))
            .filter(|&(_, work)| work > 0.0)
            .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)))
    }

    /// The mean work of the partitions held: the floor below which
    /// [`granularity`](super::granularity) leaves partitions alone.
    pub(crate) fn mean_work(&self, model: &dyn CostModel) -> f64 {
        let total: f64 = self
            .partitions
            .values()
            .map(|p| model.work(&smoothed(p.stats.totals())))
            .sum();
        total / self.partitions.len().max(1) as f64
    }

    /// Splits of this worker's partitions, staying here, that cut their work
    /// by at least `gain` above `floor` (see [`best_split`]; the floor is
    /// [`mean_work`](Self::mean_work)) at the end of round `round`;
    /// the parts of a split are split again while that pays, so a partition
    /// reaches its size in one round rather than one halving per update.
    pub(crate) fn plan_refinement(
        &mut self,
        model: &dyn CostModel,
        gain: f64,
        floor: f64,
        round: u64,
    ) -> Vec<PlanChange> {
        let Store {
            me,
            index,
            partitions,
            mint,
        } = self;
        let mut ids: Vec<PartitionId> = partitions.keys().copied().collect();
        ids.sort_unstable();
        let mut changes = Vec::new();
        for id in ids {
            let partition = &partitions[&id];
            // A shared partition is not split while shared.
            if !index.replicas(id).is_empty() {
                continue;
            }
            let Some(first) = best_split(model, &partition.stats, floor, gain) else {
                continue;
            };
            let mut pending = vec![(id, partition.rect, partition.stats.clone(), Some(first.0))];
            while let Some((id, rect, stats, line)) = pending.pop() {
                let Some(line) = line.or_else(|| best_split(model, &stats, floor, gain).map(|(line, _)| line)) else {
                    continue;
                };
                let (a, b) = line.parts(&rect).expect("a split line lies inside its partition");
                let mut part = |cells: CellRect, second: bool| {
                    let queries = partition.state.query_cells(&cells, round);
                    (
                        mint.mint(),
                        cells,
                        stats.split_part(line.axis, line.after, second, &queries),
                        None,
                    )
                };
                let (first, second) = (part(a, false), part(b, true));
                changes.push(PlanChange::Split {
                    id,
                    line,
                    first: (first.0, *me),
                    second: (second.0, *me),
                });
                pending.extend([first, second]);
            }
        }
        changes
    }

    /// Merges of this worker's adjacent partitions (but those in `except`)
    /// whose union is a rectangle: all of them with no `gain`, else those
    /// that add little work above `floor` (see [`cheap_merge`]).
    pub(crate) fn plan_merges(
        &mut self,
        model: &dyn CostModel,
        gain: Option<f64>,
        floor: f64,
        except: &[PartitionId],
    ) -> Vec<PlanChange> {
        let except: HashSet<PartitionId> = except.iter().copied().collect();
        let all = self
            .index
            .partitions()
            .iter()
            .filter(|(id, _)| !except.contains(id) && self.index.replicas(**id).is_empty())
            .map(|(&id, info)| {
                let totals = self.partitions.get(&id).map(|p| p.stats.totals());
                (id, info.rect, info.owner, totals)
            });
        plan_merges(all, self.me, &mut self.mint, |a, b| {
            let (a, b) = (a.as_ref()?, b.as_ref()?);
            match gain {
                Some(gain) => cheap_merge(model, a, b, floor, gain).map(Some),
                None => Some(Some(*a + *b)),
            }
        })
    }

    /// One holder fewer for each shared partition this worker owns that has
    /// cooled down: the holder of the least weight leaves when the owner,
    /// taking its weight, would still carry under half of `mean` (the mean
    /// work per worker) for the partition. Partitions whose holders changed
    /// after round `settled` are left alone (their statistics are a guess).
    pub(crate) fn plan_unshares(&self, model: &dyn CostModel, mean: f64, settled: u64) -> Vec<PlanChange> {
        // Only shared partitions can lose a holder: no pass over the others.
        let mut changes: Vec<PlanChange> = self
            .index
            .shared()
            .filter(|&id| self.index.info(id).is_some_and(|info| info.owner == self.me))
            .filter_map(|id| Some((id, self.partitions.get(&id)?)))
            .filter(|(_, p)| p.born <= settled)
            .filter_map(|(id, p)| {
                let (&least, &from) = self.index.weights(id)[1..]
                    .iter()
                    .zip(self.index.replicas(id))
                    .min_by_key(|&(&weight, &holder)| (weight, holder))?;
                let mine = f64::from(self.index.weight_of(id, self.me).max(1));
                let share = model.work(&smoothed(p.stats.totals()));
                (share * (mine + f64::from(least)) / mine < 0.5 * mean).then_some(PlanChange::Unshare { id, from })
            })
            .collect();
        changes.sort_by_key(|change| change.touched());
        changes
    }

    /// A reduction of this worker's load (Algorithm 3) sized by `request`,
    /// as plan changes moving load to `low_worker` (a placeholder in an
    /// offer), among the partitions that are not `leaving`, and the cost
    /// they hand over.
    pub(crate) fn propose_reduction(
        &mut self,
        model: &dyn CostModel,
        request: &ReductionRequest,
        low_worker: usize,
        leaving: &[PartitionId],
    ) -> (Vec<PlanChange>, f64) {
        let candidates: Vec<Candidate<'_>> = self
            .partitions
            .iter()
            .filter(|(id, _)| !leaving.contains(id))
            .map(|(&id, p)| Candidate {
                id,
                rect: p.rect,
                stats: &p.stats,
                holders: self.index.holders(id).count(),
                low_holds: self.index.holders(id).any(|holder| holder == low_worker),
            })
            .collect();
        match plan_reduction(model, request, &candidates) {
            Reduction::Move { ids, shed, .. } => (
                ids.into_iter()
                    .map(|id| PlanChange::Move { id, to: low_worker })
                    .collect(),
                shed,
            ),
            Reduction::Split {
                id,
                line,
                move_second,
                shed,
                ..
            } => {
                let (first, second) = (self.mint.mint(), self.mint.mint());
                let (first_owner, second_owner) = if move_second {
                    (self.me, low_worker)
                } else {
                    (low_worker, self.me)
                };
                let split = PlanChange::Split {
                    id,
                    line,
                    first: (first, first_owner),
                    second: (second, second_owner),
                };
                (vec![split], shed)
            }
            Reduction::Share { id, handed, shed, .. } => {
                let mine = self.index.weight_of(id, self.me);
                let weight = ((f64::from(mine) * handed).round() as u32).clamp(1, mine.saturating_sub(1).max(1));
                let share = PlanChange::Share {
                    id,
                    with: low_worker,
                    from: self.me,
                    weight,
                };
                // The weight is whole: what it hands over, as rounded.
                let rounded = f64::from(weight) / f64::from(mine.max(1));
                (vec![share], if handed > 0.0 { shed * rounded / handed } else { 0.0 })
            }
            Reduction::Isolate { id, cuts } => {
                let mut changes = Vec::new();
                let mut cut = id;
                for (line, in_second) in cuts {
                    let (first, second) = (self.mint.mint(), self.mint.mint());
                    changes.push(PlanChange::Split {
                        id: cut,
                        line,
                        first: (first, self.me),
                        second: (second, self.me),
                    });
                    cut = if in_second { second } else { first };
                }
                (changes, 0.0)
            }
            Reduction::None { .. } => (Vec::new(), 0.0),
        }
    }

    /// Applies a plan update at the end of round `round` (its effective time
    /// is the next epoch): splits and merges the partitions held, then takes
    /// out those the new plan gives to other workers, as packets for them.
    pub(crate) fn apply_update(
        &mut self,
        update: &PlanUpdate,
        round: u64,
    ) -> Result<Vec<(usize, PartitionPacket<S>)>, Error> {
        let mut packets = Vec::new();
        for change in &update.changes {
            match *change {
                PlanChange::Move { .. } => {}
                PlanChange::Split {
                    id,
                    line,
                    first,
                    second,
                } => self.split(id, line, [first.0, second.0], round)?,
                PlanChange::Merge { first, second, into } => self.merge([first, second], into, round)?,
                PlanChange::Share { id, with, from, weight } => {
                    packets.extend(self.share(id, with, from, weight, round))
                }
                PlanChange::Unshare { id, from } => {
                    let returned = self.unshare(id, from, round);
                    self.index.apply(change)?;
                    if let Some(packet) = returned {
                        let owner = self.index.info(id).expect("an unshared partition stays").owner;
                        packets.push((owner, packet));
                    }
                    continue;
                }
            }
            self.index.apply(change)?;
        }
        packets.extend(self.pack_leaving(update)?);
        Ok(packets)
    }

    /// Worker `from` hands `weight` of partition `id` to worker `with`:
    /// each of the two expects its new share of the points, and if `with`
    /// is a new holder the owner sends it a copy of its state. Every holder
    /// marks the partition changed (its holders are young).
    fn share(
        &mut self,
        id: PartitionId,
        with: usize,
        from: usize,
        weight: u32,
        round: u64,
    ) -> Option<(usize, PartitionPacket<S>)> {
        let me = self.me;
        let (given, taken) = (self.index.weight_of(id, from), self.index.weight_of(id, with));
        let mine = self.index.weight_of(id, me);
        let owner = self.index.info(id).map(|info| info.owner);
        let partition = self.partitions.get_mut(&id)?;
        // The copy first, from the owner's statistics as they are.
        let copy = (taken == 0 && owner == Some(me)).then(|| {
            let mut stats = partition.stats.clone();
            stats.scale_points(f64::from(weight) / f64::from(mine.max(1)));
            let copy = Partition::new(partition.rect, stats, partition.state.replica(), round);
            (
                with,
                PartitionPacket {
                    id,
                    partition: copy,
                    kind: PacketKind::Shared,
                },
            )
        });
        if me == from {
            partition
                .stats
                .scale_points(f64::from(given - weight) / f64::from(given));
        } else if me == with {
            partition
                .stats
                .scale_points(f64::from(taken + weight) / f64::from(taken.max(1)));
        }
        partition.born = round;
        copy
    }

    /// Worker `from` leaves shared partition `id`: the holder that gets its
    /// weight (the owner, or the next holder if `from` owned it) expects a
    /// larger share of the points; `from` itself takes its copy out, to go
    /// to the owner.
    fn unshare(&mut self, id: PartitionId, from: usize, round: u64) -> Option<PartitionPacket<S>> {
        if from == self.me {
            let partition = self.partitions.remove(&id)?;
            return Some(PartitionPacket {
                id,
                partition,
                kind: PacketKind::Returned,
            });
        }
        let owner = self.index.info(id)?.owner;
        let heir = if from == owner {
            *self.index.replicas(id).first()?
        } else {
            owner
        };
        if heir != self.me {
            return None;
        }
        let (left, kept) = (self.index.weight_of(id, from), self.index.weight_of(id, heir));
        let partition = self.partitions.get_mut(&id)?;
        partition
            .stats
            .scale_points(f64::from(kept + left) / f64::from(kept.max(1)));
        partition.born = round;
        None
    }

    /// Splits held partition `id` at `line` into `parts` (nothing, if not
    /// held here).
    fn split(&mut self, id: PartitionId, line: SplitLine, parts: [PartitionId; 2], round: u64) -> Result<(), Error> {
        let Some(whole) = self.partitions.remove(&id) else {
            return Ok(());
        };
        let (a, b) = line
            .parts(&whole.rect)
            .ok_or_else(|| Error::invalid("plan change", format!("{line:?} outside {id}")))?;
        let (state_a, state_b) = whole.state.split(&a, &b);
        let stats_a = whole
            .stats
            .split_part(line.axis, line.after, false, &state_a.query_cells(&a, round));
        let stats_b = whole
            .stats
            .split_part(line.axis, line.after, true, &state_b.query_cells(&b, round));
        self.partitions
            .insert(parts[0], Partition::new(a, stats_a, state_a, round));
        self.partitions
            .insert(parts[1], Partition::new(b, stats_b, state_b, round));
        Ok(())
    }

    /// Merges held partitions `parts` into `into` (nothing, if neither is
    /// held here).
    fn merge(&mut self, parts: [PartitionId; 2], into: PartitionId, round: u64) -> Result<(), Error> {
        let [first, second] = parts;
        let (a, b) = match (self.partitions.remove(&first), self.partitions.remove(&second)) {
            (Some(a), Some(b)) => (a, b),
            (None, None) => return Ok(()),
            // Both parts of a merge are one owner's: holding one means the
            // other is missing (its state would be lost).
            _ => {
                return Err(Error::invalid(
                    "plan change",
                    format!(
                        "worker {} holds only one of partitions {first} and {second} to merge",
                        self.me
                    ),
                ))
            }
        };
        let rect = a.rect.union_if_rectangle(&b.rect).ok_or_else(|| {
            Error::invalid(
                "plan change",
                format!("partitions {first} and {second} do not form a rectangle"),
            )
        })?;
        let mut state = a.state;
        state.merge(b.state);
        let stats = PartitionStats::merged(&a.stats, &a.rect, &b.stats, &b.rect, &state.query_cells(&rect, round));
        self.partitions.insert(into, Partition::new(rect, stats, state, round));
        Ok(())
    }

    /// Takes out the held partitions `update` gave to other workers, as
    /// packets to their new owners.
    fn pack_leaving(&mut self, update: &PlanUpdate) -> Result<Vec<(usize, PartitionPacket<S>)>, Error> {
        // Only the partitions a change names can have left.
        let named = update.changes.iter().flat_map(|change| match *change {
            PlanChange::Move { id, .. } => vec![id],
            PlanChange::Split { first, second, .. } => vec![first.0, second.0],
            PlanChange::Merge { into, .. } => vec![into],
            // Sharing copies and returns state explicitly.
            PlanChange::Share { .. } | PlanChange::Unshare { .. } => vec![],
        });
        // A part may be named twice (made by a split, then moved): once out.
        let mut seen = HashSet::new();
        let leaving: Vec<PartitionId> = named
            .filter(|id| self.partitions.contains_key(id))
            .filter(|id| self.index.holders(*id).all(|holder| holder != self.me))
            .filter(|id| seen.insert(*id))
            .collect();
        let mut packets = Vec::new();
        for id in leaving {
            let partition = self.partitions.remove(&id).expect("listed");
            let owner = self
                .index
                .info(id)
                .ok_or_else(|| Error::invalid("plan change", format!("held partition {id} left the plan")))?
                .owner;
            packets.push((
                owner,
                PartitionPacket {
                    id,
                    partition,
                    kind: PacketKind::Moved,
                },
            ));
        }
        Ok(packets)
    }

    /// Installs a partition moved or shared here, or merges the state of a
    /// holder that left a shared partition owned here.
    pub(crate) fn install(&mut self, packet: PartitionPacket<S>) {
        let PartitionPacket { id, partition, kind } = packet;
        match kind {
            PacketKind::Moved | PacketKind::Shared => {
                self.partitions.insert(id, partition);
            }
            PacketKind::Returned => {
                // The plan names this worker the owner, so it holds the partition.
                let me = self.me;
                self.partitions
                    .get_mut(&id)
                    .unwrap_or_else(|| panic!("worker {me} does not hold partition {id}, which a holder left"))
                    .state
                    .merge(partition.state);
            }
        }
    }
}

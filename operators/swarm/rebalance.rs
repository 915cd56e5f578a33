//! Load reduction on the most loaded worker (Algorithm 3): move a subset of
//! its partitions to the least loaded worker, else split one partition and
//! move a part, else (ours, for a cell hotter than a worker can carry)
//! hand the least loaded worker part of a one-cell partition's points,
//! else, under a wide gap, cut the costliest partition toward its hot
//! cells so that a later round can move or share them, else report that
//! no feasible reduction exists.

use serde::{Deserialize, Serialize};

use super::cost::{normalized, CostModel};
use super::geometry::CellRect;
use super::ids::PartitionId;
use super::index::{Axis, SplitLine};
use super::stats::{PartitionStats, Totals};

/// A partition of the most loaded worker, as the reduction sees it.
#[derive(Debug, Clone, Copy)]
pub struct Candidate<'a> {
    /// Its id.
    pub id: PartitionId,
    /// Its cells.
    pub rect: CellRect,
    /// Its statistics (this holder's, for a shared partition).
    pub stats: &'a PartitionStats,
    /// How many workers hold it: 1, or more for a shared partition (which
    /// the reduction neither moves nor splits, only shares further).
    pub holders: usize,
    /// Whether the least loaded worker is one of its holders already (it
    /// then takes a share without a new copy of the queries).
    pub low_holds: bool,
}

/// What a reduction is sized by: the partner's cost, R(S) and the margin.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ReductionRequest {
    /// C(m_L): the least loaded worker's cost.
    pub low_cost: f64,
    /// R(S): objects the system received this round.
    pub system_received: f64,
    /// Accept a reduction only if it shrinks |C_H − C_L| by more than this
    /// fraction of C_H.
    pub margin: f64,
}

/// A reduction the loaded worker can make.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Reduction {
    /// Move these partitions to the least loaded worker.
    Move {
        /// The partitions to move.
        ids: Vec<PartitionId>,
        /// |C_H − C_L| before and after.
        gap: (f64, f64),
        /// The cost that changes hands, as the statistics measure it.
        shed: f64,
    },
    /// Split `id` along `line` and move one part.
    Split {
        /// The partition to split.
        id: PartitionId,
        /// Where.
        line: SplitLine,
        /// Whether the second part (rows/columns after the line) moves.
        move_second: bool,
        /// |C_H − C_L| before and after.
        gap: (f64, f64),
        /// The cost that changes hands, as the statistics measure it.
        shed: f64,
    },
    /// Hand part of this worker's weight in the one-cell partition `id` to
    /// the least loaded worker (a new holder of it, or one already), so
    /// that its points are dealt to that worker in that proportion.
    Share {
        /// The partition to share.
        id: PartitionId,
        /// The share of this worker's weight handed over (less than 1).
        handed: f64,
        /// |C_H − C_L| before and after.
        gap: (f64, f64),
        /// The cost that changes hands, as the statistics measure it.
        shed: f64,
    },
    /// Nothing narrows the gap this round, but one partition's cost is
    /// concentrated: cut it here, part by part, toward its costliest cells,
    /// until the costly part could move (it costs at most half the gap) or
    /// be shared (it is one cell), as a later round then does. Every part
    /// stays here.
    Isolate {
        /// The partition to cut.
        id: PartitionId,
        /// The lines, each through the costlier part the one before left,
        /// with whether that is the second part.
        cuts: Vec<(SplitLine, bool)>,
    },
    /// Nothing this worker can do narrows the gap enough.
    None {
        /// Why.
        reason: String,
    },
}

/// Plans a reduction for the worker holding `partitions`, by `model`.
pub fn plan_reduction(model: &dyn CostModel, request: &ReductionRequest, partitions: &[Candidate<'_>]) -> Reduction {
    let cost = |totals| normalized(model.work(&totals), request.system_received);
    let mut costed: Vec<(f64, &Candidate<'_>)> = partitions.iter().map(|p| (cost(p.stats.totals()), p)).collect();
    // Descending cost; ids break ties so that the plan is deterministic.
    costed.sort_by(|(a, p), (b, q)| b.total_cmp(a).then(p.id.cmp(&q.id)));
    let high: f64 = costed.iter().map(|(c, _)| c).sum();
    let low = request.low_cost;
    let loaded = Loaded {
        costed,
        high,
        low,
        gap: (high - low).abs(),
        margin: request.margin,
    };
    if loaded.costed.is_empty() {
        return Reduction::None {
            reason: "the worker holds no partition".into(),
        };
    }
    if let Some(reduction) = loaded.move_subset() {
        return reduction;
    }
    let splittable = loaded.splittable();
    let mut split_gap = None;
    if let Some((whole, target)) = splittable {
        match loaded.split(whole, target, &cost) {
            Ok(reduction) => return reduction,
            Err(after) => split_gap = Some((target.id, after)),
        }
    }
    if let Some(reduction) = loaded.share() {
        return reduction;
    }
    loaded
        .isolate(splittable, &cost)
        .unwrap_or_else(|| loaded.explain(split_gap))
}

/// The most loaded worker as the reduction weighs it: its partitions by
/// descending cost, its cost `high` and the least loaded worker's `low`,
/// shared by the stages, which are tried in turn until one narrows the gap.
struct Loaded<'c, 'a> {
    costed: Vec<(f64, &'c Candidate<'a>)>,
    high: f64,
    low: f64,
    /// |C_H − C_L| now.
    gap: f64,
    /// See [`ReductionRequest::margin`].
    margin: f64,
}

impl<'c, 'a> Loaded<'c, 'a> {
    /// Whether a change leaving the gap at `after` narrows it enough to be
    /// worth making.
    fn accept(&self, after: f64) -> bool {
        after < self.gap - self.margin * self.high
    }

    /// 1. A subset: greedily take partitions that fit in the ideal amount
    ///    and carry enough of it (see MOVE_FLOOR), keeping at least one (a
    ///    shared one stays: it is only shared further).
    fn move_subset(&self) -> Option<Reduction> {
        let (high, low) = (self.high, self.low);
        let ideal = (high - low) / 2.0;
        let mut room = ideal;
        let mut ids = Vec::new();
        let mut moved = 0.0;
        for &(c, p) in &self.costed {
            let fits = c <= room && c > 0.0 && c >= MOVE_FLOOR * ideal;
            if ids.len() + 1 < self.costed.len() && fits && p.holders == 1 {
                ids.push(p.id);
                room -= c;
                moved += c;
            }
        }
        let after = ((high - moved) - (low + moved)).abs();
        if ids.is_empty() || !self.accept(after) {
            return None;
        }
        Some(Reduction::Move {
            ids,
            gap: (self.gap, after),
            shed: moved,
        })
    }

    /// The costliest partition that has more than one cell and is not
    /// shared, with its cost: the one a split (stage 2) or the isolating
    /// cuts (stage 4) work on.
    fn splittable(&self) -> Option<(f64, &'c Candidate<'a>)> {
        self.costed
            .iter()
            .find(|(_, p)| p.rect.area() > 1 && p.holders == 1)
            .copied()
    }

    /// 2. A split of the costliest partition that has more than one cell
    ///    (`target`, costing `whole`), or the gap its best split would
    ///    leave, for the reason given when nothing is done.
    fn split(&self, whole: f64, target: &Candidate<'_>, cost: &impl Fn(Totals) -> f64) -> Result<Reduction, f64> {
        let (after, line, move_second) = best_split_line(target, cost, self.high - whole, self.low);
        if !self.accept(after) {
            return Err(after);
        }
        let (first, second) = target.stats.split_totals(line.axis, line.after);
        Ok(Reduction::Split {
            id: target.id,
            line,
            move_second,
            gap: (self.gap, after),
            shed: cost(if move_second { second } else { first }),
        })
    }

    /// 3. Hand the least loaded worker the part of a one-cell partition's
    ///    points that closes the gap (half of it), keeping some: the one
    ///    that narrows the gap most, one the partner holds already first
    ///    (no new copy of its queries).
    fn share(&self) -> Option<Reduction> {
        let (high, low) = (self.high, self.low);
        let shared = self
            .costed
            .iter()
            .filter(|(c, p)| p.rect.area() == 1 && *c > 0.0)
            .map(|&(c, p)| {
                let handed = ((high - low) / 2.0).clamp(0.0, MAX_HANDED * c);
                let after = ((high - handed) - (low + handed)).abs();
                (after, !p.low_holds, p.id, (handed, c))
            })
            .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
        let (after, _, id, (shed, c)) = shared.filter(|&(after, ..)| self.accept(after))?;
        Some(Reduction::Share {
            id,
            handed: shed / c,
            gap: (self.gap, after),
            shed,
        })
    }

    /// 4. Under a wide gap (small ones are left to the margin), cut the
    ///    costliest partition toward its costly cells.
    fn isolate(&self, splittable: Option<(f64, &Candidate<'_>)>, cost: &impl Fn(Totals) -> f64) -> Option<Reduction> {
        splittable
            .filter(|_| self.gap > ISOLATE_GAP * self.high)
            .map(|(_, target)| (target.id, isolating_cuts(target, cost, (self.high - self.low) / 2.0)))
            .filter(|(_, cuts)| !cuts.is_empty())
            .map(|(id, cuts)| Reduction::Isolate { id, cuts })
    }

    /// Why nothing narrows the gap, with what the best split
    /// (`split_gap`: of which partition, leaving what gap) would leave.
    fn explain(&self, split_gap: Option<(PartitionId, f64)>) -> Reduction {
        let gap = self.gap;
        Reduction::None {
            reason: match split_gap {
                Some((id, after)) => format!(
                    "no subset or sharing narrows the gap {gap:.3}, and the best split of partition {id} leaves {after:.3}"
                ),
                None => format!("no subset or sharing narrows the gap {gap:.3}, and no partition can be split"),
            },
        }
    }
}

/// The least share of the ideal amount (half the gap) a partition must
/// carry to be moved whole. A partition's cost over one round is a few
/// points' worth, mostly noise: moving many small ones to fill the ideal
/// amount moves the noise into the plan and scatters the receiver's cells
/// over where a hotspot goes next. From a fine start, at 32–64 workers on a
/// moving hotspot, small fills left the busiest worker at 1.12–1.18× the
/// mean over the run, this floor at 1.04–1.14 with a twentieth of the
/// moves (`bench/results/swarm.md`, "What each change did").
const MOVE_FLOOR: f64 = 0.5;

/// The most of its share of a cell a worker hands over at once: it keeps
/// some, so that a share never empties a holder.
const MAX_HANDED: f64 = 0.9;

/// How wide a gap, as a share of the busiest worker's cost, makes a worker
/// cut a partition toward its costly cells when nothing narrows the gap.
const ISOLATE_GAP: f64 = 0.25;

/// The cuts of [`Reduction::Isolate`]: each at the line (on either axis)
/// whose costlier part costs least, through the costlier part of the one
/// before, until that part costs at most `room` or is one cell. The parts'
/// figures come from the statistics of points and checks (the queries'
/// are recounted when the cuts are made).
fn isolating_cuts(target: &Candidate<'_>, cost: impl Fn(Totals) -> f64, room: f64) -> Vec<(SplitLine, bool)> {
    let (mut rect, mut stats) = (target.rect, target.stats.clone());
    let mut cuts = Vec::new();
    while rect.area() > 1 && cost(stats.totals()) > room {
        let mut best: Option<(f64, SplitLine, bool)> = None;
        for axis in [Axis::Rows, Axis::Columns] {
            let lines = axis.lines(&rect);
            if lines < 2 {
                continue;
            }
            // The first part's cost grows with the line, the second's shrinks.
            let (after, _) = best_line(lines - 1, |after| {
                let (first, second) = stats.split_totals(axis, after);
                cost(first) - cost(second)
            });
            let (first, second) = stats.split_totals(axis, after);
            let (first, second) = (cost(first), cost(second));
            let (hot, in_second) = if second > first { (second, true) } else { (first, false) };
            if best.is_none_or(|(b, _, _)| hot < b) {
                best = Some((hot, SplitLine { axis, after }, in_second));
            }
        }
        let (_, line, in_second) = best.expect("a partition of several cells has a line");
        let (first, second) = line.parts(&rect).expect("a chosen line lies inside");
        stats = stats.split_part(line.axis, line.after, in_second, &[]);
        rect = if in_second { second } else { first };
        cuts.push((line, in_second));
    }
    cuts
}

/// The best line through `target` and which part moves: the least
/// |C_H − C_L| after, where the rest of the worker costs `rest` and the
/// least loaded worker `low`.
fn best_split_line(
    target: &Candidate<'_>,
    cost: impl Fn(Totals) -> f64,
    rest: f64,
    low: f64,
) -> (f64, SplitLine, bool) {
    let mut best: Option<(f64, SplitLine, bool)> = None;
    for axis in [Axis::Rows, Axis::Columns] {
        let lines = axis.lines(&target.rect);
        if lines < 2 {
            continue;
        }
        for move_second in [false, true] {
            // Signed gap after the split with the line after `after`:
            // monotone in `after` (each part's figures are).
            let signed = |after: u32| {
                let (first, second) = target.stats.split_totals(axis, after);
                let (moving, staying) = if move_second { (second, first) } else { (first, second) };
                (rest + cost(staying)) - (low + cost(moving))
            };
            let (after, value) = best_line(lines - 1, signed);
            if best.is_none_or(|(b, _, _)| value.abs() < b) {
                best = Some((value.abs(), SplitLine { axis, after }, move_second));
            }
        }
    }
    best.expect("a partition of several cells has a line")
}

/// The line position in `0..positions` minimising |f|, for `f` monotone (in
/// either direction), by binary search; ties go to the smallest position.
/// Returns the position and f there.
///
/// # Panics
///
/// If `positions` is 0.
pub fn best_line(positions: u32, f: impl Fn(u32) -> f64) -> (u32, f64) {
    assert!(positions > 0, "at least one line");
    let last = positions - 1;
    // Orient so that g = sign · f is non-increasing.
    let sign = if f(0) >= f(last) { 1.0 } else { -1.0 };
    let g = |s: u32| sign * f(s);
    // First position where g ≤ threshold (or `positions` if none).
    let first_at_most = |threshold: f64| {
        let (mut lo, mut hi) = (0u32, positions);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if g(mid) <= threshold {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        lo
    };
    let crossing = first_at_most(0.0);
    // The minimum of |g| is just before or at the crossing.
    let candidates = [crossing.checked_sub(1), (crossing < positions).then_some(crossing)];
    let best_value = candidates
        .into_iter()
        .flatten()
        .map(g)
        .min_by(|a, b| a.abs().total_cmp(&b.abs()).then(b.total_cmp(a)))
        .expect("at least one candidate");
    // The smallest position holding that value (g is monotone, so equal
    // values are contiguous).
    let position = first_at_most(best_value);
    (position, f(position))
}

/// [`best_line`] by trying every position: the reference for tests and benchmarks.
#[doc(hidden)]
pub fn best_line_exhaustive(positions: u32, f: impl Fn(u32) -> f64) -> (u32, f64) {
    (0..positions)
        .map(|s| (s, f(s)))
        .min_by(|(s, a), (t, b)| a.abs().total_cmp(&b.abs()).then(s.cmp(t)))
        .expect("at least one line")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_search_matches_exhaustive_on_monotone_functions() {
        let cases: Vec<Vec<f64>> = vec![
            vec![5.0, 3.0, 1.0, -1.0, -3.0],
            vec![5.0, 3.0, 2.0, 2.0, -2.0, -2.0],
            vec![-4.0, -1.0, 0.0, 0.0, 0.0, 2.0],
            vec![1.0, 1.0, 1.0],
            vec![-1.0, -1.0, -1.0, -0.5],
            vec![7.0],
            vec![3.0, 1.0, -1.0, -3.0],
        ];
        for values in cases {
            let f = |s: u32| values[s as usize];
            let n = values.len() as u32;
            assert_eq!(best_line(n, f), best_line_exhaustive(n, f), "{values:?}");
        }
    }
}

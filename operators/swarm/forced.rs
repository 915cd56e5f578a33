//! Random plan changes: the forced migration schedules that tests and
//! benchmarks put the index (and, later, the running dataflow) through.

use rand::Rng;

use super::ids::IdMint;
use super::index::{Axis, GlobalIndex, PlanChange, SplitLine};
use super::merge::plan_merges;

/// A random valid change to `index`: a move of a random partition to
/// another worker, chosen at random, a split of it at a random line (new ids from
/// `mint`, one part to a random worker), a merge its owner can
/// make, a holder handing part of its weight in it to another worker
/// (a new holder or one already), or a holder of a shared partition
/// leaving it. `None` when the drawn change is impossible (a
/// move or share with one worker, a one-cell-wide or shared split, no
/// mergeable pair, nothing shared).
#[doc(hidden)]
pub fn random_change(rng: &mut impl Rng, index: &GlobalIndex, workers: usize, mint: &mut IdMint) -> Option<PlanChange> {
    let ids: Vec<_> = index.partitions().keys().copied().collect();
    let id = ids[rng.random_range(0..ids.len())];
    let info = *index.info(id).expect("listed partition");
    let shared = !index.replicas(id).is_empty();
    match rng.random_range(0..5) {
        0 if workers > 1 => {
            let to = (info.owner + rng.random_range(1..workers)) % workers;
            index
                .holders(id)
                .all(|holder| holder != to)
                .then_some(PlanChange::Move { id, to })
        }
        // A random holder gives part of its weight to another worker (a
        // new holder, or one already).
        3 if workers > 1 => {
            let holders: Vec<usize> = index.holders(id).collect();
            let from = holders[rng.random_range(0..holders.len())];
            let given = index.weight_of(id, from);
            let with = (from + rng.random_range(1..workers)) % workers;
            (given > 1).then(|| PlanChange::Share {
                id,
                with,
                from,
                weight: rng.random_range(1..given),
            })
        }
        0 | 3 => None,
        4 => {
            let shared: Vec<_> = index.shared().collect();
            let id = *shared.get(rng.random_range(0..shared.len().max(1)))?;
            let holders: Vec<usize> = index.holders(id).collect();
            Some(PlanChange::Unshare {
                id,
                from: holders[rng.random_range(0..holders.len())],
            })
        }
        1 if shared => None,
        1 => {
            let axis = if rng.random_bool(0.5) {
                Axis::Rows
            } else {
                Axis::Columns
            };
            let lines = axis.lines(&info.rect);
            if lines < 2 {
                return None;
            }
            let line = SplitLine {
                axis,
                after: rng.random_range(0..lines - 1),
            };
            Some(PlanChange::Split {
                id,
                line,
                first: (mint.mint(), info.owner),
                second: (mint.mint(), rng.random_range(0..workers)),
            })
        }
        _ => {
            let all = index
                .partitions()
                .iter()
                .filter(|&(&id, _)| index.replicas(id).is_empty())
                .map(|(&id, p)| (id, p.rect, p.owner, ()));
            plan_merges(all, info.owner, mint, |_, _| Some(())).into_iter().next()
        }
    }
}

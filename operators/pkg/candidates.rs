//! The candidate workers of a key: independent parts of its fingerprint
//! (and, beyond two, a permutation seeded by it), identical on every worker
//! and process.

use std::hint::select_unpredictable;

use crate::common::hash::splitmix64;

/// Seed of the permutation that orders a head key's further candidates.
const SEED: u64 = 0x243f_6a88_85a3_08d3;

/// Maps a 64-bit hash onto `0..peers` by its high bits, without the bias of
/// `%` (Lemire's multiply-shift).
#[inline]
fn reduce(hash: u64, peers: usize) -> usize {
    ((u128::from(hash) * peers as u128) >> 64) as usize
}

/// The first choice of `key` among `peers` workers: key grouping's worker,
/// the one timely's `Exchange` picks for the same hash (its low bits when
/// `peers` is a power of two, else the hash modulo `peers`).
#[inline]
pub(crate) fn first_choice(key: u64, peers: usize) -> usize {
    // `peers` is fixed per pact, so this branch is always predicted.
    if peers.is_power_of_two() {
        (key & (peers as u64 - 1)) as usize
    } else {
        // (0 workers: worker 0, rather than a division by zero.)
        (key % peers.max(1) as u64) as usize
    }
}

/// The two candidates of `key` among `peers` workers.
///
/// `key` is the caller's fingerprint, taken as a well-mixed 64-bit hash
/// (as `Exchange` takes its hash): the first candidate is the worker
/// `Exchange` picks (see `first_choice`), the second comes from its high
/// bits, so
/// the two are independent without mixing the fingerprint again. The second
/// is drawn among the `peers − 1` workers other than the first (an offset
/// of 1 to `peers − 1` from it), so the two always differ when `peers > 1`
/// and the second is uniform over the others.
#[inline]
pub fn two_choices(key: u64, peers: usize) -> [usize; 2] {
    let first = first_choice(key, peers);
    // With one worker the offset range is empty: reduce gives 0 and the sum
    // wraps to the first.
    let second = first + 1 + reduce(key, peers.saturating_sub(1));
    // A select, not a branch: wrapping happens for a data-dependent share of
    // keys, which branch predictors cannot learn.
    let second = select_unpredictable(second >= peers, second.wrapping_sub(peers), second);
    [first, second]
}

/// The first `d` candidates of `key` among `peers` workers, all distinct,
/// into `out`: the two of [`two_choices`] first (so a key that becomes a
/// head keeps its PKG workers), then a permutation of the others seeded by
/// the key.
pub(crate) fn choices(key: u64, peers: usize, d: usize, out: &mut Vec<usize>) {
    out.clear();
    let d = d.min(peers);
    if d == 0 {
        return;
    }
    let [first, second] = two_choices(key, peers);
    if d == 1 {
        out.push(first);
        return;
    }
    let mut order: Vec<usize> = (0..peers).collect();
    order.swap(0, first);
    let at = order.iter().position(|&worker| worker == second).expect("a worker");
    order.swap(1, at);
    // A partial Fisher–Yates shuffle of the rest.
    let mut state = splitmix64(key ^ SEED);
    for i in 2..d {
        state = splitmix64(state);
        order.swap(i, i + reduce(state, peers - i));
    }
    out.extend_from_slice(&order[..d]);
}

/// The least loaded of `count` candidates, candidate `i` being worker
/// `worker(i)` (at least one); ties go to the earliest candidate.
///
/// Head keys scan up to every worker per message, so the scan runs four
/// independent minimums over (load, position) packed into one integer
/// (exact for any loads) and merges them: no chain of dependent compares.
///
/// # Panics
///
/// If `count` is 0, or `worker` names a worker `loads` does not hold.
#[inline]
pub fn least_loaded(count: usize, worker: impl Fn(usize) -> usize, loads: &[u64]) -> usize {
    assert!(count > 0, "at least one candidate");
    let rank = |i: usize| (u128::from(loads[worker(i)]) << 64) | i as u128;
    let mut lanes = [u128::MAX; 4];
    let whole = count / 4 * 4;
    for start in (0..whole).step_by(4) {
        for (lane, best) in lanes.iter_mut().enumerate() {
            *best = (*best).min(rank(start + lane));
        }
    }
    for i in whole..count {
        lanes[0] = lanes[0].min(rank(i));
    }
    let best = lanes.into_iter().min().expect("four lanes");
    worker(best as u64 as usize)
}

/// Up to this many workers, [`LeastLoaded`] scans them all.
const SCAN: usize = 16;

/// A least loaded worker of all, found by a cursor that walks the workers
/// round and round looking for one at the lowest load seen: loads only
/// grow, so that level is a lower bound, and each worker is passed over at
/// most once per level. Amortized O(1) per query where a scan is O(n); up
/// to `SCAN` workers the branch-free scan is faster.
#[derive(Debug, Clone, Default)]
pub(crate) struct LeastLoaded {
    cursor: usize,
    level: u64,
}

impl LeastLoaded {
    /// A worker whose load is the least of `loads` (at least one).
    #[inline]
    pub(crate) fn find(&mut self, loads: &[u64]) -> usize {
        let peers = loads.len();
        if peers <= SCAN {
            return least_loaded(peers, |worker| worker, loads);
        }
        for _ in 0..peers {
            if loads[self.cursor] <= self.level {
                return self.cursor;
            }
            self.cursor = if self.cursor + 1 == peers { 0 } else { self.cursor + 1 };
        }
        // No worker is left at the level: the least load is the new level.
        self.cursor = least_loaded(peers, |worker| worker, loads);
        self.level = loads[self.cursor];
        self.cursor
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::hash::key_hash;

    #[test]
    fn candidates_are_in_range_and_distinct() {
        for peers in 1..10 {
            for key in 0..1000u64 {
                let [a, b] = two_choices(key_hash(&key), peers);
                assert!(a < peers && b < peers);
                assert_eq!(a, first_choice(key_hash(&key), peers));
                if peers > 1 {
                    assert_ne!(a, b);
                }
            }
        }
    }

    #[test]
    fn candidates_spread_evenly_and_independently() {
        // Over many keys each ordered pair (a, b), a != b, is equally likely:
        // the first uniform over all workers, the second over the others.
        let peers = 4;
        let keys = 120_000u64;
        let mut pairs = vec![0u64; peers * peers];
        for key in 0..keys {
            let [a, b] = two_choices(key_hash(&key), peers);
            pairs[a * peers + b] += 1;
        }
        let expected = keys as f64 / (peers * (peers - 1)) as f64;
        for a in 0..peers {
            for b in 0..peers {
                let count = pairs[a * peers + b] as f64;
                if a == b {
                    assert_eq!(count, 0.0);
                } else {
                    assert!(
                        (count - expected).abs() < 6.0 * expected.sqrt(),
                        "({a},{b}): {count} vs {expected}"
                    );
                }
            }
        }
    }

    #[test]
    fn least_loaded_is_the_first_minimum() {
        let mut state = 1u64;
        for count in 1..40usize {
            for round in 0..50 {
                let loads: Vec<u64> = (0..64)
                    .map(|_| {
                        state = splitmix64(state);
                        // Few distinct loads, so ties are common; some huge.
                        (state % 4) << (round % 3 * 30)
                    })
                    .collect();
                let candidates: Vec<usize> = (0..count).map(|i| (i * 7 + round) % 64).collect();
                let expected = *candidates
                    .iter()
                    .min_by_key(|&&worker| loads[worker])
                    .expect("candidates");
                assert_eq!(least_loaded(count, |i| candidates[i], &loads), expected);
            }
        }
    }

    #[test]
    fn the_cursor_always_finds_a_least_loaded_worker() {
        let mut state = 3u64;
        for peers in 1..30 {
            let mut loads = vec![0u64; peers];
            let mut least = LeastLoaded::default();
            for step in 0..2000 {
                state = splitmix64(state);
                // Some loads grow elsewhere (tail traffic), by varied costs.
                if step % 3 == 0 {
                    loads[(state % peers as u64) as usize] += state >> 61;
                }
                let worker = least.find(&loads);
                assert_eq!(
                    loads[worker],
                    *loads.iter().min().unwrap(),
                    "{peers} workers: {loads:?}"
                );
                loads[worker] += 1 + (state >> 63);
            }
        }
    }

    #[test]
    fn d_choices_are_distinct_stable_and_start_with_the_two() {
        let mut out = Vec::new();
        for peers in 1..12 {
            for key in 0..300u64 {
                let key = key_hash(&key);
                for d in 1..=peers {
                    choices(key, peers, d, &mut out);
                    assert_eq!(out.len(), d);
                    let mut sorted = out.clone();
                    sorted.sort();
                    sorted.dedup();
                    assert_eq!(sorted.len(), d, "repeated candidate: {out:?}");
                    let two = two_choices(key, peers);
                    assert_eq!(out[0], two[0]);
                    if d > 1 {
                        assert_eq!(out[1], two[1]);
                    }
                    // A prefix of the key's longer list: d + 1 only adds.
                    let mut longer = Vec::new();
                    choices(key, peers, peers, &mut longer);
                    assert_eq!(&longer[..d], &out[..]);
                }
            }
        }
    }
}

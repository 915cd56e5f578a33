//! The greedy baselines of the PKG paper: On-Greedy places each new key on
//! the least loaded of all workers and remembers it; Off-Greedy knows every
//! key's frequency in advance and places keys, most frequent first, on the
//! least loaded worker. Neither splits keys; both need a table of every key.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use equipoise::common::hash::StableHasher;

use equipoise::pkg::sim::least_loaded;
use equipoise::pkg::sim::{Grouping, Router};

type Table = HashMap<u64, usize, BuildHasherDefault<StableHasher>>;

/// On-Greedy: a key's first message picks the least loaded worker (by the
/// sender's own sends), and all its messages follow.
#[derive(Debug, Clone, Copy, Default)]
pub struct OnlineGreedy;

/// A sender's On-Greedy state.
#[derive(Debug, Clone)]
pub struct OnlineGreedyRouter {
    loads: Vec<u64>,
    table: Table,
}

impl Grouping for OnlineGreedy {
    type Router = OnlineGreedyRouter;
    fn router(&self, peers: usize, _sender: usize) -> OnlineGreedyRouter {
        OnlineGreedyRouter {
            loads: vec![0; peers],
            table: Table::default(),
        }
    }
}

impl Router for OnlineGreedyRouter {
    fn route(&mut self, key: u64, cost: u64) -> usize {
        let loads = &self.loads;
        let destination = *self
            .table
            .entry(key)
            .or_insert_with(|| least_loaded(loads.len(), |worker| worker, loads));
        self.loads[destination] += cost;
        destination
    }
}

/// Off-Greedy's placement of keys with known `frequencies` on `peers`
/// workers: most frequent first (ties by key), each to the least loaded.
pub fn offline_greedy(frequencies: &HashMap<u64, u64>, peers: usize) -> OfflineGreedyRouter {
    let mut keys: Vec<(u64, u64)> = frequencies.iter().map(|(&key, &count)| (key, count)).collect();
    keys.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut loads = vec![0u64; peers.max(1)];
    let mut table = Table::default();
    for (key, count) in keys {
        let worker = least_loaded(loads.len(), |worker| worker, &loads);
        loads[worker] += count;
        table.insert(key, worker);
    }
    OfflineGreedyRouter { table }
}

/// Routes by Off-Greedy's precomputed table (a key it was not given goes
/// to worker 0).
#[derive(Debug, Clone)]
pub struct OfflineGreedyRouter {
    table: Table,
}

impl Router for OfflineGreedyRouter {
    fn route(&mut self, key: u64, _cost: u64) -> usize {
        self.table.get(&key).copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offline_greedy_is_lpt_scheduling() {
        // Frequencies 5, 4, 3, 3, 2, 1 on 2 workers, largest first to the
        // lighter: (5, 0) (5, 4) (5, 7) (8, 7) (8, 9) (9, 9).
        let frequencies: HashMap<u64, u64> = [(1, 5), (2, 4), (3, 3), (4, 3), (5, 2), (6, 1)].into();
        let mut router = offline_greedy(&frequencies, 2);
        let mut loads = [0u64; 2];
        for (&key, &count) in &frequencies {
            loads[router.route(key, 1)] += count;
        }
        assert_eq!(loads, [9, 9]);
    }

    #[test]
    fn online_greedy_never_splits_and_fills_the_emptiest() {
        let mut router = OnlineGreedy.router(3, 0);
        let first: Vec<usize> = (0..3).map(|key| router.route(key, 1)).collect();
        assert_eq!(first, vec![0, 1, 2]);
        for _ in 0..10 {
            for key in 0..3 {
                assert_eq!(router.route(key, 1), first[key as usize]);
            }
        }
    }
}

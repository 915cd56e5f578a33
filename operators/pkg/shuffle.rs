//! Shuffle grouping: records dealt round-robin, whatever their key.

use super::grouping::{Grouping, Router};

/// The shuffle-grouping policy.
#[derive(Debug, Clone, Copy, Default)]
pub struct Shuffle;

/// Shuffle grouping's router: the next worker in turn.
#[derive(Debug, Clone)]
pub struct ShuffleRouter {
    peers: usize,
    next: usize,
}

impl Grouping for Shuffle {
    type Router = ShuffleRouter;
    fn router(&self, peers: usize, sender: usize) -> ShuffleRouter {
        // Senders start at their own index so that their first records do not
        // all land on worker 0.
        ShuffleRouter {
            peers,
            next: sender % peers.max(1),
        }
    }
}

impl Router for ShuffleRouter {
    #[inline]
    fn route(&mut self, _key: u64, _cost: u64) -> usize {
        let destination = self.next;
        self.next += 1;
        if self.next == self.peers {
            self.next = 0;
        }
        destination
    }
}

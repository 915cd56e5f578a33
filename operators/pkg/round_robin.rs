//! Shuffle grouping: records dealt round-robin, whatever their key.

use super::router::{Grouping, Router};

/// The shuffle-grouping policy.
#[derive(Debug, Clone, Copy, Default)]
pub struct RoundRobin;

/// Shuffle grouping's router: the next worker in turn.
#[derive(Debug, Clone)]
pub struct RoundRobinRouter {
    peers: usize,
    next: usize,
}

impl Grouping for RoundRobin {
    type Router = RoundRobinRouter;
    fn router(&self, peers: usize, sender: usize) -> RoundRobinRouter {
        // Senders start at their own index so that their first records do not
        // all land on worker 0.
        RoundRobinRouter {
            peers,
            next: sender % peers.max(1),
        }
    }
}

impl Router for RoundRobinRouter {
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

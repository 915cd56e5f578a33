//! Partial key grouping: each record to the less loaded of its key's two
//! candidates, by the sender's own estimate of the loads.

use super::candidates::two_choices;
use super::router::{Grouping, Router};

/// The PKG policy (Nasir et al., ICDE 2015) with local load estimation.
#[derive(Debug, Clone, Copy, Default)]
pub struct TwoChoices;

/// A sender's PKG state: the load it has sent to each worker.
#[derive(Debug, Clone)]
pub struct TwoChoicesRouter {
    loads: Vec<u64>,
}

impl TwoChoicesRouter {
    /// The load this sender has sent to each worker so far.
    pub fn loads(&self) -> &[u64] {
        &self.loads
    }
}

/// The less loaded of `candidates` by `loads`; ties go to the first.
#[inline]
pub fn less_loaded(candidates: [usize; 2], loads: &[u64]) -> usize {
    let [first, second] = candidates;
    if loads[second] < loads[first] {
        second
    } else {
        first
    }
}

impl Grouping for TwoChoices {
    type Router = TwoChoicesRouter;
    fn router(&self, peers: usize, _sender: usize) -> TwoChoicesRouter {
        TwoChoicesRouter { loads: vec![0; peers] }
    }
}

impl Router for TwoChoicesRouter {
    #[inline]
    fn route(&mut self, key: u64, cost: u64) -> usize {
        let destination = less_loaded(two_choices(key, self.loads.len()), &self.loads);
        self.loads[destination] += cost;
        destination
    }
}

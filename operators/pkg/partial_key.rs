//! Partial key grouping: each record to the less loaded of its key's two
//! candidates, by the sender's own estimate of the loads.

use std::hint::select_unpredictable;

use super::candidates::two_choices;
use super::router::{Grouping, Router};

/// The PKG policy (Nasir et al., ICDE 2015) with local load estimation.
#[derive(Debug, Clone, Copy, Default)]
pub struct Pkg;

/// A sender's PKG state: the load it has sent to each worker.
#[derive(Debug, Clone)]
pub struct PkgRouter {
    loads: Vec<u64>,
}

impl PkgRouter {
    /// The load this sender has sent to each worker so far.
    pub fn loads(&self) -> &[u64] {
        &self.loads
    }
}

/// The less loaded of `candidates` by `loads`, with its load; ties go to the
/// first candidate.
#[inline]
pub(crate) fn less_loaded(candidates: [usize; 2], loads: &[u64]) -> (usize, u64) {
    let [first, second] = candidates;
    let (first_load, second_load) = (loads[first], loads[second]);
    // Selects rather than branches: which candidate is lighter is close to a
    // coin flip, which branch predictors cannot learn.
    let take_second = second_load < first_load;
    (
        select_unpredictable(take_second, second, first),
        select_unpredictable(take_second, second_load, first_load),
    )
}

impl Grouping for Pkg {
    type Router = PkgRouter;
    fn router(&self, peers: usize, _sender: usize) -> PkgRouter {
        PkgRouter { loads: vec![0; peers] }
    }
}

impl Router for PkgRouter {
    #[inline]
    fn route(&mut self, key: u64, cost: u64) -> usize {
        let [first, second] = two_choices(key, self.loads.len());
        let (first_load, second_load) = (self.loads[first], self.loads[second]);
        let take_second = second_load < first_load;
        // Both candidates are written, the cost added to the chosen one only:
        // the store addresses then come from the hashes, known early, and the
        // next record's loads need not wait for this comparison to learn
        // whether they alias. (Routing is a chain of dependent load updates;
        // this shortens each link.) The first is written last so that the
        // increment survives when both candidates are one worker.
        self.loads[second] = second_load + cost * u64::from(take_second);
        self.loads[first] = first_load + cost * u64::from(!take_second);
        select_unpredictable(take_second, second, first)
    }
}

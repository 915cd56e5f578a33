//! Partial key grouping: each record to the less loaded of its key's two
//! candidates, by the sender's own estimate of the loads.

use std::hint::select_unpredictable;

use super::candidates::{first_choice, two_choices};
use super::router::{Grouping, Router};

/// The PKG policy (Nasir et al., ICDE 2015) with local load estimation.
#[derive(Debug, Clone, Copy, Default)]
pub struct Pkg;

/// A sender's PKG state: the load it has sent to each worker.
#[derive(Debug, Clone)]
pub struct PkgRouter {
    // Also D-/W-Choices' loads, which route their tail through this router.
    pub(crate) loads: Vec<u64>,
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

    fn route_each<X>(&mut self, records: impl Iterator<Item = (u64, u64, X)>, mut sink: impl FnMut(usize, X)) {
        let [load_0, load_1] = self.loads[..] else {
            return records.for_each(|(key, cost, item)| sink(self.route(key, cost), item));
        };
        // Two workers: both are always the candidates, the first being the
        // fingerprint's low bit, and only the difference of their loads
        // decides, kept in a register for the whole batch: the chain from
        // one record's choice to the next is a compare and a select.
        // (Exact while the loads differ by less than 2^63.)
        let mut ahead = load_0.wrapping_sub(load_1) as i64;
        let mut total = u128::from(load_0) + u128::from(load_1);
        for (key, cost, item) in records {
            total += u128::from(cost);
            // The second is taken when strictly lighter, so ties go to the
            // first: worker 1 when 0 is heavier, or equal and 1 is first.
            let to_1 = ahead > -(first_choice(key, 2) as i64);
            let cost = cost as i64;
            ahead = select_unpredictable(to_1, ahead.wrapping_sub(cost), ahead.wrapping_add(cost));
            sink(usize::from(to_1), item);
        }
        // The loads again, from their sum and their difference.
        let load_1 = (total as i128 - i128::from(ahead)) / 2;
        self.loads[0] = (total as i128 - load_1) as u64;
        self.loads[1] = load_1 as u64;
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// Routes `records` by `route_each` in batches cut at `cuts`, and one by
    /// one by `route`: the destinations and final loads.
    fn both_ways(peers: usize, records: &[(u64, u64)], cuts: &[usize]) -> [(Vec<usize>, Vec<u64>); 2] {
        let mut batched = Pkg.router(peers, 0);
        let mut destinations = Vec::new();
        let mut start = 0;
        for end in cuts.iter().map(|&cut| cut.min(records.len())).chain([records.len()]) {
            let end = end.max(start);
            let batch = records[start..end].iter().map(|&(key, cost)| (key, cost, ()));
            batched.route_each(batch, |destination, ()| destinations.push(destination));
            start = end;
        }
        let mut reference = Pkg.router(peers, 0);
        let one_by_one = records.iter().map(|&(key, cost)| reference.route(key, cost)).collect();
        [
            (destinations, batched.loads().to_vec()),
            (one_by_one, reference.loads().to_vec()),
        ]
    }

    proptest! {
        #[test]
        fn batches_route_as_the_reference_router_does(
            peers in 1usize..6,
            records in proptest::collection::vec((any::<u64>(), 0u64..4), 0..600),
            cuts in proptest::collection::vec(0usize..600, 0..5),
        ) {
            let mut cuts = cuts;
            cuts.sort();
            let [batched, reference] = both_ways(peers, &records, &cuts);
            prop_assert_eq!(batched, reference);
        }

        #[test]
        fn few_keys_with_large_costs_route_as_the_reference(
            peers in 1usize..4,
            records in proptest::collection::vec((0u64..6, prop_oneof![Just(1u64), 0u64..1 << 40]), 0..300),
        ) {
            let [batched, reference] = both_ways(peers, &records, &[records.len() / 3]);
            prop_assert_eq!(batched, reference);
        }
    }

    #[test]
    fn one_key_alternates_between_its_two_candidates() {
        for peers in 2..6 {
            let key = 0x9e37_79b9_7f4a_7c15;
            let [first, second] = two_choices(key, peers);
            let records = vec![(key, 1); 10];
            let [(batched, _), (reference, _)] = both_ways(peers, &records, &[3]);
            let alternating: Vec<usize> = (0..10).map(|i| if i % 2 == 0 { first } else { second }).collect();
            assert_eq!(batched, alternating);
            assert_eq!(reference, alternating);
        }
    }
}

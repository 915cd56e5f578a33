//! Partial key grouping: each record to the less loaded of its key's two
//! candidates, by the sender's own estimate of the loads.

use std::hint::select_unpredictable;

use super::candidates::{first_choice, two_choices};
use super::grouping::{Grouping, Router};

/// The PKG policy (Nasir et al., ICDE 2015) with local load estimation.
///
/// `Pkg::default()` is the paper's PKG: each record to the less loaded of
/// its key's two candidates. With a `slack` of s, a record goes to the
/// second candidate only when this sender's load on the first exceeds its
/// load on the second by more than s; the first candidate is the worker
/// `Exchange` would pick. Each key then stays on one worker while the
/// loads allow, and splits only as much as balance needs: a receiver that
/// keeps per-key state holds each key about once instead of on both
/// workers, for up to s (plus one record's cost) more load per sender
/// between a key's two workers.
///
/// ```
/// use equipoise::pkg::Pkg;
/// use equipoise::pkg::sim::{Grouping, Router};
///
/// let mut sticky = Pkg::with_slack(4).router(2, 0);
/// // A lone key stays on its first worker until that one is more than 4
/// // ahead.
/// let first = sticky.route(0, 1);
/// let routed: Vec<usize> = (0..6).map(|_| sticky.route(0, 1)).collect();
/// assert_eq!(&routed[..4], &[first; 4]);
/// assert_eq!(routed[4], 1 - first);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Pkg {
    /// The load the first candidate may carry beyond the second before a
    /// record goes to the second (0: the less loaded, every time).
    slack: u64,
}

impl Pkg {
    /// PKG with a slack of `slack` (in the pact's cost units, records by
    /// default).
    pub const fn with_slack(slack: u64) -> Self {
        Pkg { slack }
    }
}

/// Slacks from this one on route record by record, not through the
/// two-worker batch path: the loads may then drift so far apart that their
/// difference no longer fits the batch path's signed register.
const HUGE_SLACK: u64 = 1 << 62;

/// A sender's PKG state: the load it has sent to each worker.
#[derive(Debug, Clone)]
pub struct PkgRouter {
    // Also D-/W-Choices' loads, which route their tail through this router.
    pub(crate) loads: Vec<u64>,
    slack: u64,
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
pub fn less_loaded(candidates: [usize; 2], loads: &[u64]) -> (usize, u64) {
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
        PkgRouter {
            loads: vec![0; peers],
            slack: self.slack,
        }
    }
}

impl Router for PkgRouter {
    #[inline]
    fn route(&mut self, key: u64, cost: u64) -> usize {
        let [first, second] = two_choices(key, self.loads.len());
        let (first_load, second_load) = (self.loads[first], self.loads[second]);
        // All ones when the second is taken: the first is ahead by more
        // than the slack (in 128 bits, where nothing overflows). Masks, not
        // a comparison and selects: the compiler turns those into a branch,
        // which mispredicts on about every other record.
        let behind = (i128::from(second_load) + i128::from(self.slack)) - i128::from(first_load);
        let to_second = (behind >> 127) as u64;
        // Both candidates are written, the cost added to the chosen one only:
        // the store addresses then come from the hashes, known early, and the
        // next record's loads need not wait for this comparison to learn
        // whether they alias. (Routing is a chain of dependent load updates;
        // this shortens each link.) The first is written last so that the
        // increment survives when both candidates are one worker.
        self.loads[second] = second_load + (cost & to_second);
        self.loads[first] = first_load + (cost & !to_second);
        first ^ ((first ^ second) & to_second as usize)
    }

    /// Beyond two workers, where each choice compares two loads (up to
    /// two, the batch path keeps their difference in a register).
    fn route_apart(&self) -> bool {
        self.loads.len() > 2
    }

    fn route_each<X>(&mut self, records: impl Iterator<Item = (u64, u64, X)>, mut sink: impl FnMut(usize, X)) {
        let (load_0, load_1) = match self.loads[..] {
            [load_0, load_1] if self.slack < HUGE_SLACK => (load_0, load_1),
            _ => return records.for_each(|(key, cost, item)| sink(self.route(key, cost), item)),
        };
        // Two workers: both are always the candidates, the first being the
        // fingerprint's low bit, and only the difference of their loads
        // decides, kept in a register for the whole batch: the chain from
        // one record's choice to the next is a compare and a select.
        // (Exact while the loads differ by less than 2^63.)
        let mut ahead = load_0.wrapping_sub(load_1) as i64;
        let mut total = u128::from(load_0) + u128::from(load_1);
        // The second is taken when the first is ahead by more than the
        // slack: worker 1 when 0 is first and ahead > slack, or when 1 is
        // first and 0 is not ahead of it by more, ahead ≥ −slack.
        let slack = self.slack as i64;
        let (first_0, first_1) = (slack, -slack - 1);
        for (key, cost, item) in records {
            total += u128::from(cost);
            let to_1 = ahead > select_unpredictable(first_choice(key, 2) == 1, first_1, first_0);
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
    use crate::common::hash::{key_hash, splitmix64};

    /// PKG as the paper states it, plus the slack: the first candidate
    /// unless it is ahead of the second by more than `slack`.
    fn reference(peers: usize, records: &[(u64, u64)], slack: u64) -> (Vec<usize>, Vec<u64>) {
        let mut loads = vec![0u64; peers];
        let destinations = records
            .iter()
            .map(|&(key, cost)| {
                let [first, second] = two_choices(key, peers);
                let worker = if u128::from(loads[first]) > u128::from(loads[second]) + u128::from(slack) {
                    second
                } else {
                    first
                };
                loads[worker] += cost;
                worker
            })
            .collect();
        (destinations, loads)
    }

    /// Routes `records` by `route_each` in batches cut at `cuts`, and one by
    /// one by `route`: the destinations and final loads.
    fn both_ways(peers: usize, records: &[(u64, u64)], cuts: &[usize], slack: u64) -> [(Vec<usize>, Vec<u64>); 2] {
        let policy = Pkg::with_slack(slack);
        let mut batched = policy.router(peers, 0);
        let mut destinations = Vec::new();
        let mut start = 0;
        for end in cuts.iter().map(|&cut| cut.min(records.len())).chain([records.len()]) {
            let end = end.max(start);
            let batch = records[start..end].iter().map(|&(key, cost)| (key, cost, ()));
            batched.route_each(batch, |destination, ()| destinations.push(destination));
            start = end;
        }
        let mut one = policy.router(peers, 0);
        let one_by_one = records.iter().map(|&(key, cost)| one.route(key, cost)).collect();
        [
            (destinations, batched.loads().to_vec()),
            (one_by_one, one.loads().to_vec()),
        ]
    }

    fn slack() -> impl Strategy<Value = u64> {
        prop_oneof![Just(0u64), 0u64..8, 0u64..1 << 41, any::<u64>()]
    }

    proptest! {
        #[test]
        fn batches_and_single_records_route_as_the_reference(
            peers in 1usize..6,
            records in proptest::collection::vec((any::<u64>(), 0u64..4), 0..600),
            cuts in proptest::collection::vec(0usize..600, 0..5),
            slack in slack(),
        ) {
            let mut cuts = cuts;
            cuts.sort();
            let [batched, one_by_one] = both_ways(peers, &records, &cuts, slack);
            let expected = reference(peers, &records, slack);
            prop_assert_eq!(&batched, &expected);
            prop_assert_eq!(&one_by_one, &expected);
        }

        #[test]
        fn few_keys_with_large_costs_route_as_the_reference(
            peers in 1usize..4,
            records in proptest::collection::vec((0u64..6, prop_oneof![Just(1u64), 0u64..1 << 40]), 0..300),
            slack in slack(),
        ) {
            let [batched, one_by_one] = both_ways(peers, &records, &[records.len() / 3], slack);
            let expected = reference(peers, &records, slack);
            prop_assert_eq!(&batched, &expected);
            prop_assert_eq!(&one_by_one, &expected);
        }
    }

    #[test]
    fn slacks_and_costs_near_the_limits_route_as_the_reference() {
        // A key whose first worker is 0, one whose first is 1, and others.
        let first_on = |worker: usize| {
            (0u64..)
                .map(|i| key_hash(&i))
                .find(|&key| first_choice(key, 2) == worker)
                .unwrap()
        };
        let (on_0, on_1) = (first_on(0), first_on(1));
        let small = (0..64u64).map(|i| (key_hash(&(i % 5)), 1));
        let streams: Vec<Vec<(u64, u64)>> = vec![
            // Loads drift apart by up to 3·2^62 under a huge slack.
            [(on_0, 1 << 62); 3].into_iter().chain(small.clone()).collect(),
            // A difference of exactly 2^63 − 1, then small steps both ways.
            [(on_0, (1 << 63) - 1), (on_0, 1), (on_1, 1), (on_0, 1)]
                .into_iter()
                .chain(small.clone())
                .collect(),
            [(on_1, 1 << 62), (on_1, 1 << 62), (on_0, 5)]
                .into_iter()
                .chain(small)
                .collect(),
        ];
        for records in &streams {
            for slack in [0, 1, 5, (1 << 62) - 1, 1 << 62, (1 << 63) - 2, (1 << 63) - 1, u64::MAX] {
                let [batched, one_by_one] = both_ways(2, records, &[2], slack);
                let expected = reference(2, records, slack);
                assert_eq!(batched, expected, "slack {slack}: {records:?}");
                assert_eq!(one_by_one, expected, "slack {slack}: {records:?}");
            }
        }
    }

    #[test]
    fn one_key_alternates_between_its_two_candidates() {
        for peers in 2..6 {
            let key = 0x9e37_79b9_7f4a_7c15;
            let [first, second] = two_choices(key, peers);
            let records = vec![(key, 1); 10];
            let [(batched, _), (one_by_one, _)] = both_ways(peers, &records, &[3], 0);
            let alternating: Vec<usize> = (0..10).map(|i| if i % 2 == 0 { first } else { second }).collect();
            assert_eq!(batched, alternating);
            assert_eq!(one_by_one, alternating);
        }
    }

    #[test]
    fn with_a_slack_keys_stay_on_their_first_worker_and_loads_within_it() {
        let slack = 256;
        // Uniform keys, and a stream where one key carries half.
        for hot in [false, true] {
            let records: Vec<(u64, u64)> = (0..200_000u64)
                .map(|i| {
                    (
                        key_hash(&if hot && i % 2 == 0 { 0 } else { splitmix64(i) % 100_000 }),
                        1,
                    )
                })
                .collect();
            let [(destinations, loads), _] = both_ways(2, &records, &[], slack);
            let seconds = records
                .iter()
                .zip(&destinations)
                .filter(|&((key, _), &worker)| worker != first_choice(*key, 2))
                .count();
            assert!(loads[0].abs_diff(loads[1]) <= slack + 1, "hot {hot}: {loads:?}");
            // Without the slack PKG sends half the records to the second.
            let most = if hot {
                records.len() / 4 + 1000
            } else {
                records.len() / 100
            };
            assert!(seconds <= most, "hot {hot}: {seconds} records to the second candidate");
        }
    }
}

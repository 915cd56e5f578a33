//! Picking a worker for a hot key's record by its deal's shares.

use crate::common::hash::splitmix64;

/// A deal's shares as bounds on a record's hash, for routing: a record
/// goes to each worker with the probability of its share, every update of
/// the record to the same one. (Integer bounds: no float work per record.)
#[derive(Debug)]
pub(crate) struct Picker {
    /// Each worker but the last, with the cumulative share of the hashes
    /// up to and including it.
    bounds: Vec<(u64, usize)>,
    /// The last worker: it takes the rest, whatever the shares' rounding.
    last: usize,
}

impl Picker {
    /// The picker of `shares` (a deal's: not empty). The hashes are laid
    /// out in the workers' order, so that a key dealt anew over the same
    /// workers with other shares moves only the records in the shifted
    /// bounds.
    pub(crate) fn new(shares: &[(usize, f64)]) -> Self {
        debug_assert!(!shares.is_empty(), "a deal names at least one worker");
        let mut shares = shares.to_vec();
        shares.sort_by_key(|&(worker, _)| worker);
        let (last, others) = shares
            .split_last()
            .map_or((0, &[][..]), |(&(last, _), others)| (last, others));
        let mut cumulative = 0.0;
        let bounds = others
            .iter()
            .map(|&(worker, share)| {
                cumulative += share;
                // `as` saturates: a cumulative share of 1 or more leaves the rest none.
                ((cumulative * u64::MAX as f64) as u64, worker)
            })
            .collect();
        Picker { bounds, last }
    }

    /// The worker a record of hash `record`, of a key of route hash
    /// `route`, goes to: the two mixed, so that where one key's records go
    /// does not follow from where another's do. Every place that routes a
    /// hot key's record, or finds it again, asks this.
    #[inline]
    pub(crate) fn pick_record(&self, record: u64, route: u64) -> usize {
        self.pick(splitmix64(record ^ route))
    }

    /// The worker a record of (mixed) hash `hash` goes to.
    #[inline]
    fn pick(&self, hash: u64) -> usize {
        // Counted rather than searched: no branch on the hash to mispredict.
        let below = self.bounds.iter().filter(|&&(bound, _)| bound <= hash).count();
        self.bounds.get(below).map_or(self.last, |&(_, worker)| worker)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_go_to_workers_by_their_shares() {
        let picker = Picker::new(&[(3, 0.25), (1, 0.75)]);
        let mut counts = [0u32; 4];
        for r in 0..40_000u64 {
            counts[picker.pick(splitmix64(r))] += 1;
        }
        assert_eq!((counts[0], counts[2]), (0, 0));
        assert!((9_500..10_500).contains(&counts[3]), "{counts:?}");
        // The same record, the same worker; the extreme hashes too.
        assert_eq!(picker.pick(splitmix64(7)), picker.pick(splitmix64(7)));
        // Laid out in the workers' order.
        assert_eq!((picker.pick(0), picker.pick(u64::MAX)), (1, 3));
        // Shares that round short of 1 still place every hash.
        let picker = Picker::new(&[(0, 0.3), (2, 0.3999999), (1, 0.3)]);
        assert_eq!(picker.pick(u64::MAX), 2);
    }

    #[test]
    fn the_same_workers_with_other_shares_move_only_the_shifted_records() {
        let before = Picker::new(&[(5, 0.5), (2, 0.5)]);
        let after = Picker::new(&[(2, 0.4), (5, 0.6)]);
        let moved = (0..10_000u64)
            .filter(|&r| before.pick(splitmix64(r)) != after.pick(splitmix64(r)))
            .count();
        // A tenth of the hashes change hands, not half.
        assert!((800..1_200).contains(&moved), "{moved}");
    }
}

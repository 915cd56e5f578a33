//! The candidate workers of a key: independent seeded hashes of its
//! fingerprint, identical on every worker and process.

use crate::common::hash::splitmix64;

/// Seeds of the first and second hash functions (Storm uses murmur3 with 13
/// and 17; any well-mixed pair of distinct seeds serves).
const SEEDS: [u64; 2] = [0x243f_6a88_85a3_08d3, 0x1319_8a2e_0370_7344];

/// Maps a 64-bit hash onto `0..peers` without the bias of `%` (Lemire's
/// multiply-shift).
#[inline]
fn reduce(hash: u64, peers: usize) -> usize {
    ((u128::from(hash) * peers as u128) >> 64) as usize
}

/// The first choice of `key` among `peers` workers: key grouping's worker.
#[inline]
pub fn first_choice(key: u64, peers: usize) -> usize {
    reduce(splitmix64(key ^ SEEDS[0]), peers)
}

/// The two candidates of `key` among `peers` workers. They differ whenever
/// `peers > 1`: when the second hash lands on the first choice, the next
/// worker is taken instead.
#[inline]
pub fn two_choices(key: u64, peers: usize) -> [usize; 2] {
    let first = first_choice(key, peers);
    let mut second = reduce(splitmix64(key ^ SEEDS[1]), peers);
    if second == first && peers > 1 {
        second = (first + 1) % peers;
    }
    [first, second]
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
        // Over many keys each ordered pair (a, b), a != b, is about equally likely.
        let peers = 4;
        let keys = 120_000u64;
        let mut pairs = vec![0u64; peers * peers];
        for key in 0..keys {
            let [a, b] = two_choices(key_hash(&key), peers);
            pairs[a * peers + b] += 1;
        }
        // Independent hashes: each (a, b) has probability 1/peers²; the "next
        // worker" rule moves the diagonal's mass onto (a, a+1).
        let expected = keys as f64 / (peers * peers) as f64;
        for a in 0..peers {
            for b in 0..peers {
                let count = pairs[a * peers + b] as f64;
                if a == b {
                    assert_eq!(count, 0.0);
                } else {
                    let target = if b == (a + 1) % peers { 2.0 * expected } else { expected };
                    assert!(
                        (count - target).abs() < 6.0 * target.sqrt(),
                        "({a},{b}): {count} vs {target}"
                    );
                }
            }
        }
    }
}

//! A bit per key hash: answers "not hot" for most keys at one test, before
//! any map is looked at.

/// A set of key hashes that may hold false positives, never false negatives.
#[derive(Debug, Clone)]
pub(crate) struct KeyFilter {
    bits: Vec<u64>,
}

impl KeyFilter {
    /// An empty filter of `bits` bits, a power of two of at least 64.
    pub(crate) fn new(bits: u64) -> Self {
        debug_assert!(bits.is_power_of_two() && bits >= 64);
        KeyFilter {
            bits: vec![0; (bits / 64) as usize],
        }
    }

    #[inline]
    fn slot(&self, hash: u64) -> (usize, u64) {
        let bit = hash & (self.bits.len() as u64 * 64 - 1);
        ((bit / 64) as usize, 1 << (bit % 64))
    }

    pub(crate) fn insert(&mut self, hash: u64) {
        let (word, bit) = self.slot(hash);
        self.bits[word] |= bit;
    }

    /// False only if no hash inserted since the last clear equals `hash`
    /// in its low bits.
    #[inline]
    pub(crate) fn may_contain(&self, hash: u64) -> bool {
        let (word, bit) = self.slot(hash);
        self.bits[word] & bit != 0
    }

    pub(crate) fn clear(&mut self) {
        self.bits.iter_mut().for_each(|word| *word = 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::hash::splitmix64;

    #[test]
    fn inserted_hashes_are_found_and_most_others_are_not() {
        let mut filter = KeyFilter::new(1 << 12);
        let inserted: Vec<u64> = (0..100).map(splitmix64).collect();
        inserted.iter().for_each(|&hash| filter.insert(hash));
        assert!(inserted.iter().all(|&hash| filter.may_contain(hash)));
        let false_positives = (1_000..11_000).filter(|&i| filter.may_contain(splitmix64(i))).count();
        // 100 of 4 096 bits set: about 2.4 % of other hashes pass.
        assert!(false_positives < 500, "{false_positives}");
        filter.clear();
        assert!(!inserted.iter().any(|&hash| filter.may_contain(hash)));
    }
}

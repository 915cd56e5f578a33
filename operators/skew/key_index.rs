//! The hot keys a worker knows, by their route hash, behind a bit per hash
//! that answers "not hot" for most keys at one test, before any map is
//! looked at: what every update's routing asks first.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use differential_dataflow::Hashable;

use crate::common::hash::FingerprintHasher;

/// The hash timely's exchange routes a key by in differential's
/// arrangements.
pub(crate) fn key_route<K: Hashable>(key: &K) -> u64 {
    key.hashed().into()
}

/// A map keyed by a well-mixed hash, hashed by the hash itself.
pub(crate) type ByHash<V> = HashMap<u64, V, BuildHasherDefault<FingerprintHasher>>;

/// Bits of the filter: with a few thousand hot keys, about one cold key in
/// 16 looks in the map.
const FILTER_BITS: u64 = 1 << 15;

/// Keys (with a value each) by their route hash (most hashes hold one key).
#[derive(Debug)]
pub(crate) struct KeyIndex<K, V> {
    keys: ByHash<Vec<(K, V)>>,
    filter: KeyFilter,
}

impl<K: Eq, V> Default for KeyIndex<K, V> {
    fn default() -> Self {
        KeyIndex {
            keys: ByHash::default(),
            filter: KeyFilter::new(FILTER_BITS),
        }
    }
}

impl<K: Eq, V> KeyIndex<K, V> {
    /// Whether no key is held.
    pub(crate) fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// `key`'s value, if it is held; `route` is its route hash.
    #[inline]
    pub(crate) fn get(&self, key: &K, route: u64) -> Option<&V> {
        if !self.filter.may_contain(route) {
            return None;
        }
        let keys = self.keys.get(&route)?;
        keys.iter().find(|(held, _)| held == key).map(|(_, value)| value)
    }

    /// `key`'s value, inserted by `value` if it was not held.
    pub(crate) fn get_or_insert_with(&mut self, key: K, route: u64, value: impl FnOnce() -> V) -> &mut V {
        self.filter.insert(route);
        let keys = self.keys.entry(route).or_default();
        let at = match keys.iter().position(|(held, _)| *held == key) {
            Some(at) => at,
            None => {
                keys.push((key, value()));
                keys.len() - 1
            }
        };
        &mut keys[at].1
    }

    /// The keys held, all replaced by `keys` (with their route hashes):
    /// whether any changed.
    pub(crate) fn replace(&mut self, keys: impl IntoIterator<Item = (u64, K, V)>) -> bool
    where
        V: PartialEq,
    {
        let mut new: ByHash<Vec<(K, V)>> = ByHash::default();
        for (route, key, value) in keys {
            new.entry(route).or_default().push((key, value));
        }
        let changed = new != self.keys;
        if changed {
            self.filter.clear();
            new.keys().for_each(|&route| self.filter.insert(route));
            self.keys = new;
        }
        changed
    }

    /// The route hashes of the keys held, in order.
    pub(crate) fn routes(&self) -> Vec<u64> {
        let mut routes: Vec<u64> = self.keys.keys().copied().collect();
        routes.sort_unstable();
        routes
    }
}

/// A set of key hashes that may hold false positives, never false negatives.
#[derive(Debug, Clone)]
struct KeyFilter {
    bits: Vec<u64>,
}

impl KeyFilter {
    /// An empty filter of `bits` bits, a power of two of at least 64.
    fn new(bits: u64) -> Self {
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

    fn insert(&mut self, hash: u64) {
        let (word, bit) = self.slot(hash);
        self.bits[word] |= bit;
    }

    /// False only if no hash inserted since the last clear equals `hash`
    /// in its low bits.
    #[inline]
    fn may_contain(&self, hash: u64) -> bool {
        let (word, bit) = self.slot(hash);
        self.bits[word] & bit != 0
    }

    fn clear(&mut self) {
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

//! The lookup every message makes under D-/W-Choices: is its key a head key?
//! A general hash map hashes the fingerprint again and probes in groups;
//! this table takes its slot straight from the fingerprint's bits (one
//! multiply, so that even a poorly mixed fingerprint spreads) and, filled to
//! at most a quarter, answers a tail key from one slot.

/// Marks a free slot.
const EMPTY: u32 = u32::MAX;

/// Fibonacci hashing's multiplier (2^64 / golden ratio, odd).
const SPREAD: u64 = 0x9e37_79b9_7f4a_7c15;

#[derive(Debug, Clone, Copy)]
struct Slot {
    key: u64,
    value: u32,
}

/// A map from fingerprints to values below `u32::MAX`, built whole and read
/// per message (open addressing, linear probing).
#[derive(Debug, Clone)]
pub(crate) struct HeadIndex {
    slots: Vec<Slot>,
    shift: u32,
}

impl Default for HeadIndex {
    fn default() -> Self {
        let mut index = HeadIndex {
            slots: Vec::new(),
            shift: 0,
        };
        index.rebuild(std::iter::empty());
        index
    }
}

impl HeadIndex {
    /// Replaces the contents with `entries` (distinct keys, each value
    /// below `u32::MAX`).
    pub(crate) fn rebuild(&mut self, entries: impl ExactSizeIterator<Item = (u64, u32)>) {
        // At most a quarter full: a key not in the table usually meets a
        // free slot first.
        let size = (4 * entries.len()).next_power_of_two().max(8);
        self.shift = 64 - size.trailing_zeros();
        self.slots.clear();
        self.slots.resize(size, Slot { key: 0, value: EMPTY });
        let mask = size - 1;
        for (key, value) in entries {
            debug_assert!(value != EMPTY, "value {value} is reserved");
            let mut at = self.home(key);
            while self.slots[at].value != EMPTY {
                debug_assert!(self.slots[at].key != key, "key {key} twice");
                at = (at + 1) & mask;
            }
            self.slots[at] = Slot { key, value };
        }
    }

    #[inline]
    fn home(&self, key: u64) -> usize {
        (key.wrapping_mul(SPREAD) >> self.shift) as usize
    }

    /// The value of `key`, if present.
    #[inline]
    pub(crate) fn get(&self, key: u64) -> Option<u32> {
        let mask = self.slots.len() - 1;
        let mut at = self.home(key);
        loop {
            let slot = self.slots[at];
            if slot.value == EMPTY {
                return None;
            }
            if slot.key == key {
                return Some(slot.value);
            }
            at = (at + 1) & mask;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::common::hash::splitmix64;

    #[test]
    fn answers_as_a_hash_map() {
        let mut index = HeadIndex::default();
        assert_eq!(index.get(0), None);
        let mut state = 5u64;
        for len in [0usize, 1, 2, 7, 100, 1000] {
            // Well-mixed keys, and small integers (a fingerprint that is
            // not mixed): both must work, key 0 included.
            for mixed in [true, false] {
                let reference: HashMap<u64, u32> = (0..len as u64)
                    .map(|i| {
                        state = splitmix64(state);
                        (if mixed { state } else { i }, (state >> 40) as u32)
                    })
                    .collect();
                index.rebuild(reference.iter().map(|(&key, &value)| (key, value)));
                for (&key, &value) in &reference {
                    assert_eq!(index.get(key), Some(value));
                }
                for probe in 0..2000u64 {
                    let key = if mixed { splitmix64(probe ^ 0xabc) } else { probe };
                    assert_eq!(index.get(key), reference.get(&key).copied(), "{len} keys, probe {key}");
                }
            }
        }
    }
}

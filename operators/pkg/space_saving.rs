//! SpaceSaving (Metwally et al., 2005): the heavy hitters of a stream in a
//! fixed number of counters. Each sending worker keeps one on its own sends,
//! so heavy-hitter detection needs no coordination.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use crate::common::hash::FingerprintHasher;

/// One monitored key: its counter (at least its true count) and the most
/// the counter can overstate it by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counter {
    /// The key fingerprint.
    pub key: u64,
    /// An upper bound on the key's occurrences.
    pub count: u64,
    /// `count − error` is a lower bound on them.
    pub error: u64,
}

/// A SpaceSaving summary of `capacity` counters.
///
/// Guarantees, for every key: `estimate(key) ≥` its true count, and for a
/// monitored key `count − error ≤` its true count; any key with more than
/// `seen / capacity` occurrences is monitored.
///
/// ```
/// use equipoise::pkg::SpaceSaving;
///
/// let mut sketch = SpaceSaving::new(2);
/// for key in [7, 7, 1, 7, 2, 7, 3] {
///     sketch.insert(key);
/// }
/// assert!(sketch.estimate(7) >= 4);
/// assert_eq!(sketch.seen(), 7);
/// ```
#[derive(Debug, Clone)]
pub struct SpaceSaving {
    capacity: usize,
    /// A binary min-heap on `count`.
    heap: Vec<Counter>,
    /// Where each monitored key sits in `heap`.
    // The keys are fingerprints: a cheap hash suffices, and the sketch sits
    // on the routing path.
    position: HashMap<u64, usize, BuildHasherDefault<FingerprintHasher>>,
    seen: u64,
}

impl SpaceSaving {
    /// A summary with `capacity` counters (at least one).
    pub fn new(capacity: usize) -> Self {
        let capacity = capacity.max(1);
        SpaceSaving {
            capacity,
            heap: Vec::with_capacity(capacity),
            position: HashMap::with_capacity_and_hasher(capacity, Default::default()),
            seen: 0,
        }
    }

    /// Counts one occurrence of `key`; returns its counter.
    pub fn insert(&mut self, key: u64) -> Counter {
        self.seen += 1;
        let slot = if let Some(&slot) = self.position.get(&key) {
            self.heap[slot].count += 1;
            slot
        } else if self.heap.len() < self.capacity {
            self.heap.push(Counter {
                key,
                count: 1,
                error: 0,
            });
            self.position.insert(key, self.heap.len() - 1);
            self.sift_up(self.heap.len() - 1)
        } else {
            // Replace the smallest counter: the newcomer may have occurred
            // up to that many times unseen.
            let evicted = self.heap[0];
            self.position.remove(&evicted.key);
            self.heap[0] = Counter {
                key,
                count: evicted.count + 1,
                error: evicted.count,
            };
            self.position.insert(key, 0);
            0
        };
        let slot = self.sift_down(slot);
        self.heap[slot]
    }

    /// An upper bound on the occurrences of `key`: its counter if
    /// monitored, else the smallest counter (0 while counters are free).
    pub fn estimate(&self, key: u64) -> u64 {
        match self.position.get(&key) {
            Some(&slot) => self.heap[slot].count,
            None if self.heap.len() < self.capacity => 0,
            None => self.heap[0].count,
        }
    }

    /// The counter of `key`, if monitored.
    pub fn counter(&self, key: u64) -> Option<Counter> {
        self.position.get(&key).map(|&slot| self.heap[slot])
    }

    /// The number of counters.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Occurrences counted so far.
    pub fn seen(&self) -> u64 {
        self.seen
    }

    /// Halves every counter, error and the count of occurrences seen: the
    /// summary then weighs recent occurrences more (an exponential decay),
    /// so a key that was hot long ago fades. Halving keeps the order of the
    /// counters, so the heap stays valid. The guarantees hold for the
    /// decayed counts up to rounding (one per halving).
    pub fn halve(&mut self) {
        for counter in &mut self.heap {
            counter.count /= 2;
            counter.error /= 2;
        }
        self.seen /= 2;
    }

    /// The monitored counters, largest first.
    pub fn counters(&self) -> Vec<Counter> {
        let mut counters = self.heap.clone();
        counters.sort_by(|a, b| b.count.cmp(&a.count).then(a.key.cmp(&b.key)));
        counters
    }

    /// The monitored counters above `count`, largest first: the heavy
    /// hitters, without sorting the rest.
    pub fn heavier_than(&self, count: u64) -> Vec<Counter> {
        let mut counters: Vec<Counter> = self.heap.iter().copied().filter(|c| c.count > count).collect();
        counters.sort_by(|a, b| b.count.cmp(&a.count).then(a.key.cmp(&b.key)));
        counters
    }

    // Both sifts move the counter through a hole: each level writes the
    // counter it passes over, and the moving one is written once, where it
    // stops (a swap per level would write both, and their positions twice).

    fn sift_up(&mut self, slot: usize) -> usize {
        let moving = self.heap[slot];
        let mut hole = slot;
        while hole > 0 {
            let parent = (hole - 1) / 2;
            if self.heap[parent].count <= moving.count {
                break;
            }
            self.fill(hole, parent);
            hole = parent;
        }
        self.settle(slot, hole, moving)
    }

    fn sift_down(&mut self, slot: usize) -> usize {
        let moving = self.heap[slot];
        let len = self.heap.len();
        let mut hole = slot;
        loop {
            let left = 2 * hole + 1;
            if left >= len {
                break;
            }
            let right = left + 1;
            let child = if right < len && self.heap[right].count < self.heap[left].count {
                right
            } else {
                left
            };
            if self.heap[child].count >= moving.count {
                break;
            }
            self.fill(hole, child);
            hole = child;
        }
        self.settle(slot, hole, moving)
    }

    /// Moves the counter at `from` into the hole at `hole`.
    fn fill(&mut self, hole: usize, from: usize) {
        self.heap[hole] = self.heap[from];
        self.position.insert(self.heap[hole].key, hole);
    }

    /// Puts `moving`, which left `slot`, into the final `hole`.
    fn settle(&mut self, slot: usize, hole: usize, moving: Counter) -> usize {
        if hole != slot {
            self.heap[hole] = moving;
            self.position.insert(moving.key, hole);
        }
        hole
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn never_underestimates_and_the_error_bound_holds(
            keys in proptest::collection::vec(0u64..40, 0..2000),
            capacity in 1usize..20,
        ) {
            let mut sketch = SpaceSaving::new(capacity);
            let mut truth: HashMap<u64, u64> = HashMap::new();
            for &key in &keys {
                sketch.insert(key);
                *truth.entry(key).or_default() += 1;
            }
            prop_assert_eq!(sketch.seen(), keys.len() as u64);
            let bound = keys.len() as u64 / capacity as u64;
            for key in 0..40u64 {
                let true_count = truth.get(&key).copied().unwrap_or(0);
                prop_assert!(sketch.estimate(key) >= true_count);
                if let Some(counter) = sketch.counter(key) {
                    prop_assert!(counter.count - counter.error <= true_count);
                    prop_assert!(counter.error <= bound);
                } else {
                    // Unmonitored keys are rare: at most seen / capacity.
                    prop_assert!(true_count <= bound);
                }
            }
            // The counters always sum to the stream length once full.
            let total: u64 = sketch.counters().iter().map(|c| c.count).sum();
            prop_assert_eq!(total, keys.len() as u64);
            // The heavy hitters are the prefix of the counters above a bound.
            let above: Vec<Counter> = sketch.counters().into_iter().filter(|c| c.count > bound).collect();
            prop_assert_eq!(sketch.heavier_than(bound), above);
        }
    }

    #[test]
    fn halving_keeps_the_order_and_lets_old_heads_fade() {
        let mut sketch = SpaceSaving::new(4);
        for _ in 0..1000 {
            sketch.insert(1);
        }
        for _ in 0..8 {
            sketch.halve();
            for _ in 0..100 {
                sketch.insert(2);
            }
        }
        let counters = sketch.counters();
        assert_eq!(counters[0].key, 2, "{counters:?}");
        assert!(sketch.estimate(1) < sketch.estimate(2));
        // Still a valid heap: inserting evicts the smallest.
        for key in 10..20 {
            sketch.insert(key);
        }
        assert!(sketch.counter(2).is_some());
    }
}

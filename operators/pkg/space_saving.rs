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
/// use equipoise::pkg::sim::SpaceSaving;
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
    /// The counters, each at a fixed place (an evicted key's place goes to
    /// its successor).
    counters: Vec<Counter>,
    /// A binary min-heap on `count` of places in `counters`.
    heap: Vec<u32>,
    /// Where each place sits in `heap`: sifting rewrites these, not the map.
    in_heap: Vec<u32>,
    /// The place of each monitored key.
    // The keys are fingerprints: a cheap hash suffices, and the sketch sits
    // on the routing path.
    places: HashMap<u64, u32, BuildHasherDefault<FingerprintHasher>>,
    seen: u64,
    /// The largest counter: most re-estimates ask for the counters above a
    /// bound that none reaches, answered from this without a scan.
    max: u64,
}

impl SpaceSaving {
    /// A summary with `capacity` counters (1 to 2^32 − 1).
    pub fn new(capacity: usize) -> Self {
        let capacity = capacity.clamp(1, u32::MAX as usize);
        SpaceSaving {
            capacity,
            counters: Vec::with_capacity(capacity),
            heap: Vec::with_capacity(capacity),
            in_heap: Vec::with_capacity(capacity),
            places: HashMap::with_capacity_and_hasher(capacity, Default::default()),
            seen: 0,
            max: 0,
        }
    }

    /// Counts one occurrence of `key`; returns its counter.
    pub fn insert(&mut self, key: u64) -> Counter {
        self.seen += 1;
        let place = if let Some(&place) = self.places.get(&key) {
            self.counters[place as usize].count += 1;
            place
        } else if self.counters.len() < self.capacity {
            let place = self.counters.len() as u32;
            self.counters.push(Counter {
                key,
                count: 1,
                error: 0,
            });
            self.heap.push(place);
            self.in_heap.push(place);
            self.places.insert(key, place);
            self.sift_up(place as usize);
            place
        } else {
            // Replace the smallest counter: the newcomer may have occurred
            // up to that many times unseen.
            let place = self.heap[0];
            let evicted = self.counters[place as usize];
            self.places.remove(&evicted.key);
            self.counters[place as usize] = Counter {
                key,
                count: evicted.count + 1,
                error: evicted.count,
            };
            self.places.insert(key, place);
            place
        };
        self.sift_down(self.in_heap[place as usize] as usize);
        let counter = self.counters[place as usize];
        self.max = self.max.max(counter.count);
        counter
    }

    /// An upper bound on the occurrences of `key`: its counter if
    /// monitored, else the smallest counter (0 while counters are free).
    pub fn estimate(&self, key: u64) -> u64 {
        match self.counter(key) {
            Some(counter) => counter.count,
            None if self.counters.len() < self.capacity => 0,
            None => self.count_at(0),
        }
    }

    /// The counter of `key`, if monitored.
    pub fn counter(&self, key: u64) -> Option<Counter> {
        self.places.get(&key).map(|&place| self.counters[place as usize])
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
        for counter in &mut self.counters {
            counter.count /= 2;
            counter.error /= 2;
        }
        self.seen /= 2;
        // Halving keeps the order, so the largest stays the largest.
        self.max /= 2;
    }

    /// The monitored counters, largest first.
    pub fn counters(&self) -> Vec<Counter> {
        self.sorted(|_| true)
    }

    /// The monitored counters above `count`, largest first: the heavy
    /// hitters, without sorting the rest.
    pub fn heavier_than(&self, count: u64) -> Vec<Counter> {
        if self.max <= count {
            return Vec::new();
        }
        self.sorted(|counter| counter.count > count)
    }

    /// The counters that `keep`, largest first (ties by key).
    fn sorted(&self, keep: impl Fn(&Counter) -> bool) -> Vec<Counter> {
        let mut counters: Vec<Counter> = self.counters.iter().copied().filter(keep).collect();
        counters.sort_by(|a, b| b.count.cmp(&a.count).then(a.key.cmp(&b.key)));
        counters
    }

    /// The count of the counter at `slot` of the heap.
    fn count_at(&self, slot: usize) -> u64 {
        self.counters[self.heap[slot] as usize].count
    }

    // Both sifts move the counter's place through a hole: each level writes
    // the place it passes over, and the moving one is written once, where it
    // stops.

    fn sift_up(&mut self, slot: usize) {
        let moving = self.heap[slot];
        let count = self.counters[moving as usize].count;
        let mut hole = slot;
        while hole > 0 {
            let parent = (hole - 1) / 2;
            if self.count_at(parent) <= count {
                break;
            }
            self.fill(hole, parent);
            hole = parent;
        }
        self.settle(hole, moving);
    }

    fn sift_down(&mut self, slot: usize) {
        let moving = self.heap[slot];
        let count = self.counters[moving as usize].count;
        let len = self.heap.len();
        let mut hole = slot;
        loop {
            let left = 2 * hole + 1;
            if left >= len {
                break;
            }
            let right = left + 1;
            let child = if right < len && self.count_at(right) < self.count_at(left) {
                right
            } else {
                left
            };
            if self.count_at(child) >= count {
                break;
            }
            self.fill(hole, child);
            hole = child;
        }
        self.settle(hole, moving);
    }

    /// Moves the place at heap slot `from` into the hole at `hole`.
    fn fill(&mut self, hole: usize, from: usize) {
        let place = self.heap[from];
        self.heap[hole] = place;
        self.in_heap[place as usize] = hole as u32;
    }

    /// Puts `moving` into the final `hole`.
    fn settle(&mut self, hole: usize, moving: u32) {
        self.heap[hole] = moving;
        self.in_heap[moving as usize] = hole as u32;
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

        #[test]
        fn heavy_hitters_are_the_counters_above_the_bound_through_halvings(
            ops in proptest::collection::vec(prop_oneof![9 => (0u64..30).prop_map(Some), 1 => Just(None)], 0..1500),
            capacity in 1usize..12,
        ) {
            // `None` halves. The largest counter, which answers most
            // queries without a scan, must follow every insert and halving.
            let mut sketch = SpaceSaving::new(capacity);
            for (step, op) in ops.iter().enumerate() {
                match op {
                    Some(key) => { sketch.insert(*key); }
                    None => sketch.halve(),
                }
                if step % 7 == 0 {
                    let counters = sketch.counters();
                    let max = counters.first().map_or(0, |c| c.count);
                    for bound in [0, max / 2, max.saturating_sub(1), max, max + 1] {
                        let above: Vec<Counter> = counters.iter().copied().filter(|c| c.count > bound).collect();
                        prop_assert_eq!(sketch.heavier_than(bound), above);
                    }
                }
            }
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

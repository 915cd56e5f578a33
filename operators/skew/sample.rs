//! Counting about one update in [`SAMPLE`], at random strides (so that a
//! periodic stream does not alias): what the skew-proof operators learn
//! their hot keys from. Counting every update cost a cache miss each (15 %
//! of a join's time at 2 workers on 100 000 keys).

use std::collections::BTreeMap;

use differential_dataflow::Hashable;

use crate::common::hash::splitmix64;

use super::key_index::{key_route, ByHash};

/// One update in this many is counted, on average; counts are scaled up by
/// it.
pub(crate) const SAMPLE: u64 = 16;

/// Which updates to count: strides of 1 to 2 × [`SAMPLE`] − 1 updates, drawn
/// by a xorshift generator.
#[derive(Debug, Clone)]
pub(crate) struct Strides {
    /// Updates until the next one counted.
    countdown: u64,
    state: u64,
}

impl Strides {
    /// Strides seeded by `seed` (a worker's index), so that workers differ.
    pub(crate) fn new(seed: u64) -> Self {
        Strides {
            countdown: 0,
            state: splitmix64(seed) | 1,
        }
    }

    /// Whether to count the next update.
    #[inline]
    pub(crate) fn next(&mut self) -> bool {
        if self.countdown > 0 {
            self.countdown -= 1;
            return false;
        }
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        self.countdown = self.state % (2 * SAMPLE - 1);
        true
    }
}

/// Sampled counts per key, by its route hash, each scaled by
/// [`SAMPLE`].
#[derive(Debug)]
pub(crate) struct KeyCounts<K>(ByHash<(K, u64)>);

impl<K> Default for KeyCounts<K> {
    fn default() -> Self {
        KeyCounts(ByHash::default())
    }
}

impl<K: Clone> KeyCounts<K> {
    /// One more sample of `key` (of route hash `route`).
    #[inline]
    pub(crate) fn add(&mut self, key: &K, route: u64) {
        self.0.entry(route).or_insert_with(|| (key.clone(), 0)).1 += SAMPLE;
    }

    /// Each key counted, with its route hash and its count.
    pub(crate) fn drain(&mut self) -> impl Iterator<Item = (u64, K, u64)> + '_ {
        self.0.drain().map(|(route, (key, count))| (route, key, count))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn about_one_update_in_sample_is_counted_and_not_periodically() {
        let mut strides = Strides::new(3);
        let counted: Vec<u64> = (0..160_000u64).filter(|_| strides.next()).collect();
        let expected = 160_000 / SAMPLE as usize;
        assert!(counted.len().abs_diff(expected) < expected / 20, "{}", counted.len());
        // A stream of period SAMPLE is counted at every phase.
        let mut phases = [0u32; SAMPLE as usize];
        counted.iter().for_each(|&i| phases[(i % SAMPLE) as usize] += 1);
        assert!(phases.iter().all(|&n| n > 300), "{phases:?}");
    }
}

/// One time's sampled counts on one worker: per key, and per owner.
pub(crate) type Sampled<K> = (KeyCounts<K>, Vec<u64>);

/// What one worker has counted of the updates it routes, by time, until
/// the times are complete and the counts reported.
#[derive(Debug)]
pub(crate) struct Sampling<K, T> {
    /// Which updates are counted (a key at the hot share still has
    /// hundreds of samples per time at thousands of updates per worker).
    strides: Strides,
    /// Sampled counts of the times not yet reported.
    counted: BTreeMap<T, Sampled<K>>,
    peers: u64,
}

impl<K: Eq + Clone + Hashable, T: Ord + Clone> Sampling<K, T> {
    /// Nothing counted yet, on worker `me` of `peers`.
    pub(crate) fn new(me: usize, peers: usize) -> Self {
        Sampling {
            strides: Strides::new(me as u64),
            counted: BTreeMap::new(),
            peers: peers as u64,
        }
    }

    /// Counts about one update in [`SAMPLE`] of `key` at `time`.
    #[inline]
    pub(crate) fn observe(&mut self, key: &K, time: &T) {
        if self.strides.next() {
            self.add(key, key_route(key), time);
        }
    }

    /// [`observe`](Self::observe), for a key of route hash `route`.
    #[inline]
    pub(crate) fn observe_route(&mut self, key: &K, route: u64, time: &T) {
        if self.strides.next() {
            self.add(key, route, time);
        }
    }

    /// One sample of `key` (of route hash `route`) at `time`.
    fn add(&mut self, key: &K, route: u64, time: &T) {
        let peers = self.peers as usize;
        let (keys, owned) = self
            .counted
            .entry(time.clone())
            .or_insert_with(|| (KeyCounts::default(), vec![0; peers]));
        keys.add(key, route);
        owned[(route % self.peers) as usize] += SAMPLE;
    }

    /// The sampled counts of the times `done` says are complete (each
    /// with its time), in time order.
    pub(crate) fn take_counted(&mut self, done: impl Fn(&T) -> bool) -> Vec<(T, Sampled<K>)> {
        let mut taken = Vec::new();
        while let Some(entry) = self.counted.first_entry() {
            if !done(entry.key()) {
                break;
            }
            taken.push(entry.remove_entry());
        }
        taken
    }
}

//! Heavy-hitter-aware partial key grouping (Nasir et al., "When Two Choices
//! Are not Enough", ICDE 2016): tail keys as PKG, head keys, found by each
//! sender's own SpaceSaving sketch, spread wider: over d hashed candidates
//! (D-Choices) or over every worker (W-Choices).

use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use crate::common::hash::StableHasher;

use super::candidates::least_loaded;
use super::candidates::{choices, two_choices};
use super::head_shape::{default_threshold, head_choices, HeadShape};
use super::partial_key::less_loaded;
use super::router::{Grouping, Router};
use super::space_saving::SpaceSaving;

/// Where head keys may go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeadSpread {
    /// To the least loaded of d hashed candidates, d from the head's shape.
    DChoices,
    /// To the least loaded of all workers.
    WChoices,
}

/// Counters of each sender's SpaceSaving sketch by default.
pub const DEFAULT_SKETCH: usize = 1000;

/// Messages between re-estimates of the head (its share, size and d).
const REFRESH: u64 = 1024;

/// Messages between halvings of the sketch: the head is judged on about
/// the last few times this many messages, so when popularity drifts the
/// old hot keys fade and the new ones are found.
const DECAY: u64 = 1 << 16;

/// The D-Choices or W-Choices policy.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HeadAware {
    /// Where head keys go.
    pub spread: HeadSpread,
    /// Head threshold θ on a key's estimated share; `None`: 1/(5n).
    pub threshold: Option<f64>,
    /// Counters of the sketch.
    pub sketch: usize,
}

impl HeadAware {
    /// D-Choices with the default threshold and sketch.
    pub fn d_choices() -> Self {
        HeadAware {
            spread: HeadSpread::DChoices,
            threshold: None,
            sketch: DEFAULT_SKETCH,
        }
    }

    /// W-Choices with the default threshold and sketch.
    pub fn w_choices() -> Self {
        HeadAware {
            spread: HeadSpread::WChoices,
            ..Self::d_choices()
        }
    }
}

/// A sender's state: its loads, its sketch, the current d and the
/// candidates of the head keys it has met.
#[derive(Debug, Clone)]
pub struct HeadAwareRouter {
    spread: HeadSpread,
    threshold: f64,
    loads: Vec<u64>,
    sketch: SpaceSaving,
    d: usize,
    candidates: HashMap<u64, Vec<usize>, BuildHasherDefault<StableHasher>>,
    routed: u64,
}

impl HeadAwareRouter {
    /// The number of choices head keys get now.
    pub fn head_choices(&self) -> usize {
        match self.spread {
            HeadSpread::DChoices => self.d,
            HeadSpread::WChoices => self.loads.len(),
        }
    }

    /// The load this sender has sent to each worker.
    pub fn loads(&self) -> &[u64] {
        &self.loads
    }

    /// A key is head when its estimated share exceeds θ; no key is before
    /// the sender has routed `REFRESH` messages (at first every key's share
    /// looks large).
    fn is_head(&self, count: u64) -> bool {
        self.routed >= REFRESH && count as f64 > self.threshold * self.sketch.seen() as f64
    }

    /// Re-estimates the head from the sketch and the d it needs.
    fn refresh(&mut self) {
        let seen = self.sketch.seen().max(1) as f64;
        let head: Vec<u64> = self
            .sketch
            .counters()
            .into_iter()
            .map(|counter| counter.count)
            .filter(|&count| self.is_head(count))
            .collect();
        let shape = HeadShape {
            top: head.first().map_or(0.0, |&count| count as f64 / seen),
            share: head.iter().sum::<u64>() as f64 / seen,
            keys: head.len(),
        };
        let d = head_choices(self.loads.len(), shape);
        // New d, new candidate lists; and keys that stopped being heads (the
        // stream drifts) must not pile up: the cache never outgrows the sketch.
        if d != self.d || self.candidates.len() > self.sketch.capacity() {
            self.d = d;
            self.candidates.clear();
        }
    }
}

impl Grouping for HeadAware {
    type Router = HeadAwareRouter;
    fn router(&self, peers: usize, _sender: usize) -> HeadAwareRouter {
        HeadAwareRouter {
            spread: self.spread,
            threshold: self.threshold.unwrap_or_else(|| default_threshold(peers)),
            loads: vec![0; peers],
            sketch: SpaceSaving::new(self.sketch),
            d: 2.min(peers),
            candidates: HashMap::default(),
            routed: 0,
        }
    }
}

impl Router for HeadAwareRouter {
    fn route(&mut self, key: u64, cost: u64) -> usize {
        let counter = self.sketch.insert(key);
        self.routed += 1;
        if self.routed.is_multiple_of(DECAY) {
            self.sketch.halve();
        }
        if self.routed.is_multiple_of(REFRESH) {
            self.refresh();
        }
        let peers = self.loads.len();
        let destination = if !self.is_head(counter.count) {
            less_loaded(two_choices(key, peers), &self.loads).0
        } else {
            match self.spread {
                HeadSpread::WChoices => least_loaded(0..peers, &self.loads),
                HeadSpread::DChoices => {
                    let d = self.d;
                    let candidates = self.candidates.entry(key).or_insert_with(|| {
                        let mut list = Vec::with_capacity(d);
                        choices(key, peers, d, &mut list);
                        list
                    });
                    least_loaded(candidates.iter().copied(), &self.loads)
                }
            }
        };
        self.loads[destination] += cost;
        destination
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::hash::key_hash;

    #[test]
    fn head_keys_spread_wider_tail_keys_stay_on_two() {
        let peers = 10;
        for policy in [HeadAware::d_choices(), HeadAware::w_choices()] {
            let mut router = policy.router(peers, 0);
            let mut reached: HashMap<u64, Vec<bool>> = HashMap::new();
            // Key 0 carries half the stream, keys 1..=500 the rest.
            for i in 0..100_000u64 {
                let key = key_hash(&if i % 2 == 0 { 0 } else { 1 + (i / 2) % 500 });
                let worker = router.route(key, 1);
                reached.entry(key).or_insert_with(|| vec![false; peers])[worker] = true;
            }
            let spread = |key: u64| reached[&key_hash(&key)].iter().filter(|&&r| r).count();
            assert!(spread(0) > 2, "{policy:?}: hot key on {} workers", spread(0));
            assert!(spread(0) <= router.head_choices(), "{policy:?}");
            for key in 1..=500 {
                assert!(spread(key) <= 2, "{policy:?}: tail key {key} on {}", spread(key));
            }
            // The hot key's half of the stream needs about half the workers.
            if policy.spread == HeadSpread::DChoices {
                assert!(
                    (5..=peers).contains(&router.head_choices()),
                    "d = {}",
                    router.head_choices()
                );
            }
            let loads = router.loads();
            let max = *loads.iter().max().unwrap() as f64;
            let mean = loads.iter().sum::<u64>() as f64 / peers as f64;
            assert!(max / mean < 1.05, "{policy:?}: {loads:?}");
        }
    }
}

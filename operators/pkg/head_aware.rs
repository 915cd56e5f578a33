//! Heavy-hitter-aware partial key grouping (Nasir et al., "When Two Choices
//! Are not Enough", ICDE 2016): tail keys as PKG, head keys, found by each
//! sender's own SpaceSaving sketch, spread wider: over d hashed candidates
//! (D-Choices) or over every worker (W-Choices). Under D-Choices a head key
//! with more than 1/n of the stream also goes to the least loaded of all
//! workers: with d candidates only, a worker that is a candidate of no large
//! head key may never receive its fair share.

use crate::common::hash::splitmix64;
use crate::common::Error;

use super::candidates::{choices, least_loaded, LeastLoaded};
use super::grouping::{Grouping, HeadKey, Router};
use super::head_index::HeadIndex;
use super::head_shape::{default_threshold, head_choices, HeadShape};
use super::partial_key::{Pkg, PkgRouter};
use super::space_saving::{Counter, SpaceSaving};

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

/// Messages between re-estimates of the head (its keys, share and d).
const REFRESH: u64 = 1024;

/// Messages between halvings of the sketch (at most 100 workers): the head
/// is judged on about the last two times this many messages, so when
/// popularity drifts the old hot keys fade and the new ones are found.
const DECAY: u64 = 1 << 16;

/// The fewest samples a key at the threshold must expect before the sketch
/// names heads: fewer, and sampling noise alone lifts tail keys above θ.
const MIN_HEAD_SAMPLES: f64 = 8.0;

/// The fewest messages per sketch update by default (on average); with few
/// workers, where a head key is a larger share, the default samples less
/// often (see [`HeadAware::with_sampling`]).
pub const DEFAULT_SAMPLING: u32 = 16;

/// Samples a key at the threshold expects per halving of the sketch under
/// the default sampling.
const SAMPLES_AT_THRESHOLD: f64 = 32.0;

/// The D-Choices or W-Choices policy.
///
/// ```
/// use equipoise::pkg::HeadAware;
///
/// // D-Choices with a head threshold of 1 % and a sketch of 500 counters.
/// let policy = HeadAware::d_choices().with_threshold(0.01)?.with_sketch(500)?;
/// assert!(HeadAware::d_choices().with_threshold(f64::NAN).is_err());
/// # let _ = policy;
/// # Ok::<(), equipoise::common::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HeadAware {
    spread: HeadSpread,
    /// `None`: 1/(5n).
    threshold: Option<f64>,
    sketch: usize,
    /// `None`: see [`HeadAware::with_sampling`].
    sampling: Option<u32>,
    slack: u64,
}

impl HeadAware {
    /// D-Choices with the default threshold, sketch and sampling.
    pub fn d_choices() -> Self {
        HeadAware {
            spread: HeadSpread::DChoices,
            threshold: None,
            sketch: DEFAULT_SKETCH,
            sampling: None,
            slack: 0,
        }
    }

    /// W-Choices with the default threshold, sketch and sampling.
    pub fn w_choices() -> Self {
        HeadAware {
            spread: HeadSpread::WChoices,
            ..Self::d_choices()
        }
    }

    /// The same with head threshold θ on a key's estimated share, in
    /// (0, 1] (default: 1/(5n) at n workers).
    pub fn with_threshold(self, threshold: f64) -> Result<Self, Error> {
        if !(threshold > 0.0 && threshold <= 1.0) {
            return Err(Error::invalid(
                "D-/W-Choices threshold",
                format!("{threshold}: must be a share in (0, 1]"),
            ));
        }
        Ok(HeadAware {
            threshold: Some(threshold),
            ..self
        })
    }

    /// The same with `sketch` counters in each sender's sketch, 1 to
    /// 2^31 − 1 (each head key's place in the head table is 31 bits;
    /// default [`DEFAULT_SKETCH`]).
    pub fn with_sketch(self, sketch: usize) -> Result<Self, Error> {
        if !(1..ANYWHERE as usize).contains(&sketch) {
            return Err(Error::invalid(
                "D-/W-Choices sketch",
                format!("{sketch} counters: must be 1 to 2^31 - 1"),
            ));
        }
        Ok(HeadAware { sketch, ..self })
    }

    /// The same with the sketch counting one message in `sampling`, 1 to
    /// 65 536, at random gaps (1: every message). Shares are estimated from
    /// the sample; a head key carries at least θ of the stream, so it is
    /// sampled often. By default: as rarely as lets a key at θ expect 32
    /// samples between halvings of the sketch, and at least one message in
    /// [`DEFAULT_SAMPLING`] (one in 16 from 25 workers up, one in 81 at 5).
    pub fn with_sampling(self, sampling: u32) -> Result<Self, Error> {
        if !(1..=MAX_SAMPLING).contains(&sampling) {
            return Err(Error::invalid(
                "D-/W-Choices sampling",
                format!("one message in {sampling}: must be 1 to 65536"),
            ));
        }
        Ok(HeadAware {
            sampling: Some(sampling),
            ..self
        })
    }

    /// The same with the tail keys routed by PKG with `slack` (see
    /// [`Pkg::with_slack`]; 0, the default: the less loaded of their two
    /// candidates, every time).
    pub fn with_slack(self, slack: u64) -> Self {
        HeadAware { slack, ..self }
    }

    /// Where head keys go.
    pub fn spread(&self) -> HeadSpread {
        self.spread
    }
}

/// The rarest sampling: gaps are drawn below 2·sampling in a u32.
const MAX_SAMPLING: u32 = 1 << 16;

/// A head key, its candidates (empty when every worker is one) and the
/// last re-estimate that found it in the head.
#[derive(Debug, Clone)]
struct Head {
    key: u64,
    candidates: Vec<usize>,
    refresh: u64,
}

/// Marks, in the index, a head key that may go to any worker (the rest of
/// a value is the key's place in the head list).
const ANYWHERE: u32 = 1 << 31;

/// A sender's state: its loads, its sketch, the current d and the head
/// keys with their candidates.
#[derive(Debug, Clone)]
pub struct HeadAwareRouter {
    spread: HeadSpread,
    threshold: f64,
    sampling: u32,
    // Tail keys (every key at two workers or fewer) are routed by PKG,
    // whose loads are the sender's loads.
    tail: PkgRouter,
    // Where head keys that may go anywhere go.
    everywhere: LeastLoaded,
    // Touched only at events: kept out of line, so that the state every
    // message touches stays small.
    sketch: Box<SpaceSaving>,
    // Samples at which the sketch is halved, and the fewest at which it
    // names heads (a key at the threshold then expects MIN_HEAD_SAMPLES).
    window: u64,
    warm_at: u64,
    d: usize,
    heads: Vec<Head>,
    // Each head key's place in `heads`, with ANYWHERE set when it may go
    // to any worker: the only lookup most messages make.
    index: HeadIndex,
    // Messages routed up to the last event (a sample or a re-estimate).
    routed: u64,
    // Messages from the last event to the next one the sketch counts, and
    // the generator of the gaps (random so that no periodic pattern in the
    // stream biases the sample).
    until_sample: u64,
    gaps: u64,
    // Messages from the last event to the next, and until then: the only
    // bookkeeping most messages do is to count this down.
    span: u64,
    until_event: u64,
    // Bumped at every change of the head table, for the pacts' log.
    version: u64,
}

impl HeadAwareRouter {
    /// The number of choices head keys get now (under D-Choices, d; keys
    /// with more than 1/n of the stream get every worker).
    pub fn head_choices(&self) -> usize {
        match self.spread {
            HeadSpread::DChoices => self.d,
            HeadSpread::WChoices => self.tail.loads.len(),
        }
    }

    /// The load this sender has sent to each worker.
    pub fn loads(&self) -> &[u64] {
        self.tail.loads()
    }

    /// Whether the sketch has sampled enough to tell heads from the tail.
    #[inline]
    fn warm(&self) -> bool {
        self.sketch.seen() >= self.warm_at
    }

    /// The bookkeeping due at this message (its key is `key`): sample it
    /// into the sketch, re-estimate the head, or both; then the countdown to
    /// the next. Rare once warm (a sample every `sampling` messages on
    /// average, a re-estimate every 1 024), so out of the routing loop.
    #[cold]
    #[inline(never)]
    fn event(&mut self, key: u64) {
        // Messages routed before this one since the last event.
        let before = self.span - 1;
        self.routed += before;
        self.until_sample -= before;
        if self.until_sample == 1 {
            self.sketch.insert(key);
            if self.sketch.seen() >= self.window {
                self.sketch.halve();
            }
            // Every message until a key at the threshold can be told from
            // the tail (the first heads come as soon as without sampling),
            // then a gap uniform in 1..=2·sampling−1: mean `sampling`.
            self.gaps = splitmix64(self.gaps);
            self.until_sample = if self.warm() {
                1 + self.gaps % (2 * u64::from(self.sampling) - 1)
            } else {
                1
            };
        } else {
            self.until_sample -= 1;
        }
        self.routed += 1;
        if self.routed.is_multiple_of(REFRESH) {
            self.refresh();
        }
        // The next event: the next sample or the next re-estimate.
        self.span = self.until_sample.min(REFRESH - self.routed % REFRESH);
        self.until_event = self.span;
    }

    /// Re-estimates the head from the sketch: its keys (estimated share
    /// above θ), their shape, the d it needs and the head keys' candidates.
    fn refresh(&mut self) {
        let refresh = self.routed / REFRESH;
        let seen = self.sketch.seen().max(1) as f64;
        let head = if self.warm() {
            self.sketch.heavier_than((self.threshold * seen) as u64)
        } else {
            Vec::new()
        };
        let peers = self.tail.loads.len();
        // W-Choices sends every head key anywhere: it has no use for d.
        if self.spread == HeadSpread::DChoices {
            self.update_d(peers, &head, seen);
        }
        let (spread, d) = (self.spread, self.d);
        let mut changed = false;
        // Whales (more than one worker's share) go to all workers; a key's
        // share grows after it enters the head, so this is decided anew at
        // every re-estimate.
        let whale = seen / peers as f64;
        for counter in head {
            let everywhere = spread == HeadSpread::WChoices || counter.count as f64 > whale;
            let place = match self.index.get(counter.key) {
                Some(value) => (value & !ANYWHERE) as usize,
                None => {
                    changed = true;
                    self.heads.push(Head {
                        key: counter.key,
                        candidates: Vec::new(),
                        refresh,
                    });
                    self.heads.len() - 1
                }
            };
            let head = &mut self.heads[place];
            head.refresh = refresh;
            if everywhere != head.candidates.is_empty() {
                changed = true;
                head.candidates.clear();
                if !everywhere {
                    choices(counter.key, peers, d, &mut head.candidates);
                }
            }
        }
        // Keys that left the head (the stream drifts) are forgotten.
        let before = self.heads.len();
        self.heads.retain(|head| head.refresh == refresh);
        if changed || self.heads.len() != before {
            self.reindex();
        }
    }

    /// D-Choices' d for the head's shape; a new d gives every head key new
    /// candidates, so the head table starts afresh.
    fn update_d(&mut self, peers: usize, head: &[Counter], seen: f64) {
        let shape = HeadShape {
            top: head.first().map_or(0.0, |counter| counter.count as f64 / seen),
            share: head.iter().map(|counter| counter.count).sum::<u64>() as f64 / seen,
            keys: head.len(),
        };
        let d = head_choices(peers, shape);
        if d != self.d {
            self.d = d;
            self.heads.clear();
            self.reindex();
        }
    }

    /// Routes one message among more than two workers.
    // Forced inline: the batch loop is large, and a call per message costs
    // more than most of its work.
    #[inline(always)]
    fn route_wide(&mut self, key: u64, cost: u64) -> usize {
        self.until_event -= 1;
        if self.until_event == 0 {
            self.event(key);
        }
        let destination = match self.index.get(key) {
            None => return self.tail.route(key, cost),
            Some(value) if value & ANYWHERE != 0 => self.everywhere.find(&self.tail.loads),
            Some(place) => {
                let candidates = &self.heads[place as usize].candidates;
                least_loaded(candidates.len(), |i| candidates[i], &self.tail.loads)
            }
        };
        self.tail.loads[destination] += cost;
        destination
    }

    fn reindex(&mut self) {
        self.version += 1;
        self.index.rebuild(self.heads.iter().enumerate().map(|(place, head)| {
            let anywhere = if head.candidates.is_empty() { ANYWHERE } else { 0 };
            (head.key, place as u32 | anywhere)
        }));
    }
}

impl Grouping for HeadAware {
    type Router = HeadAwareRouter;
    fn router(&self, peers: usize, sender: usize) -> HeadAwareRouter {
        let threshold = self.threshold.unwrap_or_else(|| default_threshold(peers));
        let sampling = self.sampling.unwrap_or_else(|| {
            let rare = (DECAY as f64 * threshold / SAMPLES_AT_THRESHOLD) as u32;
            rare.max(DEFAULT_SAMPLING)
        });
        // The default's bound (a set sampling was checked).
        let sampling = sampling.clamp(1, MAX_SAMPLING);
        let warm_at = (MIN_HEAD_SAMPLES / threshold).ceil().min(u64::MAX as f64 / 4.0) as u64;
        // Halving at `window` samples leaves half of it: one halving per
        // DECAY messages, unless a key at the threshold would then expect
        // fewer than MIN_HEAD_SAMPLES (many workers, a low θ).
        let window = (2 * DECAY / u64::from(sampling)).max(2 * warm_at);
        HeadAwareRouter {
            spread: self.spread,
            threshold,
            sampling,
            tail: Pkg::with_slack(self.slack).router(peers, sender),
            everywhere: LeastLoaded::default(),
            sketch: Box::new(SpaceSaving::new(self.sketch)),
            window,
            warm_at,
            d: 2.min(peers),
            heads: Vec::new(),
            index: HeadIndex::default(),
            routed: 0,
            until_sample: 1,
            gaps: splitmix64(sender as u64),
            span: 1,
            until_event: 1,
            version: 0,
        }
    }
}

impl Router for HeadAwareRouter {
    #[inline]
    fn route(&mut self, key: u64, cost: u64) -> usize {
        // With two workers or one, every key's two candidates are all the
        // workers, so head keys would go where PKG sends them: PKG, without
        // the sketch.
        if self.tail.loads.len() <= 2 {
            return self.tail.route(key, cost);
        }
        self.route_wide(key, cost)
    }

    /// As PKG's: beyond two workers the tail's choice compares two loads.
    fn route_apart(&self) -> bool {
        self.tail.route_apart()
    }

    fn route_each<X>(&mut self, records: impl Iterator<Item = (u64, u64, X)>, mut sink: impl FnMut(usize, X)) {
        if self.tail.loads.len() > 2 {
            return records.for_each(|(key, cost, item)| sink(self.route_wide(key, cost), item));
        }
        self.tail.route_each(records, sink);
    }

    fn head_version(&self) -> u64 {
        self.version
    }

    fn head(&self) -> (usize, Vec<HeadKey>) {
        let peers = self.tail.loads.len();
        let keys = self.heads.iter().map(|head| HeadKey {
            key: head.key,
            workers: if head.candidates.is_empty() {
                peers
            } else {
                head.candidates.len()
            },
        });
        (self.head_choices(), keys.collect())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::common::hash::key_hash;
    use crate::pkg::candidates::two_choices;

    #[test]
    fn batches_route_as_one_by_one_and_two_workers_as_pkg() {
        for peers in 1..=4 {
            for policy in [HeadAware::d_choices(), HeadAware::w_choices()] {
                let (mut one, mut batched, mut pkg) = (
                    policy.router(peers, 0),
                    policy.router(peers, 0),
                    Pkg::default().router(peers, 0),
                );
                // A hot key (a third of the stream) among 300 others.
                let keys: Vec<u64> = (0..50_000u64)
                    .map(|i| key_hash(&if i % 3 == 0 { 0 } else { splitmix64(i) % 300 }))
                    .collect();
                let expected: Vec<usize> = keys.iter().map(|&key| one.route(key, 1)).collect();
                let mut routed = Vec::new();
                for batch in keys.chunks(777) {
                    batched.route_each(batch.iter().map(|&key| (key, 1, ())), |worker, ()| routed.push(worker));
                }
                assert_eq!(routed, expected, "{policy:?} at {peers}");
                if peers <= 2 {
                    let as_pkg: Vec<usize> = keys.iter().map(|&key| pkg.route(key, 1)).collect();
                    assert_eq!(expected, as_pkg, "{policy:?} at {peers}");
                }
            }
        }
    }

    #[test]
    fn the_tail_takes_the_slack() {
        let keys: Vec<u64> = (0..50_000u64)
            .map(|i| key_hash(&if i % 3 == 0 { 0 } else { splitmix64(i) % 3000 }))
            .collect();
        for policy in [HeadAware::d_choices(), HeadAware::w_choices()] {
            let sticky = HeadAware { slack: 64, ..policy };
            // Two workers: PKG with the same slack.
            let (mut router, mut pkg) = (sticky.router(2, 0), Pkg::with_slack(64).router(2, 0));
            for &key in &keys {
                assert_eq!(router.route(key, 1), pkg.route(key, 1), "{policy:?}");
            }
            // Ten workers: tail keys keep to their first worker far more
            // often than without the slack, while the hot key is spread.
            let on_first = |policy: HeadAware| {
                let mut router = policy.router(10, 0);
                let tail = keys.iter().filter(|&&key| key != key_hash(&0));
                let first = keys
                    .iter()
                    .map(|&key| (key, router.route(key, 1)))
                    .filter(|&(key, worker)| key != key_hash(&0) && worker == two_choices(key, 10)[0])
                    .count();
                (first as f64 / tail.count() as f64, router.loads().to_vec())
            };
            let ((plain, _), (kept, loads)) = (on_first(policy), on_first(sticky));
            assert!(plain < 0.8 && kept > 0.95, "{policy:?}: {plain} vs {kept}");
            let (max, min) = (loads.iter().max().unwrap(), loads.iter().min().unwrap());
            assert!(max - min <= 2 * 64 + 2, "{policy:?}: {loads:?}");
        }
    }

    #[test]
    fn the_head_table_follows_a_drifting_head() {
        let peers = 20;
        for policy in [HeadAware::d_choices(), HeadAware::w_choices()] {
            let mut router = policy.router(peers, 0);
            let mut reached: HashMap<u64, Vec<bool>> = HashMap::new();
            // Three phases of 200 000 messages, each with its own five hot
            // keys (a tenth of the stream each) over a shared tail.
            for i in 0..600_000u64 {
                let phase = i / 200_000;
                let key = if i % 2 == 0 {
                    1000 * phase + i % 10 / 2
                } else {
                    10 + splitmix64(i) % 500
                };
                let key = key_hash(&key);
                let worker = router.route(key, 1);
                if i % 200_000 >= 150_000 {
                    reached.entry(key).or_insert_with(|| vec![false; peers])[worker] = true;
                }
                if i % 997 == 0 {
                    // Every head key, and only those, found at its place.
                    for (place, head) in router.heads.iter().enumerate() {
                        let flag = if head.candidates.is_empty() { ANYWHERE } else { 0 };
                        assert_eq!(
                            router.index.get(head.key),
                            Some(place as u32 | flag),
                            "{policy:?} at {i}"
                        );
                    }
                    let tail = key_hash(&(10 + i % 500));
                    let in_head = router.heads.iter().any(|head| head.key == tail);
                    assert_eq!(router.index.get(tail).is_some(), in_head, "{policy:?} at {i}");
                }
            }
            // Late in each phase its hot keys are spread beyond two workers
            // (each needs two of the twenty workers' share).
            for phase in 0..3u64 {
                for hot in 0..5 {
                    let spread = reached[&key_hash(&(1000 * phase + hot))].iter().filter(|&&r| r).count();
                    assert!(spread > 2, "{policy:?}: phase {phase} key {hot} on {spread} workers");
                }
            }
        }
    }

    #[test]
    fn head_keys_spread_wider_tail_keys_stay_on_two() {
        let peers = 20;
        for policy in [HeadAware::d_choices(), HeadAware::w_choices()] {
            let mut router = policy.router(peers, 0);
            let mut reached: HashMap<u64, Vec<bool>> = HashMap::new();
            // Key 0 carries a fifth of the stream (a whale: more than 1/n),
            // key 1 4 % (a head key below 1/n), keys 2..=500 the rest.
            for i in 0..200_000u64 {
                let key = match i % 50 {
                    0..10 => 0,
                    10..12 => 1,
                    _ => 2 + i % 499,
                };
                let key = key_hash(&key);
                let worker = router.route(key, 1);
                reached.entry(key).or_insert_with(|| vec![false; peers])[worker] = true;
            }
            let spread = |key: u64| reached[&key_hash(&key)].iter().filter(|&&r| r).count();
            // The whale needs a fifth of the workers, and may reach all.
            assert!(spread(0) >= 4, "{policy:?}: hot key on {} workers", spread(0));
            match policy.spread {
                HeadSpread::DChoices => {
                    let d = router.head_choices();
                    assert!((2..peers).contains(&d), "d = {d}");
                    assert!(spread(1) <= d, "head key on {} workers, d = {d}", spread(1));
                }
                HeadSpread::WChoices => assert!(spread(1) > 2, "head key on {} workers", spread(1)),
            }
            for key in 2..=500 {
                assert!(spread(key) <= 2, "{policy:?}: tail key {key} on {}", spread(key));
            }
            let loads = router.loads();
            let max = *loads.iter().max().unwrap() as f64;
            let mean = loads.iter().sum::<u64>() as f64 / peers as f64;
            assert!(max / mean < 1.01, "{policy:?}: {loads:?}");
        }
    }
}

//! Which keys make a place skewed: a pass-through operator that samples the
//! keys of the records passing (one in [`SAMPLED`] on average, drawn at
//! random: the others cost nothing), and the worker each lands on, and
//! logs its worker's heaviest keys, named by their `Debug` form, under
//! [`LOG_NAME`]. The skew report lists them per sampled place.
//!
//! Each worker keeps a SpaceSaving summary of [`COUNTERS`] counters over
//! the sampled keys' hashes, the keys that are in it, and its sampled
//! records per landing worker: bounded however long a program runs.

use std::collections::HashMap;
use std::fmt::Debug;
use std::hash::{BuildHasherDefault, Hash};
use std::time::Duration;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::Pipeline;
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::StreamVec;
use timely::progress::Timestamp;

use crate::common::hash::{key_hash, FingerprintHasher};
use crate::pkg::sim::SpaceSaving;

/// The name the doctor's own events are logged under: the key samplers'.
pub const LOG_NAME: &str = "equipoise/doctor";

/// The container builder of [`LOG_NAME`]'s log.
pub type KeysEventBuilder = CapacityContainerBuilder<Vec<(Duration, KeysEvent)>>;

/// Counters of each worker's summary: keys with more than 1/64 of a
/// worker's records are always among them.
pub(crate) const COUNTERS: usize = 64;

/// One record in this many is sampled, on average.
pub(crate) const SAMPLED: u64 = 64;

/// Keys each event names, the heaviest first.
const NAMED: usize = 10;

/// A sampler logs again after this many records even if its input's
/// frontier has not moved.
const LOG_EVERY: u64 = 1 << 16;

/// What one worker's key sampler has seen so far.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeysEvent {
    /// The name the program gave the place.
    pub place: String,
    /// The sampler's address in the dataflow.
    pub address: Vec<usize>,
    /// The sampling worker.
    pub worker: usize,
    /// Records it has seen.
    pub records: u64,
    /// Of those, how many it sampled.
    #[serde(default)]
    pub sampled: u64,
    /// Of the sampled, how many land on each worker, by index.
    pub landed: Vec<u64>,
    /// Its heaviest keys, the heaviest first.
    pub keys: Vec<SampledKey>,
}

/// One key as a worker's sampler counted it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SampledKey {
    /// Its `Debug` form.
    pub key: String,
    /// Its hash, the same on every worker.
    pub hash: u64,
    /// Its sampled records on this worker: at most this many...
    pub records: u64,
    /// ... and at least `records - error`.
    pub error: u64,
    /// The worker it lands on.
    pub worker: usize,
}

/// One worker's sample of a place's keys: a pure summary, fed a batch of
/// records at a time.
#[derive(Debug)]
pub(crate) struct KeySample<K> {
    sketch: SpaceSaving,
    /// The keys in the summary (and some evicted, pruned in bulk), by
    /// their hashes: a cheap hasher suffices.
    names: HashMap<u64, (K, usize), BuildHasherDefault<FingerprintHasher>>,
    landed: Vec<u64>,
    records: u64,
    /// Records to pass before the next sampled one.
    skip: u64,
    random: SmallRng,
}

impl<K: Debug> KeySample<K> {
    /// A sample over `peers` workers, its draws seeded by `seed`.
    pub(crate) fn new(peers: usize, seed: u64) -> Self {
        let mut sample = KeySample {
            sketch: SpaceSaving::new(COUNTERS),
            names: HashMap::default(),
            landed: vec![0; peers.max(1)],
            records: 0,
            skip: 0,
            random: SmallRng::seed_from_u64(seed),
        };
        sample.skip = sample.gap();
        sample
    }

    /// Records to the next sampled one: geometric, so that each record is
    /// sampled with probability 1 / [`SAMPLED`] whatever came before.
    fn gap(&mut self) -> u64 {
        let uniform: f64 = self.random.random_range(f64::MIN_POSITIVE..1.0);
        (uniform.ln() / (1.0 - 1.0 / SAMPLED as f64).ln()) as u64
    }

    /// Samples a batch of `len` records: calls `sampled` with the index of
    /// each record drawn, which returns its key, hash and route.
    pub(crate) fn batch(&mut self, len: usize, mut sampled: impl FnMut(usize) -> (K, u64, u64)) {
        self.records += len as u64;
        let mut at = self.skip;
        while at < len as u64 {
            let (key, hash, route) = sampled(at as usize);
            self.observe(key, hash, route);
            at += 1 + self.gap();
        }
        self.skip = at - len as u64;
    }

    /// Counts one sampled record of `key`, whose hash is `hash` and whose
    /// route (as timely's exchange takes it) is `route`.
    fn observe(&mut self, key: K, hash: u64, route: u64) {
        let worker = (route % self.landed.len() as u64) as usize;
        self.landed[worker] += 1;
        let counter = self.sketch.insert(hash);
        // Its first record since it entered the summary: name it.
        if counter.count == counter.error + 1 {
            self.names.insert(hash, (key, worker));
            if self.names.len() > 4 * COUNTERS {
                let sketch = &self.sketch;
                self.names.retain(|hash, _| sketch.counter(*hash).is_some());
            }
        }
    }

    pub(crate) fn records(&self) -> u64 {
        self.records
    }

    /// The event naming the heaviest keys so far.
    pub(crate) fn event(&self, place: &str, address: &[usize], worker: usize) -> KeysEvent {
        let keys = self
            .sketch
            .counters()
            .into_iter()
            .take(NAMED)
            .filter_map(|counter| {
                let (key, worker) = self.names.get(&counter.key)?;
                Some(SampledKey {
                    key: format!("{key:?}"),
                    hash: counter.key,
                    records: counter.count,
                    error: counter.error,
                    worker: *worker,
                })
            })
            .collect();
        KeysEvent {
            place: place.to_owned(),
            address: address.to_vec(),
            worker,
            records: self.records,
            sampled: self.sketch.seen(),
            landed: self.landed.clone(),
            keys,
        }
    }
}

/// Naming the keys that make a timely stream skewed.
pub trait SampleKeys<'scope, T: Timestamp, D> {
    /// The same stream, its records' keys sampled on the way for the skew
    /// report: `key` gives a record's key, and `route` the hash that sends
    /// it to a worker, as `Exchange::new(route)` takes it (the exchange
    /// downstream, whose skew the sample explains). The report names,
    /// under `place`, the keys with the largest share of the records and
    /// the worker each lands on.
    ///
    /// ```
    /// use equipoise::doctor::{self, SampleKeys};
    /// use timely::dataflow::operators::{Exchange, Inspect, ToStream};
    ///
    /// timely::execute(timely::Config::process(2), |worker| {
    ///     let doctor = doctor::register(worker);
    ///     worker.dataflow::<u64, _, _>(|scope| {
    ///         // Key 7 brings half the records.
    ///         (0..400_000u64)
    ///             .map(|i| if i % 2 == 0 { 7 } else { i })
    ///             .to_stream(scope)
    ///             .sample_keys("words", |word: &u64| *word, |word: &u64| *word)
    ///             .exchange(|word: &u64| *word)
    ///             .inspect(|_| ());
    ///     });
    ///     while worker.step() {}
    ///     if let Some(report) = doctor.report(worker) {
    ///         let words = report.keys("words").expect("sampled");
    ///         let hottest = &words.keys[0];
    ///         assert_eq!((hottest.key.as_str(), hottest.worker), ("7", 1));
    ///         // One record in 64 is sampled, at random: about a half.
    ///         assert!((hottest.share - 0.5).abs() < 0.03);
    ///     }
    /// })
    /// .unwrap();
    /// ```
    fn sample_keys<K, KF, RF>(self, place: &str, key: KF, route: RF) -> Self
    where
        K: Debug + Hash + 'static,
        KF: Fn(&D) -> K + 'static,
        RF: Fn(&K) -> u64 + 'static;
}

impl<'scope, T: Timestamp, D: Clone + 'static> SampleKeys<'scope, T, D> for StreamVec<'scope, T, D> {
    fn sample_keys<K, KF, RF>(self, place: &str, key: KF, route: RF) -> Self
    where
        K: Debug + Hash + 'static,
        KF: Fn(&D) -> K + 'static,
        RF: Fn(&K) -> u64 + 'static,
    {
        let scope = self.scope();
        let (me, peers) = (scope.index(), scope.peers());
        let Some(logger) = scope.worker().logger_for::<KeysEventBuilder>(LOG_NAME) else {
            // Nobody listens: the records pass untouched.
            return self;
        };
        let place = place.to_owned();
        let name = format!("SampleKeys: {place}");
        self.unary_frontier(Pipeline, &name, move |_, info| {
            let mut sample = KeySample::new(peers, key_hash(&(&info.address[..], me)));
            let (mut logged_at, mut frontier_then) = (0, Vec::new());
            move |(input, frontier), output| {
                input.for_each_stamp(|cap, batches| {
                    let mut session = output.session(&cap);
                    for batch in batches {
                        sample.batch(batch.len(), |at| {
                            let key = key(&batch[at]);
                            let (hash, to) = (key_hash(&key), route(&key));
                            (key, hash, to)
                        });
                        session.give_container(batch);
                    }
                });
                // The frontier is copied only when it moved: not on every activation.
                let moved = *frontier.frontier() != frontier_then[..];
                if moved {
                    frontier_then = frontier.frontier().to_vec();
                }
                let seen = sample.records();
                if seen > logged_at && (moved || seen - logged_at >= LOG_EVERY) {
                    logger.log(sample.event(&place, &info.address, me));
                    logged_at = seen;
                }
            }
        })
    }
}

#[cfg(feature = "differential")]
mod collection {
    use differential_dataflow::{AsCollection, Hashable, VecCollection};

    use super::*;

    /// Naming the keys that make a differential collection skewed.
    pub trait SampleCollectionKeys<'scope, T: Timestamp, D, R> {
        /// The same collection, its updates' keys sampled on the way for
        /// the skew report, each landing where differential's operators
        /// keyed by it (`arrange_by_key`, `join`, `reduce`, `count`) send
        /// it. The report names, under `place`, the keys with the largest
        /// share of the updates.
        ///
        /// ```
        /// use differential_dataflow::input::Input;
        /// use equipoise::doctor::{self, SampleCollectionKeys};
        ///
        /// timely::execute(timely::Config::process(2), |worker| {
        ///     let doctor = doctor::register(worker);
        ///     worker.dataflow::<u64, _, _>(|scope| {
        ///         let keys = (0..400_000u64).map(|i| if i % 4 == 0 { 3 } else { i });
        ///         let (_, keys) = scope.new_collection_from(keys);
        ///         keys.sample_keys("counted", |key: &u64| *key).count();
        ///     });
        ///     while worker.step() {}
        ///     if let Some(report) = doctor.report(worker) {
        ///         let counted = report.keys("counted").expect("sampled");
        ///         assert_eq!(counted.keys[0].key, "3");
        ///         assert!((counted.keys[0].share - 0.25).abs() < 0.03);
        ///     }
        /// })
        /// .unwrap();
        /// ```
        fn sample_keys<K, KF>(self, place: &str, key: KF) -> Self
        where
            K: Debug + Hash + 'static,
            KF: Fn(&D) -> K + 'static;
    }

    impl<'scope, T: Timestamp, D: Clone + 'static, R: Clone + 'static> SampleCollectionKeys<'scope, T, D, R>
        for VecCollection<'scope, T, D, R>
    {
        fn sample_keys<K, KF>(self, place: &str, key: KF) -> Self
        where
            K: Debug + Hash + 'static,
            KF: Fn(&D) -> K + 'static,
        {
            self.inner
                .sample_keys(place, move |(data, _, _): &(D, T, R)| key(data), |key: &K| key.hashed())
                .as_collection()
        }
    }
}

#[cfg(feature = "differential")]
pub use collection::SampleCollectionKeys;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_with_half_the_records_is_named_near_its_share_and_landing_worker() {
        let mut sample = KeySample::new(4, 7);
        let keys: Vec<u64> = (0..256_000u64)
            .map(|i| if i % 2 == 0 { 42 } else { i * 7919 % 10_007 })
            .collect();
        for batch in keys.chunks(1000) {
            sample.batch(batch.len(), |at| (batch[at], key_hash(&batch[at]), batch[at]));
        }
        let event = sample.event("here", &[0, 3], 1);
        assert_eq!(event.records, 256_000);
        // About one record in SAMPLED, drawn at random: within five
        // standard deviations.
        let expected = 256_000.0 / SAMPLED as f64;
        assert!(
            (event.sampled as f64 - expected).abs() < 5.0 * expected.sqrt(),
            "{}",
            event.sampled
        );
        let top = &event.keys[0];
        assert_eq!((top.key.as_str(), top.worker), ("42", 42 % 4));
        let share = (top.records - top.error) as f64 / event.sampled as f64;
        assert!((share - 0.5).abs() < 0.03, "{share}");
        // Every sampled record landed by its route: key 42's worker holds
        // its share and about a quarter of the rest.
        assert_eq!(event.landed.iter().sum::<u64>(), event.sampled);
        let own = event.landed[2] as f64 / event.sampled as f64;
        assert!((own - 0.625).abs() < 0.03, "{own}");
        assert!(sample.names.len() <= 4 * COUNTERS + 1);
    }

    #[test]
    fn a_batch_shorter_than_the_gap_samples_nothing_and_carries_it_on() {
        let mut sample: KeySample<u64> = KeySample::new(2, 1);
        let gap = sample.skip;
        let mut drawn = Vec::new();
        sample.batch(gap as usize, |at| {
            drawn.push(at);
            (0, 0, 0)
        });
        assert!(drawn.is_empty());
        sample.batch(1, |at| {
            drawn.push(at);
            (0, 0, 0)
        });
        assert_eq!(drawn, [0]);
    }
}

//! Combining each hot key's updates on the worker where they arise, before
//! they are exchanged: what makes a count or a distinct skew-proof. Any
//! grouping of a collection's updates that sums the differences of equal
//! records at equal times leaves the collection unchanged, so the count
//! that follows is exact whatever each worker combines; a hot key then
//! reaches its owner as one update per worker, time and delivery, not as
//! its share of the stream. Each worker decides alone which keys to combine, from
//! its own sampled counts: nothing to agree on, nothing to wait for. Until
//! its first window of samples ends it combines every key: at the start
//! nothing is known yet, and a whole first time's updates may arrive at once.

use differential_dataflow::consolidation::consolidate_updates;
use differential_dataflow::difference::Semigroup;
use differential_dataflow::{AsCollection, ExchangeData, Hashable, VecCollection};
use timely::dataflow::channels::pact::Pipeline;
use timely::dataflow::operators::generic::Operator;
use timely::progress::Timestamp;

use super::events::{log_sent, Sent, SkewEvent, SkewEventBuilder, LOG_NAME};
use super::key_index::key_route;
use super::key_index::{ByHash, KeyIndex};
use super::sample::{KeyCounts, Strides, SAMPLE};
use super::settings::Skew;

/// Samples per decision: a worker decides anew which keys it combines
/// after about this many × [`SAMPLE`] updates. The first windows are
/// shorter, doubling from [`FIRST_WINDOW`], so that the hottest keys are
/// combined within a thousand updates of the start.
const WINDOW: u64 = 4096;

const FIRST_WINDOW: u64 = 64;

/// The (record, time) pairs of one key searched for an equal one before
/// another is added.
const SCAN: usize = 8;

/// The keys one worker combines (those it sees often: not the joins' hot
/// keys, which are split), and the samples it decides the next ones from.
#[derive(Debug)]
pub(crate) struct Frequent<D> {
    /// The keys combined now.
    keys: KeyIndex<D, ()>,
    /// The share of the samples that makes a key combined
    /// ([`Skew::with_combine_share`]).
    share: f64,
    strides: Strides,
    /// Samples of the current window, per key.
    counts: KeyCounts<D>,
    samples: u64,
    /// The current window's length in samples.
    window: u64,
    /// Whether no window has ended yet: until one has, every key is
    /// combined (nothing is known, and the start is when a hot key's
    /// updates are most concentrated on its owner).
    first: bool,
}

impl<D: Eq + Clone> Frequent<D> {
    pub(crate) fn new(seed: u64, share: f64) -> Self {
        Frequent {
            keys: KeyIndex::default(),
            share,
            strides: Strides::new(seed),
            counts: KeyCounts::default(),
            samples: 0,
            window: FIRST_WINDOW,
            first: true,
        }
    }

    /// Whether to combine an update of `key` (of route hash `route`), which
    /// this call may also sample. True when the keys combined change: the
    /// window has ended.
    #[inline]
    pub(crate) fn observe(&mut self, route: u64, key: &D) -> (bool, bool) {
        let mut changed = false;
        if self.strides.next() {
            self.counts.add(key, route);
            self.samples += 1;
            if self.samples == self.window {
                changed = self.decide();
            }
        }
        (self.first || self.keys.get(key, route).is_some(), changed)
    }

    /// Ends a window: the keys with at least 2 samples and the combine
    /// share of them are combined from now on. Whether the keys changed.
    fn decide(&mut self) -> bool {
        let least = ((self.window as f64 * self.share) as u64).max(2) * SAMPLE;
        let keys: Vec<(u64, D, ())> = self
            .counts
            .drain()
            .filter(|&(_, _, count)| count >= least)
            .map(|(route, key, _)| (route, key, ()))
            .collect();
        self.samples = 0;
        self.window = (2 * self.window).min(WINDOW);
        let first = std::mem::take(&mut self.first);
        self.keys.replace(keys) || first
    }

    /// The route hashes of the keys combined now.
    pub(crate) fn routes(&self) -> Vec<u64> {
        self.keys.routes()
    }
}

/// `collection` with each worker's updates summed per record and time
/// within each delivery (the updates of one stamp the operator holds at
/// once): one sort of the delivery, no state between deliveries.
pub(crate) fn combine_every<'scope, T, D, R>(
    collection: VecCollection<'scope, T, D, R>,
) -> VecCollection<'scope, T, D, R>
where
    T: Timestamp,
    D: ExchangeData,
    R: ExchangeData + Semigroup,
{
    collection
        .inner
        .unary(Pipeline, "SkewCombineEvery", |_, _| {
            let mut held = Vec::new();
            move |input, output| {
                input.for_each_stamp(|cap, batches| {
                    held.extend(batches.flat_map(|batch| batch.drain(..)));
                    consolidate_updates(&mut held);
                    output.session(&cap).give_iterator(held.drain(..));
                });
            }
        })
        .as_collection()
}

/// `collection` with each worker's updates of the keys it sees often
/// summed per record and time within each delivery (the updates of one
/// stamp the operator holds at once), the others passed on as they came.
pub(crate) fn combine_frequent<'scope, T, D, R>(
    collection: VecCollection<'scope, T, D, R>,
    skew: &Skew,
) -> VecCollection<'scope, T, D, R>
where
    T: Timestamp,
    D: ExchangeData + Hashable,
    R: ExchangeData + Semigroup,
{
    let scope = collection.inner.scope();
    let (me, peers) = (scope.index(), scope.peers() as u64);
    let logger = scope.worker().logger_for::<SkewEventBuilder>(LOG_NAME);
    let share = skew.combine_share;
    collection
        .inner
        .unary(Pipeline, "SkewCombine", move |_, _| {
            let mut frequent = Frequent::new(me as u64, share);
            // One delivery's combined updates, by route hash.
            let mut combined: ByHash<Vec<(D, T, R)>> = ByHash::default();
            let mut sent = Sent::new(peers as usize, logger.is_some());
            move |input, output| {
                input.for_each_stamp(|cap, batches| {
                    let mut session = output.session(&cap);
                    for (data, time, diff) in batches.flat_map(|batch| batch.drain(..)) {
                        let route = key_route(&data);
                        let (combine, changed) = frequent.observe(route, &data);
                        if changed && let Some(logger) = &logger {
                            logger.log(SkewEvent::Combined {
                                worker: me,
                                keys: frequent.routes(),
                            });
                        }
                        if combine {
                            // A few (record, time) pairs per key are summed in place; more
                            // (fine-grained times) are consolidated once, at the end.
                            let held = combined.entry(route).or_default();
                            match held.iter_mut().take(SCAN).find(|(d, t, _)| *d == data && *t == time) {
                                Some((_, _, sum)) => sum.plus_equals(&diff),
                                None => held.push((data, time, diff)),
                            }
                        } else {
                            sent.to((route % peers) as usize);
                            session.give((data, time, diff));
                        }
                    }
                    for (route, mut held) in combined.drain() {
                        if held.len() > SCAN {
                            consolidate_updates(&mut held);
                        }
                        for update in held.into_iter().filter(|(_, _, diff)| !diff.is_zero()) {
                            sent.to((route % peers) as usize);
                            session.give(update);
                        }
                    }
                });
                if let Some(logger) = &logger {
                    let mut total = vec![0; peers as usize];
                    sent.take_into(&mut total);
                    log_sent(logger, me, total);
                }
            }
        })
        .as_collection()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::hash::splitmix64;

    #[test]
    fn the_keys_that_recur_are_combined_and_the_rest_are_not() {
        let mut hot = Frequent::new(1, Skew::default().combine_share);
        // Key 0 takes a tenth of the updates, key 1 a hundredth, the rest
        // are distinct.
        let key = |i: u64| match i % 100 {
            0..=9 => 0,
            10 => 1,
            _ => 1_000 + i,
        };
        let updates = 3 * WINDOW * SAMPLE;
        let mut combined = [0u64; 3];
        for i in 0..updates {
            let k = key(i);
            let (combine, _) = hot.observe(splitmix64(k), &k);
            if i >= updates / 2 && combine {
                combined[k.min(2) as usize] += 1;
            }
        }
        let later = |k: u64| (updates / 2..updates).filter(|&i| key(i) == k).count() as u64;
        assert_eq!(combined[0], later(0), "the hot key, always");
        assert_eq!(combined[1], later(1), "the key of 1 %, always");
        assert_eq!(combined[2], 0, "no distinct key");
        assert_eq!(hot.routes().len(), 2);
    }

    #[test]
    fn every_key_is_combined_until_the_first_window_ends() {
        let mut hot = Frequent::new(3, Skew::default().combine_share);
        let mut i = 0;
        loop {
            let key = 1_000 + i;
            let (combine, changed) = hot.observe(splitmix64(key), &key);
            if changed {
                break;
            }
            assert!(combine, "update {i}, before any window ended");
            i += 1;
        }
        // About FIRST_WINDOW samples of distinct keys: none is combined after.
        assert!(
            (FIRST_WINDOW * SAMPLE / 2..FIRST_WINDOW * SAMPLE * 2).contains(&i),
            "{i}"
        );
        assert!(!hot.observe(splitmix64(7), &7).0);
    }

    #[test]
    fn a_key_that_cools_is_no_longer_combined() {
        let mut hot = Frequent::new(2, Skew::default().combine_share);
        let rounds = WINDOW * SAMPLE;
        for i in 0..2 * rounds {
            hot.observe(splitmix64(i % 10), &(i % 10));
        }
        assert_eq!(hot.routes().len(), 10);
        for i in 0..2 * rounds {
            hot.observe(splitmix64(100 + i), &(100 + i));
        }
        assert!(hot.routes().is_empty());
        assert!(!hot.observe(splitmix64(3), &3).0);
    }
}

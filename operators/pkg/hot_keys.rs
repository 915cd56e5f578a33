//! Which keys a skew-proof differential operator splits, and over which
//! workers: decided on one worker from every sender's per-time counts, so
//! that every worker routes a key alike at every time. A key once hot stays
//! hot (its parts may only widen): the workers that received a part of it
//! keep a copy of the other side for good, which is what makes any split of
//! its updates exact.

use std::collections::HashMap;
use std::hash::Hash;

use crate::common::Error;

/// How a skew-proof operator finds hot keys and splits them.
///
/// A key is hot once its updates, decayed over the last few times, reach
/// `hot_share` of a worker's mean share (and at least
/// [`min_updates`](Skew::with_min_updates)); it is then split over as
/// many workers as keep each part under that share, at least 2. At most
/// [`max_hot`](Skew::with_max_hot) keys are ever hot: each costs copies of
/// the other side's updates for its key on its extra workers.
///
/// ```
/// use equipoise::pkg::Skew;
///
/// let skew = Skew::default().with_hot_share(0.25)?.with_max_hot(256)?;
/// assert!(Skew::default().with_hot_share(0.0).is_err());
/// # let _ = skew;
/// # Ok::<(), equipoise::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Skew {
    hot_share: f64,
    min_updates: u64,
    max_hot: usize,
}

impl Default for Skew {
    fn default() -> Self {
        Skew {
            hot_share: 0.1,
            min_updates: 64,
            max_hot: 4096,
        }
    }
}

impl Skew {
    /// A key is hot once it carries this share of a worker's mean load, in
    /// (0, 1] (default 0.25: a key with a quarter of a worker's work is
    /// split, so that each part is under a quarter too).
    pub fn with_hot_share(self, hot_share: f64) -> Result<Self, Error> {
        if !(hot_share > 0.0 && hot_share <= 1.0) {
            return Err(Error::invalid(
                "skew hot share",
                format!("{hot_share}: must be a share of a worker's load in (0, 1]"),
            ));
        }
        Ok(Skew { hot_share, ..self })
    }

    /// A key is hot only once its decayed count of updates reaches this
    /// (default 64), so that a few updates in a quiet time split nothing.
    pub fn with_min_updates(self, min_updates: u64) -> Result<Self, Error> {
        Ok(Skew { min_updates, ..self })
    }

    /// At most this many keys are ever hot, at least 1 (default 4096).
    pub fn with_max_hot(self, max_hot: usize) -> Result<Self, Error> {
        if max_hot == 0 {
            return Err(Error::invalid("skew max hot keys", "0: must be at least 1"));
        }
        Ok(Skew { max_hot, ..self })
    }

    /// Whether a sender reports a key it counted `count` times out of
    /// `total` at one time to the worker deciding: a key at the hot share
    /// on every sender passes at half of it.
    pub(crate) fn reports(&self, count: u64, total: u64, peers: usize) -> bool {
        count as f64 * 2.0 * peers as f64 >= self.hot_share * total as f64
    }
}

/// The decisions, kept on the worker that makes them.
#[derive(Debug)]
pub(crate) struct HotKeys<K> {
    peers: usize,
    skew: Skew,
    /// Decayed counts of the keys reported lately (halved at every time).
    counts: HashMap<K, f64>,
    /// Decayed count of all updates.
    total: f64,
    /// Each hot key's workers.
    hot: HashMap<K, Vec<usize>>,
}

impl<K: Hash + Eq + Clone> HotKeys<K> {
    pub(crate) fn new(peers: usize, skew: Skew) -> Self {
        HotKeys {
            peers,
            skew,
            counts: HashMap::new(),
            total: 0.0,
            hot: HashMap::new(),
        }
    }

    /// Ends a time whose updates numbered `total`, of which `counts` were
    /// counted per reported key (`owner` names the worker a cold key's
    /// updates go to): the keys newly hot or split wider, each with all the
    /// workers it goes to from now on (those it had first).
    pub(crate) fn end_time(
        &mut self,
        counts: impl IntoIterator<Item = (K, u64)>,
        total: u64,
        owner: impl Fn(&K) -> usize,
    ) -> Vec<(K, Vec<usize>)> {
        self.total = self.total / 2.0 + total as f64;
        self.counts.retain(|_, count| {
            *count /= 2.0;
            *count >= 1.0
        });
        let mut seen = Vec::new();
        for (key, count) in counts {
            *self.counts.entry(key.clone()).or_default() += count as f64;
            seen.push(key);
        }
        if self.peers < 2 {
            return Vec::new();
        }
        // Each part at most the hot share of a worker's mean load.
        let part = self.skew.hot_share * self.total / self.peers as f64;
        let mut wanted: Vec<(K, usize)> = Vec::new();
        for key in seen {
            let count = self.counts[&key];
            if count < part || count < self.skew.min_updates as f64 {
                continue;
            }
            let parts = ((count / part).ceil() as usize).clamp(2, self.peers);
            match self.hot.get(&key) {
                // Widened only on doubling: each widening moves some of the
                // key's records to new workers.
                Some(workers) if parts >= 2 * workers.len() || (parts == self.peers && workers.len() < parts) => {
                    wanted.push((key, parts))
                }
                Some(_) => {}
                None if self.hot.len() + wanted.len() < self.skew.max_hot => wanted.push((key, parts)),
                None => {}
            }
        }
        if wanted.is_empty() {
            return Vec::new();
        }
        // The heaviest first, each part to the least loaded worker.
        let mut load = self.loads(&owner);
        wanted.sort_by(|(a, _), (b, _)| self.counts[b].total_cmp(&self.counts[a]));
        let mut changes = Vec::new();
        for (key, parts) in wanted {
            let count = self.counts[&key];
            let mut workers = self.hot.remove(&key).unwrap_or_default();
            // The key's load leaves where it is now, and is dealt anew.
            match workers.len() {
                0 => load[owner(&key)] -= count,
                held => workers.iter().for_each(|&w| load[w] -= count / held as f64),
            }
            let mut others: Vec<usize> = (0..self.peers).filter(|w| !workers.contains(w)).collect();
            others.sort_by(|&a, &b| load[a].total_cmp(&load[b]));
            workers.extend(others.into_iter().take(parts - workers.len()));
            workers.iter().for_each(|&w| load[w] += count / parts as f64);
            self.hot.insert(key.clone(), workers.clone());
            changes.push((key, workers));
        }
        changes
    }

    /// Each worker's load as the decayed counts tell it: the hot keys dealt
    /// evenly over their workers, the reported cold keys on their owners,
    /// the rest evenly.
    fn loads(&self, owner: impl Fn(&K) -> usize) -> Vec<f64> {
        let mut load = vec![0.0; self.peers];
        let mut counted = 0.0;
        for (key, &count) in &self.counts {
            counted += count;
            match self.hot.get(key) {
                Some(workers) => workers.iter().for_each(|&w| load[w] += count / workers.len() as f64),
                None => load[owner(key)] += count,
            }
        }
        let rest = (self.total - counted).max(0.0) / self.peers as f64;
        load.iter_mut().for_each(|l| *l += rest);
        load
    }
}

/// The part, of `parts`, a record of hash `hash` goes to: by jump
/// consistent hashing (Lamping and Veach), so that when a key is split
/// wider only the records the new parts take move.
pub(crate) fn part(hash: u64, parts: usize) -> usize {
    let (mut key, mut bucket, mut next) = (hash, -1i64, 0i64);
    while next < parts as i64 {
        bucket = next;
        key = key.wrapping_mul(2862933555777941757).wrapping_add(1);
        next = ((bucket + 1) as f64 * ((1u64 << 31) as f64 / ((key >> 33) + 1) as f64)) as i64;
    }
    bucket as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::hash::splitmix64;

    /// Keys "a" to "z" owned by worker (letter index) % peers.
    fn owner(peers: usize) -> impl Fn(&&str) -> usize {
        move |key: &&str| (key.as_bytes()[0] - b'a') as usize % peers
    }

    #[test]
    fn a_key_over_the_hot_share_is_split_so_that_each_part_is_under_it() {
        let mut hot = HotKeys::new(8, Skew::default().with_hot_share(0.5).unwrap());
        // 8 000 updates at one time over 8 workers: the mean is 1 000, the hot share 500.
        let mut changes = hot.end_time([("a", 2_400), ("b", 400), ("c", 600)], 8_000, owner(8));
        changes.sort();
        let parts: Vec<(&str, usize)> = changes.iter().map(|(key, workers)| (*key, workers.len())).collect();
        assert_eq!(parts, vec![("a", 5), ("c", 2)]);
        for (_, workers) in &changes {
            let mut distinct = workers.clone();
            distinct.sort();
            distinct.dedup();
            assert_eq!(distinct.len(), workers.len());
        }
        // "c" kept off the workers "a" took first (then the most loaded).
        assert!(changes[1].1.iter().all(|w| !changes[0].1.contains(w)), "{changes:?}");
        // The same again: nothing new (the decayed counts grow, but not to double the parts).
        assert!(hot.end_time([("a", 2_400), ("c", 600)], 8_000, owner(8)).is_empty());
        // "a" grows to four times its share: split wider, keeping its workers first.
        let wider = hot.end_time([("a", 7_000)], 8_000, owner(8));
        assert_eq!(wider.len(), 1);
        assert_eq!(wider[0].1.len(), 8);
        assert_eq!(wider[0].1[..5], changes[0].1[..]);
    }

    #[test]
    fn parts_go_to_the_least_loaded_workers() {
        let mut hot = HotKeys::new(4, Skew::default());
        // "e" (owned by worker 0) and "b" (worker 1) are reported but not
        // hot; "a" is hot in 2 parts: workers 2 and 3 carry the least.
        let changes = hot.end_time([("a", 900), ("e", 240), ("b", 200)], 8_000, owner(4));
        let mut workers = changes[0].1.clone();
        workers.sort();
        assert_eq!(workers, vec![2, 3]);
    }

    #[test]
    fn few_updates_split_nothing_and_the_limit_holds() {
        let mut hot = HotKeys::new(4, Skew::default());
        assert!(hot.end_time([("a", 30)], 40, owner(4)).is_empty());
        let mut hot = HotKeys::new(4, Skew::default().with_max_hot(1).unwrap());
        assert_eq!(hot.end_time([("a", 3_000), ("b", 3_000)], 8_000, owner(4)).len(), 1);
        // One worker: nothing to split over.
        assert!(HotKeys::new(1, Skew::default())
            .end_time([("a", 3_000)], 3_000, owner(1))
            .is_empty());
    }

    #[test]
    fn parts_are_even_and_move_little_when_widened() {
        let (records, mut counts, mut moved) = (40_000u64, [0u32; 5], 0);
        for r in 0..records {
            let hash = splitmix64(r);
            let p = part(hash, 5);
            counts[p] += 1;
            let wider = part(hash, 8);
            if wider != p {
                // Only to the new parts.
                assert!(wider >= 5);
                moved += 1;
            }
        }
        assert!(counts.iter().all(|&c| (7_500..8_500).contains(&c)), "{counts:?}");
        // 3 of 8 parts are new: about 3/8 of the records move.
        assert!((13_000..17_000).contains(&moved), "{moved}");
    }
}

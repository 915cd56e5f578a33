//! Which keys a skew-proof differential operator splits, and over which
//! workers: decided on one worker from every sender's per-time counts, and
//! sent to every worker with the time it holds from. A key once hot stays
//! hot: the workers that received a part of it keep a copy of the other
//! side for good, which is what makes any split of its updates exact.

use std::collections::HashMap;
use std::hash::Hash;

use super::settings::Skew;

/// A hot key's workers, each with the share of the key's updates it takes
/// (the shares sum to 1).
pub(crate) type Shares = Vec<(usize, f64)>;

/// The decisions, kept on the worker that makes them.
#[derive(Debug)]
pub(crate) struct HotKeys<K> {
    peers: usize,
    skew: Skew,
    /// Decayed counts of the keys reported lately (halved at every time).
    counts: HashMap<K, f64>,
    /// Decayed count of all updates.
    total: f64,
    /// Decayed updates per worker their keys' owners are, as if no key
    /// were hot.
    owned: Vec<f64>,
    /// Each hot key's shares, and its share of all updates when they were
    /// dealt.
    hot: HashMap<K, (Shares, f64)>,
}

impl<K: Hash + Eq + Clone> HotKeys<K> {
    pub(crate) fn new(peers: usize, skew: Skew) -> Self {
        HotKeys {
            peers,
            skew,
            counts: HashMap::new(),
            total: 0.0,
            owned: vec![0.0; peers],
            hot: HashMap::new(),
        }
    }

    /// Ends a time whose updates numbered `owned[w]` of keys owned by
    /// worker w (`owner` names a key's), of which `counts` were counted per
    /// reported key: the keys newly hot or dealt anew (on their share doubling), each
    /// with its shares from now on.
    #[cfg(test)]
    fn end_time(
        &mut self,
        counts: impl IntoIterator<Item = (K, u64)>,
        owned: &[u64],
        owner: impl Fn(&K) -> usize,
    ) -> Vec<(K, Shares)> {
        let seen = self.count_time(counts, owned);
        self.deal(seen, owner)
    }

    /// Decays the counts and adds a time's: `owned[w]` updates of keys
    /// owned by worker w, of which `counts` per reported key. The keys
    /// reported, to [`deal`](Self::deal).
    fn count_time(&mut self, counts: impl IntoIterator<Item = (K, u64)>, owned: &[u64]) -> Vec<K> {
        self.total = self.total / 2.0 + owned.iter().sum::<u64>() as f64;
        for (load, &owned) in self.owned.iter_mut().zip(owned) {
            *load = *load / 2.0 + owned as f64;
        }
        self.counts.retain(|_, count| {
            *count /= 2.0;
            *count >= 1.0
        });
        let mut seen = Vec::new();
        for (key, count) in counts {
            *self.counts.entry(key.clone()).or_default() += count as f64;
            seen.push(key);
        }
        seen
    }

    /// Of the keys `seen` at the time just counted (and not split on
    /// another side), those newly hot or dealt anew (on their share doubling), each
    /// with its shares from now on.
    fn deal(&mut self, seen: Vec<K>, owner: impl Fn(&K) -> usize) -> Vec<(K, Shares)> {
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
                // Dealt anew only when its share of the updates has doubled
                // (a stream that grows as a whole needs no more parts): each deal
                // moves some of the key's records to other workers.
                Some((_, dealt)) if count < 2.0 * dealt * self.total => {}
                _ => wanted.push((key, parts)),
            }
        }
        if wanted.is_empty() {
            return Vec::new();
        }
        // The heaviest first, each over the least loaded workers.
        let mut load = self.loads(&owner);
        let busy = (1.0 + self.skew.tolerance) * load.iter().sum::<f64>() / self.peers as f64;
        wanted.sort_by(|(a, _), (b, _)| self.counts[b].total_cmp(&self.counts[a]));
        let mut changes = Vec::new();
        for (key, parts) in wanted {
            let count = self.counts[&key];
            // The key's load leaves where it is now, and is dealt anew.
            match self.hot.get(&key) {
                // A key whose owner is not overloaded stays whole: its
                // split would cost more than it evens out.
                None if load[owner(&key)] <= busy || self.hot.len() >= self.skew.max_hot => continue,
                None => load[owner(&key)] -= count,
                Some((shares, _)) => shares.iter().for_each(|&(w, share)| load[w] -= count * share),
            }
            let shares = fill(&load, count, parts);
            shares.iter().for_each(|&(w, share)| load[w] += count * share);
            self.hot.insert(key.clone(), (shares.clone(), count / self.total));
            changes.push((key, shares));
        }
        changes
    }

    /// `key`'s decayed count of updates (0 if it was not reported lately).
    fn count(&self, key: &K) -> f64 {
        self.counts.get(key).copied().unwrap_or(0.0)
    }

    /// Each worker's load as the decayed counts tell it: the hot keys dealt
    /// by their shares, the others on their owners.
    fn loads(&self, owner: impl Fn(&K) -> usize) -> Vec<f64> {
        let mut load = self.owned.clone();
        for (key, (shares, _)) in &self.hot {
            let count = self.counts.get(key).copied().unwrap_or(0.0);
            load[owner(key)] -= count;
            shares.iter().for_each(|&(w, share)| load[w] += count * share);
        }
        load.iter_mut().for_each(|l| *l = l.max(0.0));
        load
    }
}

/// The decisions of an operator of several inputs (sides), kept on the
/// worker that makes them: one [`HotKeys`] per side, each key split on one
/// side only. Each side counts and judges its keys against its own load;
/// a key is split only on the side with the most of its updates (decayed
/// counts; at a tie, the first), whether or not it is hot on the others
/// too, and a key split on a side stays split there for good, as its
/// copies of the other sides stay.
#[derive(Debug)]
pub(crate) struct SideHotKeys<K> {
    sides: Vec<HotKeys<K>>,
    /// The side each hot key is split on.
    split_on: HashMap<K, usize>,
}

impl<K: Hash + Eq + Clone> SideHotKeys<K> {
    pub(crate) fn new(sides: usize, peers: usize, skew: Skew) -> Self {
        SideHotKeys {
            sides: (0..sides).map(|_| HotKeys::new(peers, skew)).collect(),
            split_on: HashMap::new(),
        }
    }

    /// Ends a time of every side (its counts per reported key and its
    /// updates per owner, as [`HotKeys::end_time`] takes them): the keys
    /// newly hot or dealt anew, each with its side and its shares.
    pub(crate) fn end_time(
        &mut self,
        counted: Vec<(HashMap<K, u64>, Vec<u64>)>,
        owner: impl Fn(&K) -> usize,
    ) -> Vec<(usize, (K, Shares))> {
        // Every side's counts first: a key goes to the side with the most
        // of it (at a tie, the first), hot there or not, and is barred on
        // the others before any side deals (split elsewhere, it would copy
        // more than it spreads).
        let seen: Vec<Vec<K>> = counted
            .into_iter()
            .enumerate()
            .map(|(side, (counts, owned))| self.sides[side].count_time(counts, &owned))
            .collect();
        let mut changes = Vec::new();
        for (side, seen) in seen.into_iter().enumerate() {
            let (sides, split_on) = (&self.sides, &self.split_on);
            let most = |key: &K| {
                (1..sides.len()).fold(0, |best, other| {
                    if sides[other].count(key) > sides[best].count(key) {
                        other
                    } else {
                        best
                    }
                })
            };
            let seen: Vec<K> = seen
                .into_iter()
                .filter(|key| match split_on.get(key) {
                    Some(&on) => on == side,
                    None => most(key) == side,
                })
                .collect();
            let dealt = self.sides[side].deal(seen, &owner);
            changes.extend(dealt.into_iter().map(|change| (side, change)));
        }
        for (side, (key, _)) in &changes {
            self.split_on.insert(key.clone(), *side);
        }
        changes
    }
}

/// Shares of `count` updates over at most `parts` of the least loaded
/// workers, filling them up to one level (water-filling): a worker far
/// below the others takes more, one above the level none.
fn fill(load: &[f64], count: f64, parts: usize) -> Shares {
    let mut order: Vec<usize> = (0..load.len()).collect();
    order.sort_by(|&a, &b| load[a].total_cmp(&load[b]));
    order.truncate(parts);
    // The level: the most workers whose loads lie below it.
    let (mut level, mut sum) = (0.0, 0.0);
    let mut filled = 0;
    for (k, &worker) in order.iter().enumerate() {
        if k > 0 && level <= load[worker] {
            break;
        }
        sum += load[worker];
        filled = k + 1;
        level = (count + sum) / filled as f64;
    }
    order[..filled]
        .iter()
        .map(|&worker| (worker, (level - load[worker]) / count))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keys "a" to "z" owned by worker (letter index) % peers.
    fn owner(peers: usize) -> impl Fn(&&str) -> usize {
        move |key: &&str| (key.as_bytes()[0] - b'a') as usize % peers
    }

    /// Each worker's updates when the keys of `counts` are owned as
    /// `owner` says and the rest of `total` spreads evenly (what does not
    /// divide on worker 0).
    fn owned(counts: &[(&str, u64)], total: u64, peers: usize) -> Vec<u64> {
        let counted: u64 = counts.iter().map(|(_, c)| c).sum();
        let mut owned = vec![(total - counted) / peers as u64; peers];
        owned[0] += (total - counted) % peers as u64;
        for (key, count) in counts {
            owned[owner(peers)(key)] += count;
        }
        owned
    }

    fn end_time(
        hot: &mut HotKeys<&'static str>,
        counts: &[(&'static str, u64)],
        total: u64,
    ) -> Vec<(&'static str, Shares)> {
        let peers = hot.peers;
        let mut changes = hot.end_time(counts.iter().copied(), &owned(counts, total, peers), owner(peers));
        changes.sort_by(|a, b| a.0.cmp(b.0));
        changes
    }

    #[test]
    fn a_key_over_the_hot_share_is_dealt_over_the_least_loaded_workers() {
        let mut hot = HotKeys::new(8, Skew::default().with_hot_share(0.5).unwrap());
        // 8 000 updates at one time over 8 workers: the mean is 1 000, the hot share 500.
        let changes = end_time(&mut hot, &[("a", 2_400), ("b", 400), ("c", 600)], 8_000);
        let keys: Vec<&str> = changes.iter().map(|(key, _)| *key).collect();
        assert_eq!(keys, vec!["a", "c"]);
        for (key, shares) in &changes {
            let sum: f64 = shares.iter().map(|(_, share)| share).sum();
            assert!((sum - 1.0).abs() < 1e-9, "{key}: {shares:?}");
            // At most ceil(count / hot share) workers, each distinct.
            assert!(shares.len() <= if *key == "a" { 5 } else { 2 }, "{key}: {shares:?}");
            let mut workers: Vec<usize> = shares.iter().map(|(w, _)| *w).collect();
            workers.sort();
            workers.dedup();
            assert_eq!(workers.len(), shares.len());
        }
        // Dealt, the loads are more even than with every key on its owner.
        let load = hot.loads(owner(8));
        let max = load.iter().copied().fold(0.0, f64::max);
        assert!(max < 1_300.0, "{load:?}");
        // The same again: nothing new; "a" doubled: dealt anew.
        assert!(end_time(&mut hot, &[("a", 2_400), ("c", 600)], 8_000).is_empty());
        assert_eq!(end_time(&mut hot, &[("a", 7_000)], 8_000).len(), 1);
    }

    #[test]
    fn a_hot_key_evens_out_its_workers() {
        // Two workers, the other keys leaving worker 1 with 700 and worker 0
        // with 300: the hot key "b" (owned by 1, 400 of 1 400) is dealt so
        // that both end at 700.
        let mut hot = HotKeys::new(2, Skew::default());
        let changes = hot.end_time([("b", 400)], &[300, 1_100], owner(2));
        let shares = &changes[0].1;
        let to = |worker: usize| shares.iter().find(|(w, _)| *w == worker).map_or(0.0, |(_, s)| *s);
        assert!((to(0) - 1.0).abs() < 1e-9 && to(1) == 0.0, "{shares:?}");
    }

    #[test]
    fn few_updates_split_nothing_and_the_limit_holds() {
        let mut hot = HotKeys::new(4, Skew::default());
        assert!(end_time(&mut hot, &[("a", 30)], 40).is_empty());
        let mut hot = HotKeys::new(4, Skew::default().with_max_hot(1).unwrap());
        assert_eq!(end_time(&mut hot, &[("a", 3_000), ("b", 3_000)], 8_000).len(), 1);
        // One worker: nothing to split over.
        assert!(end_time(&mut HotKeys::new(1, Skew::default()), &[("a", 3_000)], 3_000).is_empty());
    }

    #[test]
    fn a_key_is_split_on_one_side_the_one_with_most_of_it() {
        let mut hot = SideHotKeys::new(2, 4, Skew::default());
        let side = |counts: &[(&'static str, u64)], owned: &[u64]| {
            (counts.iter().copied().collect::<HashMap<_, _>>(), owned.to_vec())
        };
        let sides = |changes: &[(usize, (&'static str, Shares))]| {
            let mut sides: Vec<(&str, usize)> = changes.iter().map(|(side, (key, _))| (*key, *side)).collect();
            sides.sort();
            sides
        };
        // Hot at a fortieth of a side's updates, each on an overloaded
        // owner: "a" is hot on both sides, more so on side 1; "d" on both,
        // more so on side 0; "f" on side 1 only, which side 0 lacks. "b" is
        // hot on side 1 only, but side 0 has more of it (a small share of
        // its load): split on side 1, it would copy side 0's updates of it
        // to spread fewer, so it stays whole.
        let changes = hot.end_time(
            vec![
                side(
                    &[("a", 6_000), ("b", 2_000), ("d", 9_000)],
                    &[30_000, 20_000, 20_000, 30_000],
                ),
                side(
                    &[("a", 7_000), ("b", 600), ("d", 600), ("f", 600)],
                    &[7_000, 6_100, 2_000, 5_500],
                ),
            ],
            owner(4),
        );
        assert_eq!(sides(&changes), vec![("a", 1), ("d", 0), ("f", 1)]);
        // Side 0 has far more of "a" now: it stays split on side 1, and
        // side 0 deals "c".
        let changes = hot.end_time(
            vec![
                side(
                    &[("a", 900_000), ("c", 500_000)],
                    &[1_000_000, 100_000, 600_000, 300_000],
                ),
                side(&[], &[2_500; 4]),
            ],
            owner(4),
        );
        assert_eq!(sides(&changes), vec![("c", 0)]);
        // One side: nothing to choose.
        let mut one = SideHotKeys::new(1, 2, Skew::default());
        assert_eq!(
            sides(&one.end_time(vec![side(&[("a", 3_000)], &[5_000, 3_000])], owner(2))),
            vec![("a", 0)]
        );
    }

    #[test]
    fn a_key_stays_whole_where_its_owner_is_not_overloaded() {
        // "a" carries a tenth of the updates, far over the hot share, but
        // its owner (worker 0) carries less than the mean: splitting it
        // would only move load onto the busier worker.
        let mut hot = HotKeys::new(2, Skew::default());
        assert!(hot.end_time([("a", 1_000)], &[4_000, 6_000], owner(2)).is_empty());
        // Within the tolerance (5 % over the mean) it stays whole too;
        // beyond it, it is split, and at a tolerance of 0 it is split as
        // soon as its owner is over the mean.
        let mut hot = HotKeys::new(2, Skew::default());
        assert!(hot.end_time([("a", 1_000)], &[5_200, 4_800], owner(2)).is_empty());
        let mut hot = HotKeys::new(2, Skew::default());
        assert_eq!(hot.end_time([("a", 1_000)], &[5_600, 4_400], owner(2)).len(), 1);
        let mut hot = HotKeys::new(2, Skew::default().with_tolerance(0.0).unwrap());
        assert_eq!(hot.end_time([("a", 1_000)], &[5_200, 4_800], owner(2)).len(), 1);
        // A second key of the same owner is judged after the first's deal:
        // once "a" is dealt, worker 0 is no longer overloaded and "c" stays whole.
        let mut hot = HotKeys::new(2, Skew::default());
        let changes = hot.end_time([("a", 2_000), ("c", 600)], &[6_500, 3_500], owner(2));
        assert_eq!(changes.iter().map(|(key, _)| *key).collect::<Vec<_>>(), vec!["a"]);
        // Infinity: nothing new is split.
        let mut hot = HotKeys::new(2, Skew::default().with_tolerance(f64::INFINITY).unwrap());
        assert!(hot.end_time([("a", 5_000)], &[9_000, 1_000], owner(2)).is_empty());
    }
}

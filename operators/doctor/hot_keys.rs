//! The keys the skew-proof operators found hot, by hash, with the workers
//! each was split over or combined on and its name where the operator gave
//! one. A worker keeps the most recently found: a program that runs for
//! months sees its hot keys of now, not of its first hour.

use std::collections::{BTreeMap, BTreeSet};

/// Most hot keys a worker keeps: one skew-proof operator splits at most
/// 4 096 by default (`Skew::with_max_hot`).
pub(crate) const MAX_HOT_KEYS: usize = 4096;

/// One hot key: its workers, its name, and when it was last found.
#[derive(Debug, Default)]
struct HotKey {
    workers: BTreeSet<usize>,
    name: Option<String>,
    found: u64,
}

/// A hot key as a worker sends it for the report: hash, workers, name.
pub(crate) type SentHotKey = (u64, Vec<usize>, Option<String>);

/// The hot keys a worker found, at most `most`, the least recently found
/// forgotten first.
#[derive(Debug)]
pub(crate) struct HotKeys {
    keys: BTreeMap<u64, HotKey>,
    most: usize,
    // Counts findings: each key's `found` is its latest.
    clock: u64,
}

impl HotKeys {
    pub(crate) fn new(most: usize) -> Self {
        HotKeys {
            keys: BTreeMap::new(),
            most,
            clock: 0,
        }
    }

    /// Key `key` was found hot, on `worker`, with `name` if given.
    pub(crate) fn found(&mut self, key: u64, worker: usize, name: Option<&str>) {
        self.clock += 1;
        if !self.keys.contains_key(&key) && self.keys.len() >= self.most {
            let oldest = self.keys.iter().min_by_key(|(_, hot)| hot.found).map(|(&key, _)| key);
            if let Some(oldest) = oldest {
                self.keys.remove(&oldest);
            }
        }
        let hot = self.keys.entry(key).or_default();
        hot.workers.insert(worker);
        hot.found = self.clock;
        if hot.name.is_none() {
            hot.name = name.map(str::to_owned);
        }
    }

    /// The keys, by hash, to send for the report.
    pub(crate) fn sent(&self) -> Vec<SentHotKey> {
        self.keys
            .iter()
            .map(|(&key, hot)| (key, hot.workers.iter().copied().collect(), hot.name.clone()))
            .collect()
    }
}

/// Hot keys with their workers, and their names, by hash.
type Merged = (Vec<(u64, Vec<usize>)>, Vec<(u64, String)>);

/// Every worker's hot keys as one list by hash, with the workers of all,
/// and their names.
pub(crate) fn merge(sent: impl IntoIterator<Item = SentHotKey>) -> Merged {
    let mut all = HotKeys::new(usize::MAX);
    for (key, workers, name) in sent {
        for worker in workers {
            all.found(key, worker, name.as_deref());
        }
    }
    let names = all
        .keys
        .iter()
        .filter_map(|(&key, hot)| Some((key, hot.name.clone()?)))
        .collect();
    let keys = all
        .keys
        .into_iter()
        .map(|(key, hot)| (key, hot.workers.into_iter().collect()))
        .collect();
    (keys, names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_least_recently_found_key_is_forgotten_first() {
        let mut hot = HotKeys::new(2);
        hot.found(1, 0, Some("one"));
        hot.found(2, 1, None);
        hot.found(1, 2, None);
        // Full: 2 was found longest ago.
        hot.found(3, 0, Some("three"));
        let keys: Vec<u64> = hot.sent().iter().map(|(key, _, _)| *key).collect();
        assert_eq!(keys, [1, 3]);
        let (merged, names) = merge(hot.sent().into_iter().chain([(1, vec![5], None)]));
        assert_eq!(merged, [(1, vec![0, 2, 5]), (3, vec![0])]);
        assert_eq!(names, [(1, "one".to_owned()), (3, "three".to_owned())]);
    }
}

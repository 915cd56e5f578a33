//! The latest value of each key, ranked: the state behind streaming top-k.

use std::cmp::Reverse;
use std::collections::{BTreeSet, HashMap};
use std::hash::Hash;

/// Keys with their latest values, ordered by value (largest first), ties by
/// key (smallest first) so that every worker count ranks alike.
#[derive(Debug, Clone)]
pub(crate) struct Ranking<K, V> {
    values: HashMap<K, V>,
    order: BTreeSet<(Reverse<V>, K)>,
}

impl<K, V> Default for Ranking<K, V> {
    fn default() -> Self {
        Ranking {
            values: HashMap::new(),
            order: BTreeSet::new(),
        }
    }
}

impl<K: Hash + Eq + Ord + Clone, V: Ord + Clone> Ranking<K, V> {
    /// Sets the value of `key`, replacing any earlier one. O(log n).
    pub(crate) fn set(&mut self, key: K, value: V) {
        if let Some(old) = self.values.insert(key.clone(), value.clone()) {
            self.order.remove(&(Reverse(old), key.clone()));
        }
        self.order.insert((Reverse(value), key));
    }

    /// The `k` highest-ranked keys with their values.
    pub(crate) fn top(&self, k: usize) -> Vec<(K, V)> {
        self.order
            .iter()
            .take(k)
            .map(|(Reverse(value), key)| (key.clone(), value.clone()))
            .collect()
    }
}

/// The `k` highest of `candidates` by value, ties to the lower key.
pub fn top_of<K: Ord, V: Ord>(mut candidates: Vec<(K, V)>, k: usize) -> Vec<(K, V)> {
    candidates.sort_by(|(key_a, value_a), (key_b, value_b)| value_b.cmp(value_a).then_with(|| key_a.cmp(key_b)));
    candidates.truncate(k);
    candidates
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranking_tracks_updates_and_breaks_ties_by_key() {
        let mut ranking = Ranking::default();
        ranking.set("b", 3);
        ranking.set("a", 3);
        ranking.set("c", 1);
        assert_eq!(ranking.top(2), vec![("a", 3), ("b", 3)]);
        ranking.set("c", 5);
        ranking.set("a", 0);
        assert_eq!(ranking.top(5), vec![("c", 5), ("b", 3), ("a", 0)]);
        assert_eq!(top_of(vec![("x", 1), ("y", 2), ("w", 2)], 2), vec![("w", 2), ("y", 2)]);
    }
}

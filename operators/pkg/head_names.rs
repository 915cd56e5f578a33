//! Names for the head keys a D-/W-Choices sender spreads wider. The pacts
//! see only the fingerprints their key function returns, so a pact given a
//! name function ([`Grouped::with_key_names`](super::Grouped::with_key_names))
//! names each head key from the first record of it routed after the key
//! entered the head. A batch costs a look-up per record only while a head
//! key is unnamed, and head keys, being frequent, are named within a batch
//! or two.

use std::collections::{BTreeMap, HashSet};

use super::grouping::Router;

/// A record's key in its `Debug` form.
pub(crate) type NameFn<D> = Box<dyn FnMut(&D) -> String>;

/// One sender's names for its current head keys (no more than the head).
pub(crate) struct HeadNames<D> {
    name: NameFn<D>,
    // The router's head version these follow.
    version: u64,
    unnamed: HashSet<u64>,
    named: BTreeMap<u64, String>,
}

impl<D> HeadNames<D> {
    pub(crate) fn new(name: NameFn<D>) -> Self {
        HeadNames {
            name,
            version: 0,
            unnamed: HashSet::new(),
            named: BTreeMap::new(),
        }
    }

    /// Names the unnamed head keys found among `records` by `key`.
    pub(crate) fn observe(&mut self, records: &[D], mut key: impl FnMut(&D) -> u64) {
        if self.unnamed.is_empty() {
            return;
        }
        for record in records {
            let fingerprint = key(record);
            if self.unnamed.remove(&fingerprint) {
                self.named.insert(fingerprint, (self.name)(record));
                if self.unnamed.is_empty() {
                    break;
                }
            }
        }
    }

    /// Follows `router`'s head: forgets the keys that left it, and waits
    /// for a record of each that entered.
    pub(crate) fn follow(&mut self, router: &impl Router) {
        let version = router.head_version();
        if version == self.version {
            return;
        }
        self.version = version;
        let head: HashSet<u64> = router.head().1.iter().map(|head| head.key).collect();
        self.named.retain(|key, _| head.contains(key));
        self.unnamed = head.into_iter().filter(|key| !self.named.contains_key(key)).collect();
    }

    /// The head keys named so far, by fingerprint.
    pub(crate) fn names(&self) -> Vec<(u64, String)> {
        self.named.iter().map(|(&key, name)| (key, name.clone())).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::hash::key_hash;
    use crate::pkg::sim::{Grouping, HeadKey};
    use crate::pkg::HeadAware;

    #[test]
    fn every_head_key_is_named_from_its_records_and_no_other() {
        let mut router = HeadAware::d_choices().router(8, 0);
        let mut names = HeadNames::new(Box::new(|word: &&str| format!("{word:?}")));
        // `hot` brings half the records, then `other` does.
        let stream = |hot: &'static str, records: usize| -> Vec<&'static str> {
            let tail = ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"];
            (0..records)
                .map(|i| if i % 2 == 0 { hot } else { tail[i % 10] })
                .collect()
        };
        for records in [stream("hot", 20_000), stream("other", 200_000)] {
            for batch in records.chunks(1024) {
                names.observe(batch, key_hash);
                for word in batch {
                    router.route(key_hash(word), 1);
                }
                names.follow(&router);
            }
            // The names are exactly the head's keys', each its own key's.
            let head: BTreeMap<u64, String> = router
                .head()
                .1
                .iter()
                .filter_map(|head| {
                    let word = ["hot", "other", "a", "b", "c", "d", "e", "f", "g", "h", "i", "j"]
                        .into_iter()
                        .find(|word| key_hash(word) == head.key)?;
                    Some((head.key, format!("{word:?}")))
                })
                .collect();
            assert!(head.values().any(|name| name == "\"hot\""));
            assert_eq!(names.names(), head.into_iter().collect::<Vec<_>>());
        }
    }

    /// A router whose head is set by the test.
    struct Fixed(u64, Vec<u64>);

    impl Router for Fixed {
        fn route(&mut self, _key: u64, _cost: u64) -> usize {
            0
        }
        fn head_version(&self) -> u64 {
            self.0
        }
        fn head(&self) -> (usize, Vec<HeadKey>) {
            (3, self.1.iter().map(|&key| HeadKey { key, workers: 3 }).collect())
        }
    }

    #[test]
    fn a_key_that_leaves_the_head_is_forgotten_and_one_that_enters_waits_for_a_record() {
        let mut names = HeadNames::new(Box::new(|n: &u64| (n * 10).to_string()));
        names.follow(&Fixed(1, vec![1, 2]));
        names.observe(&[1, 5, 1], |&n| n);
        assert_eq!(names.names(), [(1, "10".to_owned())]);
        names.follow(&Fixed(2, vec![2, 3]));
        assert_eq!(names.names(), []);
        names.observe(&[3, 2], |&n| n);
        assert_eq!(names.names(), [(2, "20".to_owned()), (3, "30".to_owned())]);
    }
}

//! The report's named keys: every worker's sample of a place merged into
//! each key's share of the place's records and the worker it lands on.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::keys::KeysEvent;
use super::spread::Spread;

/// A sampled place over every worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeysReport {
    /// The name the program gave it.
    pub place: String,
    /// The sampler's address in the dataflow.
    pub address: Vec<usize>,
    /// Records that passed, over all workers.
    pub records: u64,
    /// Of those, how many it sampled (one in 64 on average).
    #[serde(default)]
    pub sampled: u64,
    /// Of the records, how many land on each worker (estimated from the
    /// sampled ones).
    pub landed: Vec<u64>,
    /// How unevenly they land.
    pub landed_spread: Spread,
    /// The heaviest keys, the heaviest first.
    pub keys: Vec<KeyShare>,
}

/// One key of a sampled place.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeyShare {
    /// Its `Debug` form.
    pub key: String,
    /// Its share of the place's sampled records, over every worker: at
    /// least this (SpaceSaving's counts less their error; a key that
    /// entered a worker's counters late is undercounted there by what it
    /// had before).
    pub share: f64,
    /// Its sampled records counted, over the workers that counted it.
    pub records: u64,
    /// The worker it lands on.
    pub worker: usize,
}

/// Keys a place lists.
const LISTED: usize = 10;

/// Each place's keys from every worker's latest sample of it, by address.
pub(crate) fn merge(samples: Vec<KeysEvent>, peers: usize) -> Vec<KeysReport> {
    let mut by_place: BTreeMap<Vec<usize>, (KeysReport, BTreeMap<u64, KeyShare>)> = BTreeMap::new();
    for sample in samples {
        let (place, keys) = by_place.entry(sample.address.clone()).or_insert_with(|| {
            let place = KeysReport {
                place: sample.place.clone(),
                address: sample.address.clone(),
                records: 0,
                sampled: 0,
                landed: vec![0; peers],
                landed_spread: Spread::of(&[]),
                keys: Vec::new(),
            };
            (place, BTreeMap::new())
        });
        place.records += sample.records;
        place.sampled += sample.sampled;
        for (worker, landed) in sample.landed.iter().enumerate().filter(|&(worker, _)| worker < peers) {
            place.landed[worker] += landed;
        }
        for key in sample.keys {
            let share = keys.entry(key.hash).or_insert_with(|| KeyShare {
                key: key.key.clone(),
                share: 0.0,
                records: 0,
                worker: key.worker,
            });
            share.records += key.records - key.error;
        }
    }
    by_place
        .into_values()
        .map(|(mut place, keys)| {
            // A key counted only within the counters' error is not named.
            let mut keys: Vec<KeyShare> = keys.into_values().filter(|key| key.records > 0).collect();
            for key in &mut keys {
                key.share = key.records as f64 / place.sampled.max(1) as f64;
            }
            // The sampled records stand for all of them.
            let scale = place.records as f64 / place.sampled.max(1) as f64;
            for landed in &mut place.landed {
                *landed = (*landed as f64 * scale).round() as u64;
            }
            keys.sort_by(|a, b| b.records.cmp(&a.records).then_with(|| a.key.cmp(&b.key)));
            keys.truncate(LISTED);
            place.keys = keys;
            place.landed_spread = Spread::of(&place.landed.iter().map(|&r| r as f64).collect::<Vec<_>>());
            place
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::keys::SampledKey;

    fn sample(worker: usize, records: u64, landed: Vec<u64>, keys: &[(&str, u64, u64)]) -> KeysEvent {
        KeysEvent {
            place: "words".into(),
            address: vec![0, 4],
            worker,
            records: 16 * records,
            sampled: records,
            landed,
            keys: keys
                .iter()
                .map(|&(key, hash, records)| SampledKey {
                    key: key.into(),
                    hash,
                    records: records + 5,
                    error: 5,
                    worker: (hash % 2) as usize,
                })
                .collect(),
        }
    }

    #[test]
    fn a_keys_share_adds_its_records_over_workers() {
        let samples = vec![
            sample(0, 100, vec![30, 70], &[("\"the\"", 1, 50), ("\"a\"", 2, 10)]),
            sample(
                1,
                100,
                vec![40, 60],
                &[("\"the\"", 1, 30), ("\"of\"", 4, 20), ("\"an\"", 3, 0)],
            ),
        ];
        let places = merge(samples, 2);
        assert_eq!(places.len(), 1);
        let words = &places[0];
        assert_eq!((words.records, words.sampled), (3200, 200));
        assert_eq!(words.landed, [16 * 70, 16 * 130]);
        assert_eq!(words.landed_spread.busiest, 1);
        let named: Vec<(&str, f64, usize)> = words.keys.iter().map(|k| (k.key.as_str(), k.share, k.worker)).collect();
        assert_eq!(named, [("\"the\"", 0.4, 1), ("\"of\"", 0.1, 0), ("\"a\"", 0.05, 0)]);
    }
}

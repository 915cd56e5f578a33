//! Key streams for the simulator: Zipf and log-normal frequencies (the
//! paper's LN1 and LN2), drifting popularity, a file replayed in order, or
//! a weights file sampled.

use std::collections::HashMap;
use std::path::Path;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::common::keys::{KeySampler, KeySpec};
use crate::common::lines::{for_each_line, read_key_lines, OnError};
use crate::common::Error;
use equipoise::common::hash::{key_hash, splitmix64};

/// A key stream (key fingerprints, in order) and its name.
#[derive(Debug, Clone)]
pub struct Dataset {
    /// How reports name it.
    pub name: String,
    /// The fingerprints, in arrival order.
    pub keys: Vec<u64>,
}

impl Dataset {
    /// Share of the stream carried by its most frequent key.
    pub fn p1(&self) -> f64 {
        let frequencies = self.frequencies();
        let top = frequencies.values().copied().max().unwrap_or(0);
        top as f64 / self.keys.len().max(1) as f64
    }

    /// Occurrences of each key.
    pub fn frequencies(&self) -> HashMap<u64, u64> {
        let mut counts = HashMap::new();
        for &key in &self.keys {
            *counts.entry(key).or_insert(0) += 1;
        }
        counts
    }

    /// `messages` keys drawn from `spec` with `seed`.
    pub fn sampled(spec: &KeySpec, messages: usize, seed: u64) -> Self {
        let sampler = KeySampler::new(spec, seed);
        Dataset {
            name: spec.to_string(),
            keys: (0..messages as u64)
                .map(|i| key_hash(&(sampler.rank(i) as u64)))
                .collect(),
        }
    }

    /// Hashes `salt` into every fingerprint: the same stream under another
    /// draw of the hash functions that place keys (the name says which).
    pub fn salt(&mut self, salt: u64) {
        self.keys.iter_mut().for_each(|key| *key = key_hash(&(*key, salt)));
        self.name = format!("{} salt {salt}", self.name);
    }

    /// Zipf(`exponent`, `distinct`) whose popularity drifts: every
    /// `messages / phases` messages the ranks are dealt to new keys, so the
    /// hot keys change.
    pub fn drifting(exponent: f64, distinct: usize, phases: usize, messages: usize, seed: u64) -> Self {
        let sampler = KeySampler::new(&KeySpec::Zipf { exponent, distinct }, seed);
        let phase_length = messages.div_ceil(phases.max(1)).max(1);
        Dataset {
            name: format!("drift:{exponent}:{distinct}:{phases}"),
            keys: (0..messages)
                .map(|i| {
                    let phase = (i / phase_length) as u64;
                    let rank = sampler.rank(i as u64) as u64;
                    // A new key for each (rank, phase): the old hot keys fade.
                    key_hash(&(rank, splitmix64(phase ^ seed)))
                })
                .collect(),
        }
    }

    /// The keys of `path`, one per line, in order.
    pub fn from_file(path: &Path, on_error: OnError) -> Result<Self, Error> {
        let lines = read_key_lines(path, on_error)?;
        Ok(Dataset {
            name: path.display().to_string(),
            keys: lines.keys.iter().map(|key| key_hash(key.as_str())).collect(),
        })
    }

    /// `messages` keys sampled with `seed` from the `key<TAB>probability`
    /// lines of `path` (probabilities need not sum to 1; they are weights).
    pub fn from_weights(path: &Path, messages: usize, seed: u64, on_error: OnError) -> Result<Self, Error> {
        let bytes = std::fs::read(path).map_err(|source| Error::Io {
            path: path.to_owned(),
            source,
        })?;
        let mut keys = Vec::new();
        let mut cumulative = Vec::new();
        let mut total = 0.0;
        for_each_line(&bytes, path, on_error, |_, line| {
            let text = std::str::from_utf8(line).map_err(|_| "not UTF-8".to_string())?;
            let (key, weight) = text
                .split_once('\t')
                .ok_or_else(|| format!("`{text}`: expected key<TAB>probability"))?;
            let weight: f64 = weight
                .trim()
                .parse()
                .ok()
                .filter(|w: &f64| w.is_finite() && *w >= 0.0)
                .ok_or_else(|| format!("probability `{}` is not a non-negative number", weight.trim()))?;
            total += weight;
            keys.push(key_hash(key));
            cumulative.push(total);
            Ok(())
        })?;
        if total <= 0.0 {
            return Err(Error::invalid(
                "--weights",
                format!("{}: no key has a positive probability", path.display()),
            ));
        }
        let mut rng = SmallRng::seed_from_u64(splitmix64(seed));
        let sampled = (0..messages)
            .map(|_| {
                let target = rng.random::<f64>() * total;
                let index = cumulative.partition_point(|&bound| bound <= target).min(keys.len() - 1);
                keys[index]
            })
            .collect();
        Ok(Dataset {
            name: path.display().to_string(),
            keys: sampled,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drifting_streams_change_their_hot_key() {
        let data = Dataset::drifting(1.5, 1000, 4, 40_000, 3);
        let hot = |part: &[u64]| {
            let mut counts: HashMap<u64, usize> = HashMap::new();
            for &k in part {
                *counts.entry(k).or_default() += 1;
            }
            counts.into_iter().max_by_key(|&(k, c)| (c, k)).unwrap().0
        };
        let phases: Vec<u64> = data.keys.chunks(10_000).map(hot).collect();
        for pair in phases.windows(2) {
            assert_ne!(pair[0], pair[1]);
        }
        // Within a phase the distribution is the Zipf's: p1 ≈ 1/ζ(1.5) ≈ 0.38.
        let first = Dataset {
            name: String::new(),
            keys: data.keys[..10_000].to_vec(),
        };
        assert!((first.p1() - 0.38).abs() < 0.03, "{}", first.p1());
    }

    #[test]
    fn weights_files_are_sampled_and_bad_lines_named() {
        let dir = std::env::temp_dir().join(format!("equipoise-weights-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let good = dir.join("good.tsv");
        std::fs::write(&good, "a\t0.75\nb\t0.25\n").unwrap();
        let data = Dataset::from_weights(&good, 20_000, 1, OnError::Fail).unwrap();
        assert!((data.p1() - 0.75).abs() < 0.02);
        let bad = dir.join("bad.tsv");
        std::fs::write(&bad, "a\t0.5\nb 0.5\n").unwrap();
        let error = Dataset::from_weights(&bad, 10, 1, OnError::Fail)
            .unwrap_err()
            .to_string();
        assert!(error.contains("bad.tsv") && error.contains('2'), "{error}");
        let negative = dir.join("negative.tsv");
        std::fs::write(&negative, "a\t-1\n").unwrap();
        assert!(Dataset::from_weights(&negative, 10, 1, OnError::Fail).is_err());
    }
}

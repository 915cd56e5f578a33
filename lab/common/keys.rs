//! Seeded synthetic key streams: Zipf and log-normal key frequencies.
//!
//! Record `i` of a stream is a pure function of (seed, i), so any worker can
//! generate any share of the stream and the multiset of keys does not depend
//! on the number of workers or processes.

use std::fmt;
use std::str::FromStr;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, LogNormal};

use super::memory::check_fits;
use crate::common::Error;
use equipoise::common::hash::splitmix64;

/// The form of a synthetic key stream, as written on the command line.
#[derive(Debug, Clone, PartialEq)]
pub enum KeySpec {
    /// `zipf:<exponent>:<distinct>`: key of rank r has weight 1/r^exponent.
    Zipf {
        /// The exponent s (0 gives uniform keys).
        exponent: f64,
        /// Number of distinct keys.
        distinct: usize,
    },
    /// `mandelbrot:<exponent>:<offset>:<distinct>`: key of rank r has weight
    /// 1/(r + offset)^exponent (Zipf–Mandelbrot, the law word frequencies
    /// follow: the offset flattens the top ranks).
    Mandelbrot {
        /// The exponent s.
        exponent: f64,
        /// The rank offset q (0 gives Zipf).
        offset: f64,
        /// Number of distinct keys.
        distinct: usize,
    },
    /// `lognormal:<mu>:<sigma>:<distinct>`: each key's weight is drawn from
    /// LogNormal(mu, sigma) (seeded), as the PKG paper's LN1/LN2 streams.
    LogNormal {
        /// Mean of the underlying normal.
        mu: f64,
        /// Standard deviation of the underlying normal.
        sigma: f64,
        /// Number of distinct keys.
        distinct: usize,
    },
}

impl FromStr for KeySpec {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self, Error> {
        let bad = |reason: &str| Error::invalid("--keys", format!("`{text}`: {reason}"));
        let parts: Vec<&str> = text.split(':').collect();
        let number = |index: usize, name: &str| -> Result<f64, Error> {
            parts[index]
                .parse::<f64>()
                .ok()
                .filter(|value| value.is_finite())
                .ok_or_else(|| bad(&format!("{name} `{}` is not a finite number", parts[index])))
        };
        let distinct = |index: usize| -> Result<usize, Error> {
            let count = parts[index]
                .parse::<usize>()
                .ok()
                .filter(|&count| count > 0)
                .ok_or_else(|| bad(&format!("distinct keys `{}` is not a positive integer", parts[index])))?;
            // The sampler's weight and cumulative tables, 8 bytes each per key.
            check_fits("--keys", text, (count as u64).saturating_mul(16))?;
            Ok(count)
        };
        match parts[0] {
            "zipf" if parts.len() == 3 => {
                let exponent = number(1, "exponent")?;
                if exponent < 0.0 {
                    return Err(bad("the exponent must not be negative"));
                }
                Ok(KeySpec::Zipf {
                    exponent,
                    distinct: distinct(2)?,
                })
            }
            "mandelbrot" if parts.len() == 4 => {
                let (exponent, offset) = (number(1, "exponent")?, number(2, "offset")?);
                if exponent < 0.0 || offset < 0.0 {
                    return Err(bad("the exponent and the offset must not be negative"));
                }
                Ok(KeySpec::Mandelbrot {
                    exponent,
                    offset,
                    distinct: distinct(3)?,
                })
            }
            "lognormal" if parts.len() == 4 => {
                let sigma = number(2, "sigma")?;
                if sigma < 0.0 {
                    return Err(bad("sigma must not be negative"));
                }
                Ok(KeySpec::LogNormal {
                    mu: number(1, "mu")?,
                    sigma,
                    distinct: distinct(3)?,
                })
            }
            _ => Err(bad(
                "expected zipf:<exponent>:<distinct>, mandelbrot:<exponent>:<offset>:<distinct> or lognormal:<mu>:<sigma>:<distinct>",
            )),
        }
    }
}

impl fmt::Display for KeySpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeySpec::Zipf { exponent, distinct } => write!(f, "zipf:{exponent}:{distinct}"),
            KeySpec::Mandelbrot {
                exponent,
                offset,
                distinct,
            } => write!(f, "mandelbrot:{exponent}:{offset}:{distinct}"),
            KeySpec::LogNormal { mu, sigma, distinct } => write!(f, "lognormal:{mu}:{sigma}:{distinct}"),
        }
    }
}

/// Draws key ranks (0 = most frequent) by inverse transform over a cumulative
/// weight table, so every record costs one binary search.
#[derive(Debug, Clone)]
pub struct KeySampler {
    cumulative: Vec<f64>,
    seed: u64,
}

impl KeySampler {
    /// A sampler for `spec`; `seed` fixes both the key weights (log-normal) and
    /// the stream.
    pub fn new(spec: &KeySpec, seed: u64) -> Self {
        let mut weights: Vec<f64> = match *spec {
            KeySpec::Zipf { exponent, distinct } => (1..=distinct).map(|rank| (rank as f64).powf(-exponent)).collect(),
            KeySpec::Mandelbrot {
                exponent,
                offset,
                distinct,
                // Relative to the first rank, so that steep laws do not
                // underflow to all-zero weights.
            } => (1..=distinct)
                .map(|rank| ((1.0 + offset) / (rank as f64 + offset)).powf(exponent))
                .collect(),
            KeySpec::LogNormal { mu, sigma, distinct } => {
                let law = LogNormal::new(mu, sigma).expect("sigma validated when parsed");
                let mut rng = SmallRng::seed_from_u64(splitmix64(seed ^ 0x6c6f_676e_6f72_6d61));
                (0..distinct).map(|_| law.sample(&mut rng)).collect()
            }
        };
        // Rank 0 is the heaviest key, whatever the generator drew.
        weights.sort_by(|a, b| b.total_cmp(a));
        let mut total = 0.0;
        let cumulative = weights
            .iter()
            .map(|weight| {
                total += weight;
                total
            })
            .collect();
        KeySampler { cumulative, seed }
    }

    /// Number of distinct keys.
    pub fn distinct(&self) -> usize {
        self.cumulative.len()
    }

    /// Probability of the key of `rank`.
    pub fn probability(&self, rank: usize) -> f64 {
        let total = *self.cumulative.last().expect("at least one key");
        let below = if rank == 0 { 0.0 } else { self.cumulative[rank - 1] };
        (self.cumulative[rank] - below) / total
    }

    /// The rank of the key of record `index` of the stream.
    pub fn rank(&self, index: u64) -> usize {
        let mut rng = SmallRng::seed_from_u64(splitmix64(self.seed ^ splitmix64(index)));
        let total = *self.cumulative.last().expect("at least one key");
        let target = rng.random::<f64>() * total;
        self.cumulative
            .partition_point(|&bound| bound <= target)
            .min(self.cumulative.len() - 1)
    }
}

/// The text of the key of `rank` in synthetic streams.
pub fn key_name(rank: usize) -> String {
    format!("k{rank}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_both_forms_and_rejects_others() {
        assert_eq!(
            "zipf:1.2:100".parse::<KeySpec>().unwrap(),
            KeySpec::Zipf {
                exponent: 1.2,
                distinct: 100
            }
        );
        assert_eq!(
            "mandelbrot:1.1:2.7:500".parse::<KeySpec>().unwrap(),
            KeySpec::Mandelbrot {
                exponent: 1.1,
                offset: 2.7,
                distinct: 500
            }
        );
        assert!(matches!(
            "lognormal:1:2.5:16000".parse::<KeySpec>().unwrap(),
            KeySpec::LogNormal { distinct: 16000, .. }
        ));
        for bad in [
            "zipf:1.2",
            "zipf:x:10",
            "zipf:1:0",
            "uniform:10",
            "lognormal:1:-1:5",
            "mandelbrot:1:-2:5",
            "mandelbrot:1:2",
            "zipf:NaN:4",
            // More keys than any machine's memory holds: refused, not a
            // capacity-overflow panic.
            "zipf:1.2:18446744073709551615",
        ] {
            let error = bad.parse::<KeySpec>().unwrap_err().to_string();
            assert!(error.contains("--keys"), "{bad}: {error}");
        }
    }

    #[test]
    fn zipf_frequencies_follow_the_law() {
        let spec = KeySpec::Zipf {
            exponent: 1.0,
            distinct: 50,
        };
        let sampler = KeySampler::new(&spec, 7);
        let draws = 200_000u64;
        let mut counts = vec![0u64; 50];
        for index in 0..draws {
            counts[sampler.rank(index)] += 1;
        }
        for rank in [0, 1, 4, 20] {
            let expected = sampler.probability(rank) * draws as f64;
            let observed = counts[rank] as f64;
            // Within five standard deviations of a binomial count.
            assert!(
                (observed - expected).abs() < 5.0 * expected.sqrt(),
                "rank {rank}: {observed} vs {expected}"
            );
        }
    }

    #[test]
    fn mandelbrot_weights_follow_the_law() {
        let (exponent, offset) = (1.1, 2.7);
        let sampler = KeySampler::new(
            &KeySpec::Mandelbrot {
                exponent,
                offset,
                distinct: 1000,
            },
            7,
        );
        for rank in [1, 9, 999] {
            let ratio = sampler.probability(rank) / sampler.probability(0);
            let law = ((1.0 + offset) / (rank as f64 + 1.0 + offset)).powf(exponent);
            assert!(
                (ratio - law).abs() < 1e-12 * law.max(1.0),
                "rank {rank}: {ratio} vs {law}"
            );
        }
    }

    #[test]
    fn a_record_depends_only_on_seed_and_index() {
        let spec = KeySpec::LogNormal {
            mu: 1.0,
            sigma: 2.0,
            distinct: 1000,
        };
        let a = KeySampler::new(&spec, 3);
        let b = KeySampler::new(&spec, 3);
        let c = KeySampler::new(&spec, 4);
        assert!((0..1000).all(|i| a.rank(i) == b.rank(i)));
        assert!((0..1000).any(|i| a.rank(i) != c.rank(i)));
    }
}

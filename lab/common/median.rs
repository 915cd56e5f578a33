//! Medians of repeated measurements, as the benchmarks report them.

/// The element of median `key` (the upper one for an even count): e.g. the
/// run with the median throughput among a benchmark's rounds.
///
/// ```
/// use equipoise_lab::common::median::median_by;
/// assert_eq!(median_by(vec![3.0, 1.0, 2.0], |x| *x), 2.0);
/// ```
pub fn median_by<R>(mut runs: Vec<R>, key: impl Fn(&R) -> f64) -> R {
    assert!(!runs.is_empty(), "a median needs at least one run");
    runs.sort_by(|a, b| key(a).total_cmp(&key(b)));
    runs.swap_remove(runs.len() / 2)
}

/// (minimum, median, maximum) of `values`.
pub fn spread(mut values: Vec<f64>) -> (f64, f64, f64) {
    assert!(!values.is_empty(), "a spread needs at least one value");
    values.sort_by(f64::total_cmp);
    (values[0], values[values.len() / 2], values[values.len() - 1])
}

/// The median, 99th percentile (nearest rank) and maximum of a
/// distribution of values that are not latencies (ratios, counts).
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Quantiles {
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Largest value.
    pub max: f64,
}

impl Quantiles {
    /// Of `values` (zeros for none).
    pub fn of(mut values: Vec<f64>) -> Self {
        if values.is_empty() {
            return Quantiles::default();
        }
        values.sort_by(f64::total_cmp);
        let rank = |q: f64| values[((q * values.len() as f64).ceil() as usize).clamp(1, values.len()) - 1];
        Quantiles {
            p50: rank(0.5),
            p99: rank(0.99),
            max: values[values.len() - 1],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_and_spread() {
        assert_eq!(
            median_by(vec![(1, 5.0), (2, 1.0), (3, 3.0), (4, 4.0)], |r| r.1),
            (4, 4.0)
        );
        assert_eq!(spread(vec![2.0, 9.0, 1.0]), (1.0, 2.0, 9.0));
        let q = Quantiles::of((1..=200).rev().map(f64::from).collect());
        assert_eq!((q.p50, q.p99, q.max), (100.0, 198.0, 200.0));
        assert_eq!(Quantiles::of(vec![]), Quantiles::default());
    }
}

//! Medians of repeated measurements, as the benchmarks report them.

/// The element of median `key` (the upper one for an even count): e.g. the
/// run with the median throughput among a benchmark's rounds.
///
/// ```
/// use equipoise::common::median::median_by;
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
    }
}

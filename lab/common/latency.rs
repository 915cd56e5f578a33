//! Latency summaries (p50, p99, max) from an hdrhistogram.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Percentiles of a latency distribution, in milliseconds.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct LatencySummary {
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Largest sample.
    pub max: f64,
}

impl LatencySummary {
    /// Summarises samples given in microseconds (an empty slice gives zeros).
    pub fn from_micros(samples: &[u64]) -> Self {
        // Three significant figures up to an hour: ample for epoch latencies.
        let mut histogram = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).expect("valid histogram bounds");
        for &sample in samples {
            histogram.saturating_record(sample.max(1));
        }
        if histogram.is_empty() {
            return LatencySummary::default();
        }
        let ms = |micros: u64| micros as f64 / 1000.0;
        LatencySummary {
            p50: ms(histogram.value_at_quantile(0.50)),
            p99: ms(histogram.value_at_quantile(0.99)),
            max: ms(histogram.max()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_a_known_distribution() {
        let samples: Vec<u64> = (1..=1000).map(|ms| ms * 1000).collect();
        let summary = LatencySummary::from_micros(&samples);
        assert!((summary.p50 - 500.0).abs() <= 1.0, "{summary:?}");
        assert!((summary.p99 - 990.0).abs() <= 1.0, "{summary:?}");
        assert!((summary.max - 1000.0).abs() <= 1.0, "{summary:?}");
        assert_eq!(LatencySummary::from_micros(&[]), LatencySummary::default());
    }
}

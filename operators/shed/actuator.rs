//! How a controller's decision becomes the shedder's drop fraction.
//!
//! The PI controller sets C(k), the rate to admit during the next period.
//! Dividing it by the arrival rate of the period just ended (the design
//! note's f(k) = 1 − C(k)/Î(k)) admits C(k)·I(k+1)/I(k) instead: when
//! arrivals grow, too much, by the growth of one period, which the loop
//! then has to work off. [`RateTracker`] re-derives the fraction as records
//! arrive, from the arrival rate of the last few milliseconds, so the
//! shedder admits C(k) whatever the arrivals do within the period (the
//! paper's "simple P control function" from C(k) to the filter
//! proportion). The coarse algorithm is defined by a fraction fixed for the
//! period from the last period's load, and keeps it.

use serde::{Deserialize, Serialize};

/// What a controller's output sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum Actuation {
    /// An admitted rate, held as arrivals change.
    Rate,
    /// A drop fraction for the whole next period: 1 − output ÷ the arrival
    /// rate of the period just ended.
    Fraction,
}

/// Keeps the admitted rate at a set value by re-deriving the drop fraction
/// from a running estimate of the arrival rate.
///
/// The loop calls [`RateTracker::observe`] with each batch of arrivals and
/// hands the result to the shedder, and [`RateTracker::set_admitted`] once a
/// period with the controller's rate.
#[derive(Debug, Clone)]
pub(crate) struct RateTracker {
    admitted: f64,
    arrival: Option<f64>,
    time_constant_ms: f64,
}

impl RateTracker {
    /// A tracker whose arrival-rate estimate averages over about
    /// `time_constant_ms` (exponentially weighted).
    pub(crate) fn new(time_constant_ms: f64) -> Self {
        RateTracker {
            admitted: f64::INFINITY,
            arrival: None,
            time_constant_ms: time_constant_ms.max(1e-3),
        }
    }

    /// The rate to admit from now on, records/s.
    pub(crate) fn set_admitted(&mut self, admitted: f64) {
        self.admitted = admitted.max(0.0);
    }

    /// Takes in `arrivals` records that came over the last `elapsed_ms` and
    /// returns the fraction to drop from now on.
    pub(crate) fn observe(&mut self, arrivals: f64, elapsed_ms: f64) -> f64 {
        if elapsed_ms > 0.0 {
            let rate = 1000.0 * arrivals / elapsed_ms;
            let weight = 1.0 - (-elapsed_ms / self.time_constant_ms).exp();
            let estimate = self
                .arrival
                .map_or(rate, |previous| previous + weight * (rate - previous));
            self.arrival = Some(estimate);
        }
        drop_fraction(self.admitted, self.arrival.unwrap_or(0.0))
    }
}

/// The fraction of arrivals to drop so that `admitted` of `arrival` pass.
pub(crate) fn drop_fraction(admitted: f64, arrival: f64) -> f64 {
    if arrival > 0.0 {
        (1.0 - admitted / arrival).clamp(0.0, 1.0)
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fraction_follows_the_arrivals_so_the_admitted_rate_holds() {
        let mut tracker = RateTracker::new(10.0);
        tracker.set_admitted(1000.0);
        // 2000/s arriving, one record per half millisecond: drop half.
        let mut fraction = 0.0;
        for _ in 0..100 {
            fraction = tracker.observe(1.0, 0.5);
        }
        assert!((fraction - 0.5).abs() < 1e-9, "{fraction}");
        // Arrivals triple within the period: after a few time constants the
        // shedder drops 5/6, and the admitted rate is still 1000/s.
        for _ in 0..200 {
            fraction = tracker.observe(3.0, 0.5);
        }
        assert!((6000.0 * (1.0 - fraction) - 1000.0).abs() < 0.1, "{fraction}");
        // Fewer arrivals than the rate to admit: nothing dropped.
        for _ in 0..200 {
            fraction = tracker.observe(1.0, 2.0);
        }
        assert_eq!(fraction, 0.0);
    }

    #[test]
    fn before_a_rate_is_set_nothing_is_dropped() {
        let mut tracker = RateTracker::new(10.0);
        assert_eq!(tracker.observe(50.0, 1.0), 0.0);
        assert_eq!(tracker.observe(0.0, 0.0), 0.0);
    }
}

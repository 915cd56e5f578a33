//! What a loop measured over one period: what its controller sees.

use serde::{Deserialize, Serialize};

/// What a controller sees at the end of a sampling period.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct PeriodSample {
    /// AD(k): mean frontier-measured delay over the period, ms.
    pub delay_ms: f64,
    /// Î(k): records that arrived per second during the period.
    pub arrival_rate: f64,
    /// Records per second the shedder let through during the period.
    pub admitted_rate: f64,
    /// Records per second the dataflow processed during the period.
    pub processed_rate: f64,
    /// The frontier-measured delay at the end of the period, ms.
    pub age_ms: f64,
    /// The largest frontier-measured delay sampled during the period, ms:
    /// about what the period's worst record waited.
    pub max_age_ms: f64,
    /// The most a sampled delay rose above the straight line from the
    /// delay at the period's start to the delay at its end, ms: the
    /// period's noise, without its trend (a delay falling from 1.7 s to
    /// 1.0 s over a 1 s period is a correction, not a spread).
    pub spread_ms: f64,
    /// How long the period lasted, ms.
    pub length_ms: f64,
}

/// A 100 ms period whose delay stayed at `delay_ms` throughout, with these
/// rates: for tests.
#[cfg(test)]
pub(crate) fn steady_period(delay_ms: f64, arrival_rate: f64, admitted_rate: f64, processed_rate: f64) -> PeriodSample {
    PeriodSample {
        delay_ms,
        arrival_rate,
        admitted_rate,
        processed_rate,
        age_ms: delay_ms,
        max_age_ms: delay_ms,
        spread_ms: 0.0,
        length_ms: 100.0,
    }
}

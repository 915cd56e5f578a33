//! The excitation of system identification: a two-level pseudo-random
//! dither on the admitted rate, added to a stabilizing PI controller.
//!
//! The paper switches the admitted ratio between two levels at random. On
//! its own that makes the delay of a queue wander (it integrates the
//! difference between the admitted rate and capacity) until it hits zero,
//! where the dataflow stops being linear; a slow PI underneath keeps the
//! delay around the target while the dither supplies the excitation, which
//! is independent of the loop's noise, so least squares still identifies the
//! plant (closed-loop identification with an external dither).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::controller::{Controller, Pi};
use super::design::{nominal_pi, MEASURED_DELAY_POLES};
use super::predictor::Prediction;
use super::sample::PeriodSample;

/// Periods of dither [`Excited::around`] draws before it repeats.
const DITHER_PERIODS: usize = 4096;

/// A maximal-length 15-bit LFSR sequence of ±1, each value held for `hold`
/// periods, `periods` long: the two-level pseudo-random input.
pub(crate) fn prbs(periods: usize, hold: usize, seed: u16) -> Vec<f64> {
    let hold = hold.max(1);
    let mut state = seed.max(1) & 0x7fff;
    let mut levels = Vec::with_capacity(periods);
    while levels.len() < periods {
        let bit = (state ^ (state >> 1)) & 1;
        state = (state >> 1) | (bit << 14);
        let level = if bit == 1 { 1.0 } else { -1.0 };
        levels.extend(std::iter::repeat_n(level, hold.min(periods - levels.len())));
    }
    levels
}

/// How identification excites the dataflow.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ExcitationSpec {
    /// Dither amplitude, records/s per worker (added and subtracted).
    pub amplitude: f64,
    /// Periods each level holds.
    pub hold: usize,
    /// LFSR seed.
    pub seed: u16,
}

impl ExcitationSpec {
    /// The default dither amplitude, as a fraction of the capacity.
    pub const AMPLITUDE: f64 = 0.2;

    /// The default number of periods each dither level holds.
    pub const HOLD: usize = 2;
}

/// A PI controller whose output carries the pseudo-random dither.
#[derive(Debug, Clone)]
pub struct Excited {
    pi: Pi,
    /// The capacity to design the PI for once the loop's period is known
    /// (see [`Excited::around`]).
    design_for: Option<f64>,
    dither: Vec<f64>,
    amplitude: f64,
    period: usize,
}

impl Excited {
    /// Dithers `pi` by `spec` for up to `periods` periods (then ±1 repeats).
    pub fn new(pi: Pi, spec: ExcitationSpec, periods: usize) -> Self {
        Excited {
            pi,
            design_for: None,
            dither: prbs(periods.max(1), spec.hold, spec.seed),
            amplitude: spec.amplitude,
            period: 0,
        }
    }

    /// The identification experiment for a dataflow that processes about
    /// `capacity` records/s per worker: a slow PI (designed on the queue
    /// model with [`MEASURED_DELAY_POLES`] for the loop's period) holding
    /// the delay near the loop's target, its output dithered by ±20 % of
    /// `capacity`, each level held 2 periods. Run it in a
    /// [`ShedLoop`](super::ShedLoop) with arrivals above capacity, then fit
    /// the loop's periods with [`fit_periods`](super::design::fit_periods).
    pub fn around(capacity: f64) -> Self {
        let spec = ExcitationSpec {
            amplitude: ExcitationSpec::AMPLITUDE * capacity,
            hold: ExcitationSpec::HOLD,
            seed: 0x2f1,
        };
        Excited {
            design_for: Some(capacity),
            ..Excited::new(
                Pi::new(nominal_pi(1.0, capacity, MEASURED_DELAY_POLES)),
                spec,
                DITHER_PERIODS,
            )
        }
    }
}

impl Controller for Excited {
    fn name(&self) -> &'static str {
        "identify"
    }

    fn begin(&mut self, target: Duration, period: Duration, prediction: Prediction) {
        if let Some(capacity) = self.design_for {
            let period_ms = period.as_secs_f64() * 1000.0;
            self.pi = Pi::new(nominal_pi(period_ms, capacity, MEASURED_DELAY_POLES));
        }
        self.pi.begin(target, period, prediction);
    }

    fn admitted_rate(&mut self, sample: &PeriodSample) -> f64 {
        // The PI keeps its own, undithered state: the dither is not wound in.
        let base = self.pi.admitted_rate(sample);
        let level = self.dither[self.period % self.dither.len()];
        self.period += 1;
        (base + level * self.amplitude).max(0.0)
    }

    fn guarded(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prbs_is_two_level_balanced_and_held() {
        let levels = prbs(32767, 1, 0x2f1);
        assert!(levels.iter().all(|&l| l == 1.0 || l == -1.0));
        // A maximal-length sequence has one more +1 than −1 over its period.
        assert_eq!(levels.iter().sum::<f64>(), 1.0);
        let held = prbs(30, 3, 7);
        assert_eq!(held.len(), 30);
        for chunk in held.chunks(3) {
            assert!(chunk.iter().all(|&l| l == chunk[0]));
        }
    }
}

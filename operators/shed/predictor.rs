//! Dead-time compensation for the frontier-measured delay (a Smith
//! predictor on the queue model).
//!
//! The frontier delay is the age of the oldest record still in the dataflow.
//! When the controller admits less, that age keeps growing until the records
//! admitted before the change have drained: the plant has a dead time of
//! about the delay itself (three periods at a 300 ms target and 100 ms
//! periods), and a PI loop fast enough to settle in a few periods oscillates.
//! The predictor adds to the measured delay the backlog admitted while the
//! oldest record waited (admitted minus processed records over the last
//! AD(k)/W periods) at the measured processing rate: the delay a record
//! admitted now can expect. The measurement stays in the loop, so errors in
//! the model (the processing rate, the dead time) are corrected rather than
//! integrated.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::controller::PeriodSample;

/// Whether the PI controller sees the measured delay or the predicted one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Prediction {
    /// The frontier delay corrected by [`DelayPredictor`] (the default).
    #[default]
    Smith,
    /// The frontier delay as measured (the paper's loop).
    Off,
}

/// Longest dead time tracked, in periods: beyond it the delay is far above
/// any sensible target and the prediction no longer matters.
const MAX_PERIODS: usize = 256;

/// A Smith predictor for the frontier delay.
#[derive(Debug, Clone)]
pub struct DelayPredictor {
    period_ms: f64,
    /// Backlog growth (admitted − processed records) of recent periods, newest first.
    growth: VecDeque<f64>,
}

impl DelayPredictor {
    /// A predictor for sampling periods of `period_ms`.
    pub fn new(period_ms: f64) -> Self {
        DelayPredictor {
            period_ms,
            growth: VecDeque::new(),
        }
    }

    /// Records the period in `sample` and predicts the delay of a record
    /// admitted now, ms.
    pub fn predict(&mut self, sample: &PeriodSample) -> f64 {
        let seconds = self.period_ms / 1000.0;
        self.growth
            .push_front((sample.admitted_rate - sample.processed_rate) * seconds);
        self.growth.truncate(MAX_PERIODS);
        // The oldest record, on average mid-period, arrived AD(k) ago: the
        // records admitted since then are ahead of nothing it waits for.
        let span = (sample.delay_ms / self.period_ms + 0.5).min(MAX_PERIODS as f64);
        let whole = span.floor() as usize;
        let mut in_flight: f64 = self.growth.iter().take(whole).sum();
        if let Some(partial) = self.growth.get(whole) {
            in_flight += partial * span.fract();
        }
        let rate = sample.processed_rate.max(1.0);
        (sample.delay_ms + 1000.0 * in_flight / rate).max(0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shed::fluid_queue::FluidQueue;

    fn sample(delay_ms: f64, admitted_rate: f64, processed_rate: f64) -> PeriodSample {
        PeriodSample {
            delay_ms,
            arrival_rate: admitted_rate,
            admitted_rate,
            processed_rate,
        }
    }

    #[test]
    fn predicts_the_delay_a_record_admitted_now_will_see() {
        // Admit 1.5× capacity for a while: the oldest record's age lags the
        // backlog, the prediction follows the backlog ÷ capacity.
        let (capacity, period) = (1000.0, 100.0);
        let mut fifo = FluidQueue::default();
        let mut predictor = DelayPredictor::new(period);
        for k in 0..20 {
            let (age, processed) = fifo.step(1500.0, capacity, period);
            let predicted = predictor.predict(&sample(age, 1500.0, processed));
            let newest = 1000.0 * fifo.backlog() / capacity;
            assert!(predicted >= age, "period {k}: {predicted} < {age}");
            assert!(
                (predicted - newest).abs() <= 0.6 * period,
                "period {k}: predicted {predicted}, backlog says {newest}, frontier {age}"
            );
        }
    }

    #[test]
    fn without_a_backlog_change_the_prediction_is_the_measurement() {
        let mut predictor = DelayPredictor::new(100.0);
        for _ in 0..10 {
            assert_eq!(predictor.predict(&sample(250.0, 800.0, 800.0)), 250.0);
        }
    }
}

//! Dead-time compensation for the frontier-measured delay (a Smith
//! predictor on the queue model).
//!
//! The frontier delay is the age of the oldest record still in the dataflow.
//! When the controller admits less, that age keeps growing until the records
//! admitted before the change have drained: the plant has a dead time of
//! about the delay itself (three periods at a 300 ms target and 100 ms
//! periods), and a PI loop fast enough to settle in a few periods oscillates.
//! The predictor takes the backlog (records admitted whose time the output
//! has not completed, counted, not integrated from rates: the processed
//! rate is read over a window longer than a period, and summed period by
//! period it lags every ramp, a lag that would stay in the count for good)
//! and divides it by the measured processing rate: the delay a record admitted
//! now can expect. It adds the median of the last few
//! differences between the measured age of the oldest record and what the
//! same model says that record waited for (the backlog when it arrived), so
//! the measurement stays in the loop and errors in the model (the
//! processing rate, other workers' lag) are corrected rather than
//! integrated. A median, because one stall of the output frontier makes one
//! reading wildly off: smoothed in, it would swing the prediction for
//! periods after the stall has passed.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::sample::PeriodSample;

/// Whether the PI controller sees the measured delay or the predicted one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum Prediction {
    /// The frontier delay corrected by the Smith predictor (the default).
    #[default]
    Smith,
    /// The frontier delay as measured (the paper's loop).
    Off,
}

/// Longest dead time tracked, in periods: beyond it the delay is far above
/// any sensible target and the prediction no longer matters.
const MAX_PERIODS: usize = 256;

/// Readings of the model mismatch the correction is the median of.
const MISMATCHES: usize = 5;

/// How far the backlog count may exceed the records admitted since the
/// output's oldest incomplete time before the prediction trusts the
/// frontier instead (the two agree in a FIFO queue; the slack keeps
/// rounding from binding).
const FRONTIER_SLACK: f64 = 1.5;

/// A Smith predictor for the frontier delay.
#[derive(Debug, Clone)]
pub(crate) struct DelayPredictor {
    /// (end of the period, records waiting at its end, admitted records
    /// since the start), newest first, from (0, 0, 0) or
    /// the oldest of the last [`MAX_PERIODS`].
    backlog: VecDeque<(f64, f64, f64)>,
    /// The latest readings of the model mismatch, ms, oldest first.
    mismatches: VecDeque<f64>,
}

impl Default for DelayPredictor {
    fn default() -> Self {
        DelayPredictor {
            backlog: VecDeque::from([(0.0, 0.0, 0.0)]),
            mismatches: VecDeque::with_capacity(MISMATCHES + 1),
        }
    }
}

impl DelayPredictor {
    /// Records the period in `sample`, at whose end `waiting` records let
    /// in were not yet done, and predicts the delay of a record admitted
    /// now, ms. A period that measured a stall of the process
    /// (`stalled`) adds its records to the backlog, but its oldest record's
    /// age, the stall's, does not correct the model: early in a run, with
    /// fewer readings than the median needs to outvote it, it would hold
    /// the prediction up by the stall's length after the process has
    /// caught up.
    ///
    /// The backlog count is trusted only as far as the output frontier
    /// allows: every record admitted before the oldest incomplete time is
    /// done, so at most those admitted since can wait. Counts that lag the
    /// frontier (a burst right after a stall, when the dataflow already
    /// caught up) would otherwise read as overload.
    pub(crate) fn predict(&mut self, sample: &PeriodSample, waiting: f64, stalled: bool) -> f64 {
        let (end, _, admitted) = self.backlog[0];
        let now = end + sample.length_ms;
        let admitted = admitted + sample.admitted_rate * sample.length_ms / 1000.0;
        self.backlog.push_front((now, waiting, admitted));
        self.backlog.truncate(MAX_PERIODS);
        let rate = sample.processed_rate.max(1.0) / 1000.0;
        // How far the oldest record's age differs from what the model says
        // it waited for (the backlog when it arrived): other workers' lag,
        // processing slices, noise.
        // The counts when the output's oldest incomplete time began.
        let (backlog_then, admitted_then) = self.at(now - sample.age_ms);
        if !stalled {
            self.mismatches.push_back(sample.age_ms - backlog_then / rate);
            if self.mismatches.len() > MISMATCHES {
                self.mismatches.pop_front();
            }
        }
        let mut sorted: Vec<f64> = self.mismatches.iter().copied().collect();
        sorted.sort_by(f64::total_cmp);
        let correction = sorted.get(sorted.len() / 2).copied().unwrap_or(0.0);
        let waiting = waiting.min(FRONTIER_SLACK * (admitted - admitted_then));
        (waiting / rate + correction).max(0.0)
    }

    /// The backlog and admitted counts at time `t`, linear within a period
    /// (arrivals are spread over it).
    fn at(&self, t: f64) -> (f64, f64) {
        for (&(newer_t, newer, newer_in), &(older_t, older, older_in)) in
            self.backlog.iter().zip(self.backlog.iter().skip(1))
        {
            if t >= older_t {
                let share = ((t - older_t) / (newer_t - older_t).max(1e-9)).min(1.0);
                return (
                    older + share * (newer - older),
                    older_in + share * (newer_in - older_in),
                );
            }
        }
        self.backlog
            .back()
            .map_or((0.0, 0.0), |&(_, oldest, oldest_in)| (oldest, oldest_in))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shed::fluid_queue::FluidQueue;
    use crate::shed::sample::steady_period;

    fn sample(age_ms: f64, admitted_rate: f64, processed_rate: f64) -> PeriodSample {
        steady_period(age_ms, admitted_rate, admitted_rate, processed_rate)
    }

    #[test]
    fn predicts_the_delay_a_record_admitted_now_will_see() {
        // A flash crowd into an idle queue (12× capacity for a period), then
        // nothing, then 0.7× and 1.5× capacity: through all of it the
        // prediction follows backlog ÷ capacity, while the oldest record's
        // age lags it by periods.
        let (capacity, period) = (1000.0, 100.0);
        let mut fifo = FluidQueue::default();
        let mut predictor = DelayPredictor::default();
        let admitted = [500.0, 12_000.0, 0.0, 0.0, 700.0, 700.0, 700.0]
            .into_iter()
            .chain(std::iter::repeat_n(1500.0, 20));
        for (k, rate) in admitted.enumerate() {
            let (age, processed) = fifo.step(rate, capacity, period);
            let predicted = predictor.predict(&sample(age, rate, processed), fifo.backlog(), false);
            let newest = 1000.0 * fifo.backlog() / capacity;
            assert!(
                (predicted - newest).abs() <= 1e-6 * newest.max(1.0),
                "period {k}: predicted {predicted}, backlog says {newest}, frontier {age}"
            );
        }
    }

    #[test]
    fn without_a_backlog_change_the_prediction_is_the_measurement() {
        let mut predictor = DelayPredictor::default();
        for _ in 0..10 {
            assert_eq!(predictor.predict(&sample(250.0, 800.0, 800.0), 0.0, false), 250.0);
        }
    }

    #[test]
    fn one_wild_reading_does_not_move_the_prediction() {
        // A stall of the output frontier reads as one period whose oldest
        // record is seconds old; the next periods are as before.
        let mut predictor = DelayPredictor::default();
        for _ in 0..5 {
            assert_eq!(predictor.predict(&sample(250.0, 800.0, 800.0), 0.0, false), 250.0);
        }
        assert_eq!(predictor.predict(&sample(5000.0, 800.0, 800.0), 0.0, false), 250.0);
        assert_eq!(predictor.predict(&sample(250.0, 800.0, 800.0), 0.0, false), 250.0);
    }

    #[test]
    fn a_stall_at_the_start_does_not_hold_the_prediction_up() {
        // The process stalls through the first period (its oldest record
        // waits 160 ms for nothing in the queue); resumed, it catches up
        // on the burst at once. Counted as a reading, the stall was the
        // larger of the first two and held the prediction 150 ms up.
        let mut predictor = DelayPredictor::default();
        predictor.predict(&sample(160.0, 100.0, 60.0), 4.0, true);
        let after = predictor.predict(&sample(10.0, 3000.0, 3000.0), 0.0, false);
        assert!(after < 20.0, "{after}");
    }

    #[test]
    fn a_backlog_the_frontier_has_passed_is_not_predicted() {
        // A burst the dataflow worked off within the period, while the
        // counts of processed records lag: by the counts 230 records wait
        // (330 ms at 700/s), by the frontier (10 ms old) at most those
        // admitted in the last 10 ms.
        let mut predictor = DelayPredictor::default();
        for _ in 0..5 {
            predictor.predict(&sample(10.0, 700.0, 700.0), 0.0, false);
        }
        let burst = predictor.predict(&sample(10.0, 3000.0, 700.0), 230.0, false);
        assert!(burst < 100.0, "{burst}");
    }
}

//! The controller that needs nothing from the user but the target: it
//! measures the dataflow's capacity and designs its own PI.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::controller::{Bounded, Controller};
use super::design::{default_poles, nominal_pi};
use super::predictor::Prediction;
use super::sample::PeriodSample;

/// The share of the target the delay at a period's end must reach for the
/// dataflow to count as backlogged (the loop drops nothing below it either).
const BACKLOG_SHARE: f64 = 0.05;

/// Weight of a new reading in the capacity estimate: a step in the cost of
/// a record shows within a few periods, one noisy period barely.
const CAPACITY_WEIGHT: f64 = 0.25;

/// How far the estimate may drift from the capacity the PI was designed for
/// before it is designed again.
const REDESIGN_AT: f64 = 0.1;

/// [`Bounded`] designed for the capacity it measures: the rate the output
/// completes records at while a backlog waits (a period whose delay at its
/// end is at least 5 % of the target), smoothed over such periods, and
/// the PI placed on the queue model at that capacity ([`nominal_pi`], with
/// [`default_poles`] for the loop's prediction), designed again whenever
/// the estimate moves by more than 10 %. Under a loop shared by workers
/// (the default) the rates are the workers' means, so the capacity is the
/// dataflow's per worker, whatever shape it has (one reader, skewed readers,
/// exchanges). Until the first backlog it admits everything.
///
/// ```
/// use std::time::Duration;
/// use timely::dataflow::operators::{Input, Probe};
/// use timely::dataflow::ProbeHandle;
/// use equipoise::shed::{Auto, LoopSettings, ShedLoop};
///
/// timely::execute(timely::Config::process(2), |worker| {
///     let mut input = timely::dataflow::InputHandle::new();
///     let output = ProbeHandle::new();
///     let handle = worker.dataflow::<u64, _, _>(|scope| {
///         let (admitted, handle) = scope.input_from(&mut input).shed_loop(
///             &LoopSettings::new(Duration::from_millis(300)),
///             Auto::default(),
///             &output,
///         );
///         admitted.probe_with(&output);
///         handle
///     });
///     for x in 0..1000u64 {
///         input.send(x);
///     }
///     drop(input);
///     while !output.done() {
///         worker.step();
///     }
///     assert_eq!(handle.figures().dropped, 0); // no overload: nothing dropped
/// })
/// .unwrap();
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Auto {
    /// What the loop began it with: target, period, prediction.
    target: Duration,
    period: Duration,
    prediction: Prediction,
    /// Records/s per worker, smoothed over backlogged periods.
    capacity: Option<f64>,
    /// The capacity the PI was last designed for, and the PI.
    designed: Option<(f64, Bounded)>,
}

impl Auto {
    /// The capacity measured so far, records/s (per worker under a shared
    /// loop), if the dataflow has been backlogged.
    pub fn capacity(&self) -> Option<f64> {
        self.capacity
    }

    /// The controller designed for it, if any.
    pub fn designed(&self) -> Option<&Bounded> {
        self.designed.as_ref().map(|(_, bounded)| bounded)
    }
}

impl Controller for Auto {
    fn name(&self) -> &'static str {
        "auto"
    }

    fn begin(&mut self, target: Duration, period: Duration, prediction: Prediction) {
        (self.target, self.period, self.prediction) = (target, period, prediction);
    }

    fn admitted_rate(&mut self, sample: &PeriodSample) -> f64 {
        if sample.age_ms >= BACKLOG_SHARE * self.target.as_secs_f64() * 1000.0 && sample.processed_rate > 0.0 {
            let reading = sample.processed_rate;
            let estimate = self.capacity.map_or(reading, |c| c + CAPACITY_WEIGHT * (reading - c));
            self.capacity = Some(estimate);
        }
        let Some(capacity) = self.capacity else {
            return sample.arrival_rate.max(sample.processed_rate);
        };
        let period_ms = self.period.as_secs_f64() * 1000.0;
        let params = nominal_pi(period_ms, capacity, default_poles(self.prediction));
        let bounded = match &mut self.designed {
            Some((designed_for, bounded)) => {
                if (capacity / *designed_for - 1.0).abs() > REDESIGN_AT {
                    *designed_for = capacity;
                    bounded.redesign(params);
                }
                bounded
            }
            None => {
                let mut bounded = Bounded::new(params);
                bounded.begin(self.target, self.period, self.prediction);
                &mut self.designed.insert((capacity, bounded)).1
            }
        };
        bounded.admitted_rate(sample)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shed::design::NOMINAL_POLES;
    use crate::shed::sample::steady_period;

    /// Twice `processed_rate` arriving, as much admitted as processed.
    fn sample(age_ms: f64, processed_rate: f64) -> PeriodSample {
        steady_period(age_ms, 2.0 * processed_rate, processed_rate, processed_rate)
    }

    #[test]
    fn it_designs_for_the_capacity_it_measures_under_a_backlog_and_again_when_it_moves() {
        let mut auto = Auto::default();
        auto.begin(
            Duration::from_millis(300),
            Duration::from_millis(100),
            Prediction::Smith,
        );
        // No backlog: nothing measured, everything admitted.
        assert_eq!(auto.admitted_rate(&sample(2.0, 20_000.0)), 40_000.0);
        assert_eq!(auto.capacity(), None);
        // A backlog: the processed rate is the capacity, and the PI is the
        // nominal design at it.
        auto.admitted_rate(&sample(200.0, 20_000.0));
        assert_eq!(auto.capacity(), Some(20_000.0));
        let at = |capacity| nominal_pi(100.0, capacity, NOMINAL_POLES);
        assert_eq!(auto.designed().unwrap().params(), at(20_000.0));
        // A cost step: the capacity falls to 2/3; the estimate follows and
        // the PI is designed again for it.
        for _ in 0..20 {
            auto.admitted_rate(&sample(250.0, 13_333.0));
        }
        let capacity = auto.capacity().unwrap();
        assert!((capacity / 13_333.0 - 1.0).abs() < 0.01, "{capacity}");
        let designed = auto.designed().unwrap().params();
        assert!(
            (designed.g / at(13_333.0).g - 1.0).abs() <= REDESIGN_AT + 0.01,
            "{designed:?}"
        );
    }
}

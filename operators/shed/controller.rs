//! Controllers that set the admitted input rate from the measured delay:
//! the PI controller of the PILS paper, the open-loop coarse algorithm of
//! Aurora, and none.

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
}

/// Sets the admitted input rate each sampling period.
pub trait Controller {
    /// The controller's name in reports.
    fn name(&self) -> &'static str;
    /// The rate to admit during the next period, records/s (at most the
    /// arrival rate; the shedder drops the rest).
    fn admitted_rate(&mut self, sample: &PeriodSample) -> f64;
}

/// The fraction of arrivals to drop so that `admitted` of `arrival` pass.
pub fn drop_fraction(admitted: f64, arrival: f64) -> f64 {
    if arrival > 0.0 {
        (1.0 - admitted / arrival).clamp(0.0, 1.0)
    } else {
        0.0
    }
}

/// The parameters of [`Pi`]: C(k) = u·C(k−1) + g·(E(k) − r·E(k−1)).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PiParams {
    /// u: weight of the previous output (1 for integral action).
    pub u: f64,
    /// g: gain, records/s per ms of delay error.
    pub g: f64,
    /// r: the controller's zero.
    pub r: f64,
}

/// The PI controller (the paper's Eqn 2) on the error E(k) = D_t − AD(k),
/// with anti-windup: the state kept as C(k−1) is the output clipped to
/// [0, Î(k)], so a long underload does not wind the controller up, and,
/// while the delay is under the target, to at least the rate the dataflow
/// just processed, so it does not stay wound down after a burst. The first
/// C(k−1) is the rate processed in the first period.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pi {
    params: PiParams,
    target_ms: f64,
    previous_output: Option<f64>,
    previous_error: f64,
}

impl Pi {
    /// A PI controller holding the delay at `target_ms`.
    pub fn new(params: PiParams, target_ms: f64) -> Self {
        Pi {
            params,
            target_ms,
            previous_output: None,
            previous_error: 0.0,
        }
    }
}

impl Controller for Pi {
    fn name(&self) -> &'static str {
        "pi"
    }

    fn admitted_rate(&mut self, sample: &PeriodSample) -> f64 {
        let error = self.target_ms - sample.delay_ms;
        // Start from what the dataflow processed in the first period: all
        // arrivals when it keeps up, its capacity when the run starts
        // overloaded (starting from the arrival rate then would admit a
        // multiple of capacity for the periods the loop needs to come down).
        let previous = self
            .previous_output
            .unwrap_or_else(|| sample.processed_rate.min(sample.arrival_rate));
        let PiParams { u, g, r } = self.params;
        let output = u * previous + g * (error - r * self.previous_error);
        // Below the target, admitting less than the dataflow just processed
        // only loses records: that rate is the floor (conditional
        // integration, so the state does not wind down after a burst).
        let arrival = sample.arrival_rate.max(0.0);
        let floor = if error > 0.0 {
            sample.processed_rate.clamp(0.0, arrival)
        } else {
            0.0
        };
        let saturated = output.clamp(floor, arrival);
        self.previous_output = Some(saturated);
        self.previous_error = error;
        saturated
    }
}

/// Aurora's coarse algorithm, open loop: each period it takes the measured
/// processing rate as the capacity and sheds f = max(0, 1 − capacity/load)
/// of the next period's arrivals, with no memory of the delay already built
/// up. (The processing rate is measured after the shedder, so once it sheds
/// it keeps shedding about as much while the load falls: the paper's "sheds
/// too much when the input load is decreasing".)
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Coarse;

impl Controller for Coarse {
    fn name(&self) -> &'static str {
        "ca"
    }

    fn admitted_rate(&mut self, sample: &PeriodSample) -> f64 {
        sample.arrival_rate.min(sample.processed_rate)
    }
}

/// No shedding.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct NoShedding;

impl Controller for NoShedding {
    fn name(&self) -> &'static str {
        "none"
    }

    fn admitted_rate(&mut self, sample: &PeriodSample) -> f64 {
        sample.arrival_rate
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A period in which the dataflow kept up with what arrived.
    fn sample(delay_ms: f64, arrival_rate: f64) -> PeriodSample {
        measured(delay_ms, arrival_rate, arrival_rate)
    }

    /// A period in which the dataflow processed `processed_rate`.
    fn measured(delay_ms: f64, arrival_rate: f64, processed_rate: f64) -> PeriodSample {
        PeriodSample {
            delay_ms,
            arrival_rate,
            admitted_rate: arrival_rate.min(processed_rate),
            processed_rate,
        }
    }

    #[test]
    fn pi_follows_its_difference_equation() {
        let mut pi = Pi::new(PiParams { u: 1.0, g: 2.0, r: 0.5 }, 100.0);
        // C(0) = 1000 (all arrivals) + 2·(100 − 0.5·0) → clipped to 1000.
        assert_eq!(pi.admitted_rate(&sample(0.0, 1000.0)), 1000.0);
        // E = 100 − 300 = −200: C = 1000 + 2·(−200 − 0.5·100) = 500.
        assert_eq!(pi.admitted_rate(&sample(300.0, 1000.0)), 500.0);
        // E = −100: C = 500 + 2·(−100 + 100) = 500.
        assert_eq!(pi.admitted_rate(&sample(200.0, 1000.0)), 500.0);
    }

    #[test]
    fn below_the_target_it_admits_at_least_what_was_processed() {
        let mut pi = Pi::new(
            PiParams {
                u: 1.0,
                g: 10.0,
                r: 0.0,
            },
            300.0,
        );
        let burst = measured(600.0, 2000.0, 1000.0);
        // Over the target: C = 1000 + 10·(−300) → 0 (no floor).
        assert_eq!(pi.admitted_rate(&burst), 0.0);
        // Just under it after the burst: C = 0 + 10·1 = 10, but the
        // dataflow processed 800/s, so at least 800 pass.
        let after = measured(299.0, 1500.0, 800.0);
        assert_eq!(pi.admitted_rate(&after), 800.0);
        // And never more than arrives.
        let quiet = measured(10.0, 300.0, 800.0);
        assert_eq!(pi.admitted_rate(&quiet), 300.0);
    }

    #[test]
    fn an_overloaded_start_begins_from_the_processed_rate() {
        let mut pi = Pi::new(PiParams { u: 1.0, g: 1.0, r: 0.5 }, 100.0);
        let first = measured(150.0, 3000.0, 1000.0);
        // C(0) = 1000 + 1·(−50 − 0.5·0) = 950: near capacity, not 3000.
        assert_eq!(pi.admitted_rate(&first), 950.0);
    }

    #[test]
    fn anti_windup_keeps_the_state_within_the_arrival_rate() {
        let mut pi = Pi::new(
            PiParams {
                u: 1.0,
                g: 10.0,
                r: 0.0,
            },
            1000.0,
        );
        // A long underload: large positive errors would wind C(k) up.
        for _ in 0..100 {
            assert_eq!(pi.admitted_rate(&sample(0.0, 500.0)), 500.0);
        }
        // Overload arrives: the controller reacts at once from 500, not from
        // a wound-up value (E = 1000 − 1500 = −500 → C = 500 − 5000 → 0).
        assert_eq!(pi.admitted_rate(&sample(1500.0, 2000.0)), 0.0);
    }

    #[test]
    fn coarse_admits_the_measured_capacity_and_none_everything() {
        let overloaded = measured(5000.0, 1000.0, 600.0);
        assert_eq!(Coarse.admitted_rate(&overloaded), 600.0);
        assert_eq!(Coarse.admitted_rate(&sample(10.0, 800.0)), 800.0);
        assert_eq!(NoShedding.admitted_rate(&overloaded), 1000.0);
        assert_eq!(drop_fraction(600.0, 1000.0), 0.4);
        assert_eq!(drop_fraction(5.0, 0.0), 0.0);
    }
}

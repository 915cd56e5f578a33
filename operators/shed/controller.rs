//! Controllers that set the admitted input rate from the measured delay:
//! the PI controller of the PILS paper, the open-loop coarse algorithm of
//! Aurora, and none.

use serde::{Deserialize, Serialize};

use std::time::Duration;

use super::actuator::Actuation;
use super::predictor::Prediction;
use super::sample::PeriodSample;

/// Sets the admitted input rate each sampling period.
pub trait Controller {
    /// The controller's name in reports.
    fn name(&self) -> &'static str;
    /// Called once by the loop before its first period, with its target
    /// delay, its period and the delay it controls on: a controller that
    /// designs itself (as [`crate::shed::Auto`] does) learns them here.
    fn begin(&mut self, target: Duration, period: Duration, prediction: Prediction) {
        let _ = (target, period, prediction);
    }
    /// The rate to admit during the next period, records/s; the shedder
    /// drops what arrives beyond it (nothing, if it is above the arrival
    /// rate).
    fn admitted_rate(&mut self, sample: &PeriodSample) -> f64;
    /// Whether that rate is held as arrivals change within the period, or
    /// turned into a drop fraction once (see [`Actuation`]).
    fn actuation(&self) -> Actuation {
        Actuation::Rate
    }
    /// Whether the loop lets this controller drop only while measurements
    /// say the dataflow is overloaded, and keeps its decision over a period
    /// in which the process stood still (see [`crate::shed::ShedLoop`]): true
    /// for controllers that hold a delay; false for an open-loop baseline
    /// reproduced as published, and for an excitation, which drops by design.
    fn guarded(&self) -> bool {
        true
    }
}

impl<C: Controller + ?Sized> Controller for Box<C> {
    fn name(&self) -> &'static str {
        (**self).name()
    }

    fn begin(&mut self, target: Duration, period: Duration, prediction: Prediction) {
        (**self).begin(target, period, prediction)
    }

    fn admitted_rate(&mut self, sample: &PeriodSample) -> f64 {
        (**self).admitted_rate(sample)
    }

    fn actuation(&self) -> Actuation {
        (**self).actuation()
    }

    fn guarded(&self) -> bool {
        (**self).guarded()
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

/// The integral of [`Pi`] takes in errors within this fraction of the
/// target (integral separation): the operating point already covers large
/// changes, the integral only the model's small, lasting errors.
pub(crate) const INTEGRATION_BAND: f64 = 0.1;

/// The PI controller of the paper (its Eqn 2, transfer function
/// g(z − r)/(z − u)) on the error E(k) = D_t − AD(k), acting on deviations
/// from the operating point: the rate the dataflow just processed, Ĉ(k).
///
/// The model is identified on deviations from the operating point, so the
/// controller designed on it sets a deviation too:
/// C(k) = Ĉ(k) + g·E(k) + I(k), with I(k) = u·I(k−1) + g(u − r)·E(k−1).
/// While Ĉ is constant and nothing saturates this is exactly
/// C(k) − Ĉ = u·(C(k−1) − Ĉ) + g·(E(k) − r·E(k−1)). Written this way a jump
/// in capacity or load needs no integration to find the new operating
/// point: the integral only corrects what the model misses.
///
/// Anti-windup: the output is at least 0 and, while the delay is under the
/// target, at least Ĉ(k) (admitting less than was just processed would only
/// lose records). The integral takes in only errors within
/// ±10 % of the target that do not push the output further
/// below that floor or above Î(k), the most that can be admitted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pi {
    params: PiParams,
    target_ms: f64,
    integral: f64,
}

impl Pi {
    /// A PI controller with `params`, holding the delay at the loop's
    /// target (given to it by [`Controller::begin`]).
    pub fn new(params: PiParams) -> Self {
        Pi {
            params,
            target_ms: 0.0,
            integral: 0.0,
        }
    }
}

impl Controller for Pi {
    fn name(&self) -> &'static str {
        "pi"
    }

    fn begin(&mut self, target: Duration, _: Duration, _: Prediction) {
        self.target_ms = target.as_secs_f64() * 1000.0;
    }

    fn admitted_rate(&mut self, sample: &PeriodSample) -> f64 {
        let error = self.target_ms - sample.delay_ms;
        let PiParams { u, g, r } = self.params;
        let operating = sample.processed_rate.max(0.0);
        let arrival = sample.arrival_rate.max(0.0);
        let floor = if error > 0.0 { operating.min(arrival) } else { 0.0 };
        let output = operating + g * error + self.integral;
        // I(k+1) = u·I(k) + g(u − r)·E(k), unless the output is clipped on
        // the side this error pushes it to, or the delay is still far from
        // the target (the proportional term is moving it there, and an
        // integral of that approach would carry it past).
        let winding = (output > arrival && error > 0.0) || (output < floor && error < 0.0);
        let far = error.abs() > INTEGRATION_BAND * self.target_ms;
        if !(winding || far) {
            self.integral = u * self.integral + g * (u - r) * error;
        }
        // Above the arrival rate is kept: with a held rate it caps what the
        // next period admits if arrivals jump.
        output.max(floor)
    }
}

/// The delay target as a bound (ours): a [`Pi`] whose setpoint sits under
/// the bound by a margin learned from how far each period's delay rose
/// above its trend ([`PeriodSample::spread_ms`]). A PI holds the delay *at* its setpoint, so
/// half the records of a noisy period wait longer; this one keeps the
/// worst of them under the bound, at the price of a backlog smaller by the
/// margin (a one-time loss when an overload begins).
///
/// The margin follows m + 3·v, m and v the smoothed mean and mean deviation
/// of x(k) = spread(k) (as TCP's retransmission timer
/// follows round trips), rising fast and falling slowly; it is learned
/// only while the loop is in control (the mean delay within 25 % of the
/// setpoint), and kept between 5 % and 80 % of the bound.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bounded {
    pi: Pi,
    bound_ms: f64,
    mean: f64,
    deviation: f64,
}

/// The margin a [`Bounded`] starts with, as a share of the bound.
const INITIAL_MARGIN: f64 = 0.1;
/// Weights of a new reading in the margin's statistics, when it is above
/// their mean and when below.
const MARGIN_RISE: f64 = 0.25;
const MARGIN_FALL: f64 = 0.05;

impl Bounded {
    /// A controller keeping the delay under the loop's target (given to it
    /// by [`Controller::begin`]), with PI `params`.
    pub fn new(params: PiParams) -> Self {
        Bounded {
            pi: Pi::new(params),
            bound_ms: 0.0,
            mean: 0.0,
            deviation: 0.0,
        }
    }

    /// The setpoint the PI holds now, ms.
    pub fn setpoint_ms(&self) -> f64 {
        self.pi.target_ms
    }

    /// The PI's parameters now.
    pub fn params(&self) -> PiParams {
        self.pi.params
    }

    /// New PI parameters, keeping what the controller has learned (its
    /// integral and its margin).
    pub(crate) fn redesign(&mut self, params: PiParams) {
        self.pi.params = params;
    }
}

impl Controller for Bounded {
    fn name(&self) -> &'static str {
        "bound"
    }

    fn begin(&mut self, target: Duration, _: Duration, _: Prediction) {
        self.bound_ms = target.as_secs_f64() * 1000.0;
        self.pi.target_ms = self.bound_ms * (1.0 - INITIAL_MARGIN);
        self.deviation = INITIAL_MARGIN * self.bound_ms / 3.0;
    }

    fn admitted_rate(&mut self, sample: &PeriodSample) -> f64 {
        let setpoint = self.pi.target_ms;
        if (sample.delay_ms - setpoint).abs() < 0.25 * setpoint {
            // The spread within the period: how far its delay rose above
            // its trend. Not the worst beyond the setpoint, nor beyond the
            // period's mean: while the delay comes down to a setpoint just
            // lowered, both read the approach as noise (at W = 1 s the
            // margin reached 80 % of the bound on a load that was falling).
            let excess = sample.spread_ms;
            let weight = |up: bool| if up { MARGIN_RISE } else { MARGIN_FALL };
            self.mean += weight(excess > self.mean) * (excess - self.mean);
            let spread = (excess - self.mean).abs();
            self.deviation += weight(spread > self.deviation) * (spread - self.deviation);
        }
        let margin = (self.mean + 3.0 * self.deviation).clamp(0.05 * self.bound_ms, 0.8 * self.bound_ms);
        self.pi.target_ms = self.bound_ms - margin;
        self.pi.admitted_rate(sample)
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

    fn actuation(&self) -> Actuation {
        Actuation::Fraction
    }

    fn guarded(&self) -> bool {
        false
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

    fn actuation(&self) -> Actuation {
        Actuation::Fraction
    }

    fn guarded(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shed::actuator::drop_fraction;
    use crate::shed::sample::steady_period;

    /// `controller` begun by a loop with target `target_ms`.
    fn begun<C: Controller>(mut controller: C, target_ms: f64) -> C {
        let target = Duration::from_secs_f64(target_ms / 1000.0);
        controller.begin(target, Duration::from_millis(100), Prediction::Smith);
        controller
    }

    /// A period in which the dataflow kept up with what arrived.
    fn sample(delay_ms: f64, arrival_rate: f64) -> PeriodSample {
        measured(delay_ms, arrival_rate, arrival_rate)
    }

    /// A period in which the dataflow processed `processed_rate`.
    fn measured(delay_ms: f64, arrival_rate: f64, processed_rate: f64) -> PeriodSample {
        steady_period(delay_ms, arrival_rate, arrival_rate.min(processed_rate), processed_rate)
    }

    #[test]
    fn pi_follows_the_papers_difference_equation_around_the_operating_point() {
        let params = PiParams { u: 0.9, g: 2.0, r: 0.5 };
        let mut pi = begun(Pi::new(params), 300.0);
        // Overloaded (capacity 1000/s processed, 5000/s arriving) and over
        // the target throughout, but within the integration band, so nothing
        // clips and every error is integrated.
        let (processed, arrival) = (1000.0, 5000.0);
        let (mut previous_output, mut previous_error) = (processed, 0.0);
        for delay in [310.0, 325.0, 302.0, 329.0, 315.0, 301.0] {
            let output = pi.admitted_rate(&measured(delay, arrival, processed));
            let error = 300.0 - delay;
            let expected =
                processed + params.u * (previous_output - processed) + params.g * (error - params.r * previous_error);
            assert!((output - expected).abs() < 1e-9, "{output} vs {expected}");
            (previous_output, previous_error) = (output, error);
        }
    }

    #[test]
    fn a_jump_in_capacity_moves_the_output_at_once() {
        let mut pi = begun(Pi::new(PiParams { u: 1.0, g: 1.0, r: 0.5 }), 100.0);
        // At the target the controller admits what the dataflow processes,
        // from the first period on (an overloaded start begins there too).
        assert_eq!(pi.admitted_rate(&measured(100.0, 3000.0, 1000.0)), 1000.0);
        assert_eq!(pi.admitted_rate(&measured(100.0, 3000.0, 500.0)), 500.0);
        // 50 ms over: C = 500 + 1·(−50) + 0.
        assert_eq!(pi.admitted_rate(&measured(150.0, 3000.0, 500.0)), 450.0);
    }

    #[test]
    fn below_the_target_it_admits_at_least_what_was_processed() {
        let params = PiParams {
            u: 1.0,
            g: 10.0,
            r: 0.0,
        };
        let mut pi = begun(Pi::new(params), 300.0);
        let burst = measured(600.0, 2000.0, 1000.0);
        // Over the target: C = 1000 + 10·(−300) → 0 (no floor).
        assert_eq!(pi.admitted_rate(&burst), 0.0);
        // Just under it after the burst the integral would take the −300
        // in and push the output below the floor: it is frozen instead, and
        // C = 800 + 10·1.
        let after = measured(299.0, 1500.0, 800.0);
        assert_eq!(pi.admitted_rate(&after), 810.0);
        // Far under the target everything arriving is admitted: C = 800 +
        // 10·290 + 10 (the integral of the 1 ms before), above the 300/s
        // arriving.
        let quiet = measured(10.0, 300.0, 800.0);
        assert_eq!(pi.admitted_rate(&quiet), 3710.0);
    }

    #[test]
    fn anti_windup_keeps_the_integral_out_of_a_long_underload() {
        let params = PiParams {
            u: 1.0,
            g: 10.0,
            r: 0.0,
        };
        let mut pi = begun(Pi::new(params), 1000.0);
        // A long underload: large positive errors would wind the integral
        // up. Everything is admitted: C = 500 + 10·1000.
        for _ in 0..100 {
            assert_eq!(pi.admitted_rate(&sample(0.0, 500.0)), 10_500.0);
        }
        // Overload arrives at the target: the controller admits capacity,
        // not capacity plus a wound-up integral.
        assert_eq!(pi.admitted_rate(&measured(1000.0, 2000.0, 800.0)), 800.0);
        // Over it: E = −500 → C = 800 − 5000 → 0.
        assert_eq!(pi.admitted_rate(&measured(1500.0, 2000.0, 800.0)), 0.0);
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

    #[test]
    fn bounded_sets_its_setpoint_under_the_bound_by_the_spread_it_sees() {
        let params = PiParams { u: 1.0, g: 1.0, r: 0.5 };
        let mut bounded = begun(Bounded::new(params), 1000.0);
        assert_eq!(bounded.setpoint_ms(), 900.0);
        // Idle (the delay far under the setpoint): nothing is learned.
        for _ in 0..50 {
            bounded.admitted_rate(&sample(0.0, 500.0));
        }
        assert_eq!(bounded.setpoint_ms(), 900.0);
        // In control, each period's worst record 120 ms over the mean
        // delay, which sits at the setpoint: the margin converges to about
        // 120 ms (its deviation decays), the setpoint to about 880 ms.
        for _ in 0..200 {
            let setpoint = bounded.setpoint_ms();
            let mut period = measured(setpoint, 3000.0, 1000.0);
            period.spread_ms = 120.0;
            bounded.admitted_rate(&period);
        }
        let setpoint = bounded.setpoint_ms();
        assert!((875.0..=885.0).contains(&setpoint), "{setpoint}");
        // A noisier machine (worst records 100 or 300 ms over): a wider margin.
        for k in 0..200 {
            let setpoint = bounded.setpoint_ms();
            let mut period = measured(setpoint, 3000.0, 1000.0);
            period.spread_ms = if k % 2 == 0 { 100.0 } else { 300.0 };
            bounded.admitted_rate(&period);
        }
        let noisy = bounded.setpoint_ms();
        assert!(noisy < 700.0, "{noisy}");
    }
}

//! A controller whose rate reaches the drops another way than its own.

use std::time::Duration;

use super::actuator::Actuation;
use super::controller::Controller;
use super::predictor::Prediction;
use super::sample::PeriodSample;

/// `controller`, its rate acted on by `actuation` instead of its own way
/// ([`Controller::actuation`]): e.g. the paper's PI as the drop fraction it
/// describes (`Acting::new(pi, Actuation::Fraction)`), where this library's
/// loops hold the rate by default.
#[derive(Debug, Clone)]
pub struct Acting<C> {
    controller: C,
    actuation: Actuation,
}

impl<C: Controller> Acting<C> {
    /// `controller` acting by `actuation`.
    pub fn new(controller: C, actuation: Actuation) -> Self {
        Acting { controller, actuation }
    }
}

impl<C: Controller> Controller for Acting<C> {
    fn name(&self) -> &'static str {
        self.controller.name()
    }

    fn begin(&mut self, target: Duration, period: Duration, prediction: Prediction) {
        self.controller.begin(target, period, prediction);
    }

    fn admitted_rate(&mut self, sample: &PeriodSample) -> f64 {
        self.controller.admitted_rate(sample)
    }

    fn actuation(&self) -> Actuation {
        self.actuation
    }

    fn guarded(&self) -> bool {
        self.controller.guarded()
    }
}

//! PI-controlled load shedding (Huang et al., "PILS"): a delay monitor on
//! the output frontier, controllers (PI, the coarse algorithm, none), the
//! shedding operator, the throttle that slows a source instead, and
//! identification and pole-placement design.

mod actuator;
mod auto;
mod closed_loop;
mod controller;
mod deadline;
mod design;
mod events;
mod excitation;
#[cfg(test)]
mod fluid_queue;
mod loop_core;
mod predictor;
mod sharing;
mod shedder;
mod sliced;
mod throttle;

pub use actuator::Actuation;
pub use auto::Auto;
pub use closed_loop::{Clock, LoopFigures, LoopHandle, LoopPeriod, LoopSettings, ShedLoop, DEFAULT_HISTORY};
pub use controller::{Bounded, Coarse, Controller, NoShedding, PeriodSample, Pi, PiParams};
pub use deadline::Deadline;
pub use design::{
    closed_loop_poles, default_poles, design, first_order_pi, fit_arx, fit_identification, fit_periods, is_stable,
    nominal_model, nominal_pi, ArxModel, Design, MEASURED_DELAY_POLES, NOMINAL_POLES,
};
pub use events::{LoopEvent, LoopEventBuilder, LoopKind, LOG_NAME};
pub use excitation::{ExcitationSpec, Excited};
pub use predictor::Prediction;
pub use shedder::{Shed, ShedMode, Shedder};
pub use sliced::TimeSliced;
pub use throttle::{Throttle, ThrottleFigures, ThrottleLoop, ThrottlePeriod};

//! PI-controlled load shedding (Huang et al., "PILS"): a delay monitor on
//! the output frontier, controllers (PI, the coarse algorithm, none), the
//! shedding operator, the throttle that slows a source instead, and
//! identification and pole-placement design ([`design`]).

mod acting;
mod actuator;
mod auto;
mod closed_loop;
mod controller;
mod deadline;
pub mod design;

/// What a shedding loop and a throttle did: their counts and recent
/// periods ([`LoopHandle::figures`], [`Throttle::figures`]), and the
/// measurements of a period that a [`Controller`] is given.
pub mod figures {
    pub use super::loop_figures::{LoopFigures, LoopPeriod};
    pub use super::sample::PeriodSample;
    pub use super::settings::DEFAULT_HISTORY;
    pub use super::throttle::{ThrottleFigures, ThrottlePeriod};
}
mod drops;
pub mod events;
mod excitation;
#[cfg(test)]
mod fluid_queue;
mod loop_core;
mod loop_figures;
mod predictor;
mod sample;
mod settings;
mod sharing;
mod shedder;
mod sliced;
mod throttle;

pub use acting::Acting;
pub use actuator::Actuation;
pub use auto::Auto;
pub use closed_loop::{LoopHandle, ShedLoop};
pub use controller::{Bounded, Coarse, Controller, NoShedding, Pi, PiParams};
pub use deadline::Deadline;
pub use drops::Drops;
pub use events::LOG_NAME;
pub use excitation::{ExcitationSpec, Excited};
pub use predictor::Prediction;
pub use settings::{Clock, LoopSettings};
pub use shedder::{Shed, Shedder};
pub use sliced::TimeSliced;
pub use throttle::{Throttle, ThrottleLoop};

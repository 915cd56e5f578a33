//! PI-controlled load shedding (Huang et al., "PILS"): a delay monitor on
//! the output frontier, controllers (PI, the coarse algorithm, none), the
//! shedding operator, and identification and pole-placement design.

pub mod actuator;
#[cfg(feature = "lab")]
pub mod cli;
pub mod closed_loop;
pub mod controller;
pub mod design;
pub mod excitation;
#[cfg(test)]
#[cfg(any(feature = "lab", test))]
mod fluid_queue;
#[cfg(feature = "lab")]
pub mod identification;
#[cfg(feature = "lab")]
pub mod job;
#[cfg(feature = "lab")]
pub mod plot;
pub mod predictor;
#[cfg(feature = "lab")]
pub mod profile;
#[cfg(feature = "lab")]
pub mod scenario;
pub mod shedder;
pub mod sliced;

pub use actuator::Actuation;
pub use closed_loop::{Clock, LoopFigures, LoopHandle, LoopPeriod, LoopSettings, ShedLoop};
pub use controller::{Bounded, Coarse, Controller, NoShedding, PeriodSample, Pi, PiParams};
pub use design::{design, fit_periods, nominal_pi, ArxModel, Design, NOMINAL_POLES};
pub use excitation::{ExcitationSpec, Excited};
pub use predictor::Prediction;
pub use shedder::ShedMode;
pub use sliced::TimeSliced;

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
mod drops;
mod events;
mod excitation;
mod figures;
#[cfg(test)]
mod fluid_queue;
mod loop_core;
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
pub use events::{LoopEvent, LoopEventBuilder, LoopKind, LOG_NAME};
pub use excitation::{ExcitationSpec, Excited};
pub use figures::{LoopFigures, LoopPeriod};
pub use predictor::Prediction;
pub use sample::PeriodSample;
pub use settings::{Clock, LoopSettings, DEFAULT_HISTORY};
pub use shedder::{Shed, Shedder};
pub use sliced::TimeSliced;
pub use throttle::{Throttle, ThrottleFigures, ThrottleLoop, ThrottlePeriod};

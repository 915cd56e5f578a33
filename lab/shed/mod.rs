//! Load shedding's experiments: the shedding job and its command line,
//! identification runs, rate profiles, readers, scenarios and plots.

pub mod cli;
pub mod identification;
pub mod job;
pub mod plot;
pub mod profile;
pub mod readers;
pub mod scenario;

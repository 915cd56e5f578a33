//! Shared by the experiments: timely's cluster flags and start-up, job
//! driving, gathering results at one worker, latency summaries, key
//! streams, line readers, memory checks, CPU time, reports and the
//! examples' logs.

pub mod cluster;
pub mod cpu;
pub mod digest;
pub mod doctor_args;
pub mod driver;
pub mod error;
pub mod example_runs;
pub mod gather;
pub mod keys;
pub mod latency;
pub mod launch;
pub mod lines;
pub mod log_file;
pub mod median;
pub mod memory;
pub mod program;
mod watch;

pub use error::Error;

//! Helpers shared by the capabilities: deterministic hashing, errors, timely's
//! cluster flags, gathering results at one worker, busy work, latency
//! summaries and workload generators.

pub mod cluster;
pub mod driver;
pub mod error;
pub mod gather;
pub mod hash;
pub mod keys;
pub mod latency;
pub mod lines;
pub mod median;
pub mod memory;
pub mod report;
pub mod scatter;
pub mod spin;
pub mod stash;
mod watch;

pub use error::Error;

//! Helpers shared by the capabilities: deterministic hashing, errors, busy
//! work, and the time stash of the operators; with the `lab` feature (on
//! by default), the experiment harness: timely's cluster flags and start-up,
//! job driving, gathering results at one worker, latency summaries, key
//! streams, line readers, reports.

pub mod busy_work;
#[cfg(feature = "lab")]
pub mod cluster;
#[cfg(feature = "lab")]
pub mod driver;
pub mod error;
#[cfg(feature = "lab")]
pub mod gather;
pub mod hash;
mod history;
#[cfg(feature = "lab")]
pub mod keys;
#[cfg(feature = "lab")]
pub mod latency;
#[cfg(feature = "lab")]
pub mod lines;
#[cfg(feature = "lab")]
pub mod log_file;
#[cfg(feature = "lab")]
pub mod median;
#[cfg(feature = "lab")]
pub mod memory;
#[cfg(feature = "lab")]
pub mod program;
pub(crate) mod stash;
#[cfg(feature = "lab")]
mod watch;

pub use busy_work::BusyWork;
pub use error::Error;
pub(crate) use history::keep_recent;

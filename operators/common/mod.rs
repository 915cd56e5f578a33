//! Helpers shared by the capabilities: deterministic hashing, errors, busy
//! work, and the time stash of the operators.

pub mod busy_work;
pub mod error;
pub mod gather;
pub mod hash;
mod history;
pub(crate) mod stash;

pub use busy_work::BusyWork;
pub use error::Error;
pub(crate) use history::keep_recent;

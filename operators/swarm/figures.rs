//! What a SWARM run did, as the operator's handles report it: the
//! coordinator's orders ([`Orders`]), each worker's executor figures
//! ([`ExecutorFigures`], with its recent epochs' work, [`EpochWork`]) and
//! what its dispatcher refused ([`Refused`]).

pub use super::coordinator::Orders;
pub use super::dispatch::Refused;
pub use super::executor::{EpochWork, ExecutorFigures, RECENT_EPOCHS};

//! What SWARM's coordinator decides, as timely log events: a program
//! registers a logger under [`LOG_NAME`] with `worker.log_register()`
//! before building its dataflow, and worker 0 (where the coordinator runs)
//! logs each round's loads and each change to the plan; each worker logs
//! the partitions it sends away, with their bytes. Nobody listening costs
//! nothing: the loggers are looked up once, when the operator is built.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use timely::container::CapacityContainerBuilder;

use super::cost::WorkerLoad;
use super::ids::PartitionId;
use super::index::PlanChange;

/// The name the coordinator logs under.
pub const LOG_NAME: &str = "equipoise/swarm";

/// The container builder of SWARM's log: `(time since the worker's logging
/// began, event)` pairs.
pub type SwarmEventBuilder = CapacityContainerBuilder<Vec<(Duration, SwarmEvent)>>;

/// One decision of the coordinator.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum SwarmEvent {
    /// A round ended: what every worker reported.
    Round {
        /// The epoch the round ended at.
        epoch: u64,
        /// Num(C(m)) and R(m) of each worker, by worker index.
        loads: Vec<WorkerLoad>,
    },
    /// The plan changed: a partition moved, split, was shared or unshared,
    /// or two merged (the partitions and the workers are in the change).
    Change {
        /// The epoch from which the new plan holds.
        effective: u64,
        /// What changed.
        change: PlanChange,
    },
    /// A partition's state left this worker for its new owner (logged by
    /// the worker that sent it, at a move, or a split or merge whose part
    /// changes owner).
    Migrated {
        /// The partition.
        id: PartitionId,
        /// The worker that sent it.
        from: usize,
        /// The worker that receives it.
        to: usize,
        /// The epoch from which its new owner holds it.
        effective: u64,
        /// What moved: the application's `moved_bytes` and the
        /// partition's statistics.
        bytes: u64,
    },
}

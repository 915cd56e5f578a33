//! The SWARM pact: routes each record, tagged with its partition, to the
//! partition's owner under the plan valid at the record's time.
//!
//! A pact may not change the number of records (timely's progress tracking
//! counts them on both sides), so the copies of a range query, one per
//! overlapping partition (Algorithm 1), are made by the router operator
//! upstream, which tags every copy; the pact resolves each tag to its owner
//! at the batch's time.

use std::cell::RefCell;
use std::rc::Rc;

use serde::{Deserialize, Serialize};
use timely::communication::Push;
use timely::dataflow::channels::pact::ParallelizationContract;
use timely::dataflow::channels::Message;
use timely::logging::TimelyLogger;
use timely::worker::Worker;

use crate::common::scatter::{allocate_scatter, LoggedPuller, LoggedPusher, Scatter};

use super::ids::PartitionId;
use super::plan::PlanHistory;

/// Routes `(partition, record)` pairs at time `t` to the owner of the
/// partition in the plan valid at `t`, read from the history the router
/// shares.
pub struct SwarmPact {
    history: Rc<RefCell<PlanHistory>>,
}

impl SwarmPact {
    /// A pact reading the plan from `history`.
    pub fn new(history: Rc<RefCell<PlanHistory>>) -> Self {
        SwarmPact { history }
    }
}

impl<R> ParallelizationContract<u64, Vec<(PartitionId, R)>> for SwarmPact
where
    R: Serialize + for<'a> Deserialize<'a> + Send + 'static,
{
    type Pusher = SwarmPusher<R, LoggedPusher<u64, (PartitionId, R)>>;
    type Puller = LoggedPuller<u64, (PartitionId, R)>;

    fn connect(
        self,
        worker: &Worker,
        identifier: usize,
        address: Rc<[usize]>,
        logging: Option<TimelyLogger>,
    ) -> (Self::Pusher, Self::Puller) {
        let (scatter, puller) = allocate_scatter(worker, identifier, address, logging);
        (
            SwarmPusher {
                scatter,
                history: self.history,
            },
            puller,
        )
    }
}

/// The sending end of a [`SwarmPact`].
pub struct SwarmPusher<R, P> {
    scatter: Scatter<u64, (PartitionId, R), P>,
    history: Rc<RefCell<PlanHistory>>,
}

impl<R, P: Push<Message<u64, Vec<(PartitionId, R)>>>> Push<Message<u64, Vec<(PartitionId, R)>>> for SwarmPusher<R, P> {
    fn push(&mut self, message: &mut Option<Message<u64, Vec<(PartitionId, R)>>>) {
        let history = self.history.borrow();
        self.scatter.push(message, |stamp, (partition, _)| {
            let time = *stamp.least().expect("records travel under a capability");
            history
                .at(time)
                .info(*partition)
                .unwrap_or_else(|| panic!("partition {partition} is not in the plan for epoch {time}"))
                .owner
        });
    }
}

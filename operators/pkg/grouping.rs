//! Routing policies: how one sending worker picks the destination of each
//! record. The pacts, the tests and the lab's replay simulator share these
//! traits, so each policy has exactly one implementation; what a sender
//! reports of its routing (its head keys, its send counts) is here too.

use std::cell::RefCell;
use std::rc::Rc;

use serde::{Deserialize, Serialize};

/// The routing state one sender keeps.
pub trait Router {
    /// The destination of a record whose key fingerprint is `key` and whose
    /// cost (for load estimation) is `cost`; records the send in the load
    /// estimate.
    fn route(&mut self, key: u64, cost: u64) -> usize;

    /// Whether a pact should route a whole batch before it moves any record
    /// (default: no, one loop routes and moves each record in turn).
    ///
    /// A router whose [`route`](Router::route) compares loads says yes, at
    /// any number of workers: in one loop with the moves, which index
    /// per-worker buffers by the destination, the compiler turns that
    /// comparison into a branch, and on uniform keys the branch mispredicts
    /// on about every other record. (PKG says no at two workers only
    /// because its own `route_each` then keeps the difference of the two
    /// loads in a register.) When yes, the pact calls `route_each` with `()`
    /// items and relies on it calling `sink` once per record, in order.
    fn route_apart(&self) -> bool {
        false
    }

    /// Routes a batch: hands each `(key, cost, item)` of `records` in turn
    /// to `sink` with its destination, exactly as [`route`](Router::route)
    /// would route them one by one. Policies override it where keeping their
    /// state in registers for a whole batch is faster.
    #[inline]
    fn route_each<X>(&mut self, records: impl Iterator<Item = (u64, u64, X)>, mut sink: impl FnMut(usize, X))
    where
        Self: Sized,
    {
        for (key, cost, item) in records {
            sink(self.route(key, cost), item);
        }
    }

    /// A number that changes whenever the keys this router spreads wider
    /// than PKG's two workers change (default: 0, none ever).
    fn head_version(&self) -> u64 {
        0
    }

    /// The number of workers head keys get, and the head keys (default:
    /// none).
    fn head(&self) -> (usize, Vec<HeadKey>) {
        (2, Vec::new())
    }
}

/// A routing policy: builds the router of each sending worker.
pub trait Grouping {
    /// The per-sender routing state.
    type Router: Router + 'static;
    /// The router of worker `sender` among `peers` workers.
    fn router(&self, peers: usize, sender: usize) -> Self::Router;
}

/// One key of the head a D-/W-Choices sender spreads wider than PKG's two
/// workers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeadKey {
    /// The key's fingerprint, as the pact's key function returned it.
    pub key: u64,
    /// How many workers it may go to (every worker for a key with more
    /// than one worker's share, and under W-Choices).
    pub workers: usize,
}

/// How many records each destination worker has been sent by this worker
/// through one pact, shared with the program that built the pact.
///
/// Sizes itself when the pact is connected; empty before the dataflow is built.
#[derive(Debug, Clone, Default)]
pub struct SendCounts(pub(crate) Rc<RefCell<Vec<u64>>>);

impl SendCounts {
    /// Records sent to each worker so far, by worker index.
    pub fn get(&self) -> Vec<u64> {
        self.0.borrow().clone()
    }

    /// Records sent in all.
    pub fn total(&self) -> u64 {
        self.0.borrow().iter().sum()
    }
}

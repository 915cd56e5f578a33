//! Holding per-time state in an operator until its input frontier passes the
//! time: the pattern behind every blocking operator of equipoise.

use std::collections::BTreeMap;

use timely::dataflow::operators::{Capability, InputCapability};
use timely::order::TotalOrder;
use timely::progress::frontier::MutableAntichain;
use timely::progress::Timestamp;

/// State `S` per pending time, each with the capability to emit at it.
pub(crate) struct TimeStash<T: Timestamp, S> {
    pending: BTreeMap<T, (Capability<T>, S)>,
}

impl<T: Timestamp, S> Default for TimeStash<T, S> {
    fn default() -> Self {
        TimeStash {
            pending: BTreeMap::new(),
        }
    }
}

impl<T: Timestamp + TotalOrder, S: Default> TimeStash<T, S> {
    /// The state of the time of `cap` (created empty, holding a capability
    /// for output 0). `None` for a message without a stamp: it makes no
    /// progress claim and cannot be held, and timely's own operators drop it.
    pub(crate) fn at(&mut self, cap: &InputCapability<T>) -> Option<&mut S> {
        let time = cap.least()?;
        let (_, state) = self
            .pending
            .entry(time.clone())
            .or_insert_with(|| (cap.retain_least(0).expect("stamp has a least time"), S::default()));
        Some(state)
    }

    /// Hands every time the frontier has passed to `each`, in time order.
    pub(crate) fn drain_complete(&mut self, frontier: &MutableAntichain<T>, each: impl FnMut(Capability<T>, S)) {
        self.drain_while(|time| !frontier.less_equal(time), each);
    }

    /// Hands the pending times to `each` in time order, while `complete`
    /// holds for them.
    pub(crate) fn drain_while(&mut self, mut complete: impl FnMut(&T) -> bool, mut each: impl FnMut(Capability<T>, S)) {
        while let Some(entry) = self.pending.first_entry() {
            if !complete(entry.key()) {
                break;
            }
            let (cap, state) = entry.remove();
            each(cap, state);
        }
    }

    /// The earliest pending time.
    pub(crate) fn first_time(&self) -> Option<&T> {
        self.pending.keys().next()
    }
}

//! A fluid FIFO queue, one sampling period per step: the plant of the
//! shedding loop without a dataflow, so that prediction and identification
//! can be tested exactly and fast.

use std::collections::VecDeque;

/// Records admitted per period wait in arrival order for a server of fixed
/// capacity.
#[derive(Debug, Clone, Default)]
pub(crate) struct FluidQueue {
    /// (first arrival ms, records admitted, records left) per period,
    /// oldest first; a period's records arrive evenly over it.
    batches: VecDeque<(f64, f64, f64)>,
    now: f64,
}

impl FluidQueue {
    /// Admits `admitted` records/s for one period of `period_ms` (spread
    /// evenly over it) and serves `capacity` records/s; returns the age of the
    /// oldest record left (the frontier delay) and the processed rate.
    pub(crate) fn step(&mut self, admitted: f64, capacity: f64, period_ms: f64) -> (f64, f64) {
        let count = admitted * period_ms / 1000.0;
        self.batches.push_back((self.now, count, count));
        self.now += period_ms;
        let mut budget = capacity * period_ms / 1000.0;
        let mut processed = 0.0;
        while let Some(front) = self.batches.front_mut() {
            let take = front.2.min(budget);
            front.2 -= take;
            budget -= take;
            processed += take;
            if front.2 > 1e-9 {
                break;
            }
            self.batches.pop_front();
        }
        let age = self.batches.front().map_or(0.0, |&(start, count, left)| {
            self.now - (start + period_ms * (1.0 - left / count))
        });
        (age, processed * 1000.0 / period_ms)
    }

    /// Records waiting.
    pub(crate) fn backlog(&self) -> f64 {
        self.batches.iter().map(|(_, _, left)| left).sum()
    }
}

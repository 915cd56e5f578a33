//! Collecting one value from every worker, in every process, at worker 0.

use timely::worker::Worker;
use timely::ExchangeData;

/// Sends `item` from this worker to worker 0 and returns, at worker 0, the items
/// of all workers ordered by worker index (elsewhere an empty vector).
///
/// Every worker of the computation must call it, the same number of times.
/// Reports use it to assemble per-worker figures across processes.
pub fn gather_at_first_worker<D: ExchangeData + Clone>(worker: &mut Worker, item: D) -> Vec<D> {
    equipoise::common::gather::gather_at_first_worker(worker, "Gather", item)
}

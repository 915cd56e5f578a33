//! The examples' output digests: a wrapping sum over every output update
//! (record, time, diff) of diff × a hash of (record, time), the same
//! however the updates are split over workers, processes and batches, and
//! different if any output came at another time.

use std::cell::Cell;
use std::hash::Hash;
use std::rc::Rc;

use differential_dataflow::VecCollection;
use equipoise::common::hash::{key_hash, splitmix64};
use timely::dataflow::operators::Probe;
use timely::dataflow::ProbeHandle;

/// One update's term of a digest.
pub fn update_digest<D: Hash>(record: &D, time: &u64, diff: isize) -> u64 {
    splitmix64(key_hash(&(record, time))).wrapping_mul(diff as u64)
}

/// Folds every update of `output` into `digest` and probes it with `probe`.
pub fn watch<D: differential_dataflow::Data + Hash>(
    output: VecCollection<'_, u64, D, isize>,
    digest: &Rc<Cell<u64>>,
    probe: &ProbeHandle<u64>,
) {
    let digest = Rc::clone(digest);
    output
        .inspect(move |(record, time, diff)| digest.set(digest.get().wrapping_add(update_digest(record, time, *diff))))
        .inner
        .probe_with(probe);
}

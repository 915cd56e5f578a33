//! Collecting one value from every worker, in every process, at worker 0.

use std::cell::RefCell;
use std::rc::Rc;

use timely::dataflow::operators::vec::Input;
use timely::dataflow::operators::{Exchange, Inspect, Probe};
use timely::dataflow::InputHandle;
use timely::worker::Worker;
use timely::ExchangeData;

/// Sends `item` from this worker to worker 0, through a dataflow named
/// `name`, and returns, at worker 0, the items of all workers ordered by
/// worker index (elsewhere an empty vector).
///
/// Every worker of the computation must call it, the same number of times.
pub fn gather_at_first_worker<D: ExchangeData + Clone>(worker: &mut Worker, name: &str, item: D) -> Vec<D> {
    let collected = Rc::new(RefCell::new(Vec::new()));
    let sink = Rc::clone(&collected);
    let mut input = InputHandle::new();
    let probe = worker.dataflow_named::<u64, _, _>(name, |scope| {
        let (probe, _stream) = scope
            .input_from(&mut input)
            .exchange(|_: &(usize, D)| 0)
            .inspect(move |pair: &(usize, D)| sink.borrow_mut().push(pair.clone()))
            .probe();
        probe
    });
    input.send((worker.index(), item));
    input.close();
    while !probe.done() {
        worker.step_or_park(None);
    }
    let mut items = collected.take();
    items.sort_by_key(|(index, _)| *index);
    items.into_iter().map(|(_, item)| item).collect()
}

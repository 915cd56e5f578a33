//! Feeding differential inputs from lists of updates, as the property tests
//! of the skew-proof operators do.

use differential_dataflow::input::InputSession;
use timely::dataflow::ProbeHandle;
use timely::worker::Worker;

/// An input with the updates it is fed: (record, time, diff).
pub type Fed<'a, D> = (InputSession<u64, D, isize>, &'a [(D, u64, isize)]);

/// Feeds every input its updates ((record, time, diff), dealt over the
/// workers by their position) time by time, then closes them and steps
/// until `probe` is done. Every other time every worker waits for `probe`
/// to pass it, so that what the operators learn from one time is known
/// before the next; in between they learn it late.
pub fn feed_in_turns<D: differential_dataflow::Data>(
    worker: &mut Worker,
    mut inputs: Vec<Fed<'_, D>>,
    probe: &ProbeHandle<u64>,
) {
    let (index, peers) = (worker.index(), worker.peers());
    let last = inputs
        .iter()
        .flat_map(|(_, updates)| updates.iter().map(|update| update.1))
        .max()
        .unwrap_or(0);
    for time in 0..=last {
        for (input, updates) in inputs.iter_mut() {
            input.advance_to(time);
            for (position, (record, at, diff)) in updates.iter().enumerate() {
                if *at == time && position % peers == index {
                    input.update(record.clone(), *diff);
                }
            }
            input.advance_to(time + 1);
            input.flush();
        }
        worker.step_while(|| probe.less_than(&(time + 1)) && time % 2 == 0);
    }
    for (input, _) in inputs {
        input.close();
    }
    while !probe.done() {
        worker.step();
    }
}

/// Closes epoch `epoch - 1` on every input (advancing them to `epoch`,
/// sending what they hold) and steps until `probe` passes it.
pub fn close_epoch<D: differential_dataflow::Data>(
    worker: &mut Worker,
    inputs: &mut [&mut InputSession<u64, D, isize>],
    epoch: u64,
    probe: &ProbeHandle<u64>,
) {
    for input in inputs.iter_mut() {
        input.advance_to(epoch);
        input.flush();
    }
    worker.step_while(|| probe.less_than(&epoch));
}

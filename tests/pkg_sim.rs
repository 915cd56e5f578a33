//! The replay simulator routes exactly as the pacts do: the same stream,
//! split the same way over the same number of senders, reaches each worker
//! the same number of times under every pact scheme, at 1 to 4 workers.

use std::sync::{Arc, Mutex};

use equipoise::pkg::{Grouped, Scheme};
use equipoise_lab::common::keys::KeySpec;
use equipoise_lab::pkg::sim::{replay, Dataset, SimScheme, Split};
use timely::container::CapacityContainerBuilder;
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::vec::Input;
use timely::dataflow::operators::Probe;
use timely::dataflow::InputHandle;

/// Per-destination totals of the pact's sends when worker w sends the
/// messages i ≡ w (mod workers) of `keys`, in order.
fn pact_loads(workers: usize, scheme: Scheme, keys: Arc<Vec<u64>>) -> Vec<u64> {
    let totals = Arc::new(Mutex::new(vec![0u64; workers]));
    let shared = Arc::clone(&totals);
    timely::execute(timely::Config::process(workers), move |worker| {
        let (index, peers) = (worker.index(), worker.peers());
        let mut input = InputHandle::new();
        let pact = Grouped::with_grouping(scheme, |key: &u64| *key);
        let sent = pact.send_counts();
        let probe = worker.dataflow::<u64, _, _>(|scope| {
            scope
                .input_from(&mut input)
                .unary::<CapacityContainerBuilder<Vec<u64>>, _, _, _>(pact, "Receive", |_, _| {
                    |input, _output| input.for_each(|_, data| data.clear())
                })
                .probe()
                .0
        });
        for &key in keys.iter().skip(index).step_by(peers) {
            input.send(key);
        }
        input.close();
        while !probe.done() {
            worker.step();
        }
        let mut totals = shared.lock().unwrap();
        for (total, count) in totals.iter_mut().zip(sent.get()) {
            *total += count;
        }
    })
    .unwrap();
    Arc::try_unwrap(totals).unwrap().into_inner().unwrap()
}

#[test]
fn simulator_and_pacts_route_alike() {
    // Skewed enough that D-Choices and W-Choices have a head (p1 ≈ 0.38).
    let data = Dataset::sampled(
        &KeySpec::Zipf {
            exponent: 1.5,
            distinct: 1000,
        },
        20_000,
        5,
    );
    let keys = Arc::new(data.keys.clone());
    for workers in 1..=4 {
        for scheme in Scheme::ALL {
            let simulated = replay(&data, SimScheme::Pact(scheme), workers, workers, Split::Even);
            let routed = pact_loads(workers, scheme, Arc::clone(&keys));
            assert_eq!(simulated.loads, routed, "{scheme} at {workers} workers");
        }
    }
}

//! PKG's memory soak: skewed keys from a bounded key space through
//! `pkg_count_running` (PKG) into `top_k`, and `pkg_aggregate` through D-Choices,
//! at 4 workers, as fast as the machine goes, with the pacts' log listened
//! to; the process's memory must stop growing after the first minute (see
//! `support/soak.rs`). Ten minutes, so ignored by default:
//!
//! ```sh
//! cargo test --release --test soak_pkg -- --ignored --nocapture
//! ```

use std::sync::atomic::Ordering;
use std::sync::Arc;

use equipoise::common::hash::splitmix64;
use equipoise::pkg::events::PkgEvent;
use equipoise::pkg::{key_hash, Aggregate, Grouped, PartialKeyGrouping, PkgCount, TopK, LOG_NAME};
use support::soak::Soak;
use timely::dataflow::operators::vec::{Input, Map};
use timely::dataflow::operators::Probe;
use timely::dataflow::{InputHandle, ProbeHandle};

mod support;

/// Distinct keys: every key is seen within the first seconds.
const KEYS: u64 = 200_000;
/// Records per epoch and worker.
const BATCH: u64 = 10_000;

#[test]
#[ignore = "a soak of ten minutes: cargo test --release --test soak_pkg -- --ignored --nocapture"]
fn pkg_operators_hold_their_memory() {
    let soak = Arc::new(Soak::new("pkg"));
    let shared = Arc::clone(&soak);
    timely::execute(timely::Config::process(4), move |worker| {
        let soak = Arc::clone(&shared);
        soak.count_events::<PkgEvent>(worker, LOG_NAME);
        let index = worker.index() as u64;
        let mut input = InputHandle::new();
        let probe = ProbeHandle::new();
        worker.dataflow::<u64, _, _>(|scope| {
            let keys = scope.input_from(&mut input);
            keys.clone()
                .pkg_count_running(PartialKeyGrouping::new(|key: &u64| key_hash(key)))
                .top_k(10)
                .probe_with(&probe);
            keys.map(|key| (key, 1u64))
                .pkg_aggregate(
                    Grouped::d_choices(|(key, _): &(u64, u64)| key_hash(key)),
                    |sum: &mut u64, one| *sum += one,
                    |sum, other| *sum += other,
                )
                .probe_with(&probe);
        });
        let mut epoch = 0u64;
        while soak.running() {
            for i in 0..BATCH {
                let n = splitmix64(index << 48 | (epoch * BATCH + i));
                // A fifth of the stream on one key, the rest uniform.
                input.send(if n.is_multiple_of(5) { 0 } else { n % KEYS });
            }
            epoch += 1;
            input.advance_to(epoch);
            while probe.less_than(input.time()) {
                worker.step();
            }
            soak.records.fetch_add(BATCH, Ordering::Relaxed);
        }
    })
    .unwrap();
    soak.check();
}

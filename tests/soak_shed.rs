//! Load shedding's memory soak: at 2 workers, a shedding loop in front of a
//! costly stage fed at about twice what the stage can do, and a throttle in
//! front of another fed by a source that never runs dry, both with `Auto`
//! and the loops' log listened to; the process's memory must stop growing
//! after the first minute (see `support/soak.rs`). The loops keep their
//! last `LoopSettings::history` periods (600 by default: a minute at
//! W = 100 ms, up to twice as many rows before the oldest go), so the soak
//! covers that window filling and turning over many times. Ten minutes, so
//! ignored by default:
//!
//! ```sh
//! cargo test --release --test soak_shed -- --ignored --nocapture
//! ```

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use equipoise::shed::events::LoopEvent;
use equipoise::shed::{Auto, LoopSettings, ShedLoop, ThrottleLoop, TimeSliced, LOG_NAME};
use support::soak::Soak;
use timely::dataflow::operators::vec::Input;
use timely::dataflow::operators::Probe;
use timely::dataflow::{InputHandle, ProbeHandle};

mod support;

/// Work per record in each costly stage.
const COST: Duration = Duration::from_micros(20);
/// Records each worker offers the shedding loop per second: twice what a
/// worker's two stages leave the shed one.
const OFFERED: f64 = 50_000.0;

/// Busy work for `COST`.
fn work(x: u64) -> Option<u64> {
    let began = Instant::now();
    while began.elapsed() < COST {}
    Some(x)
}

#[test]
#[ignore = "a soak of ten minutes: cargo test --release --test soak_shed -- --ignored --nocapture"]
fn shedding_loop_and_throttle_hold_their_memory() {
    let soak = Arc::new(Soak::new("shed"));
    let shared = Arc::clone(&soak);
    timely::execute(timely::Config::process(2), move |worker| {
        let soak = Arc::clone(&shared);
        soak.count_events::<LoopEvent>(worker, LOG_NAME);
        let settings = LoopSettings::new(Duration::from_millis(300));
        let (mut shed_input, mut throttle_input) = (InputHandle::new(), InputHandle::new());
        let (shed_output, throttle_output) = (ProbeHandle::new(), ProbeHandle::new());
        let (shed, throttle) = worker.dataflow::<u64, _, _>(|scope| {
            let (admitted, shed) =
                scope
                    .input_from(&mut shed_input)
                    .shed_loop(&settings, Auto::default(), &shed_output);
            admitted
                .time_sliced("Shed work", Duration::from_millis(1), |_time, x| work(x))
                .probe_with(&shed_output);
            let (passed, throttle) =
                scope
                    .input_from(&mut throttle_input)
                    .throttle_loop(&settings, Auto::default(), &throttle_output);
            passed
                .time_sliced("Throttled work", Duration::from_millis(1), |_time, x| work(x))
                .probe_with(&throttle_output);
            (shed, throttle)
        });
        let start = Instant::now();
        let (mut offered, mut sent) = (0u64, 0u64);
        while soak.running() {
            let now = start.elapsed();
            let due = (now.as_secs_f64() * OFFERED) as u64;
            while offered < due {
                shed_input.send(offered);
                offered += 1;
            }
            // The throttled source always has 1 000 records ready.
            let allowed = throttle.take(1_000) as u64;
            for x in sent..sent + allowed {
                throttle_input.send(x);
            }
            sent += allowed;
            let millis = now.as_millis() as u64;
            shed_input.advance_to(millis);
            throttle_input.advance_to(millis);
            worker.step();
        }
        drop((shed_input, throttle_input));
        while !(shed_output.done() && throttle_output.done()) {
            worker.step();
        }
        let (shed, throttle) = (shed.figures(), throttle.figures());
        soak.records.fetch_add(shed.processed + throttle.processed, Ordering::Relaxed);
        println!(
            "soak shed: worker {}: shed loop offered {offered}, processed {}, {} periods kept; throttle granted {}, processed {}, {} periods kept",
            worker.index(),
            shed.processed,
            shed.periods.len(),
            throttle.granted,
            throttle.processed,
            throttle.periods.len()
        );
    })
    .unwrap();
    soak.check();
}

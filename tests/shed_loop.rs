//! The shedding loop closed around a dataflow of the test's own, as a user
//! writes it: input → `shed_loop` → costly processing → probe. Checked
//! against counts kept downstream, independently of the loop.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use equipoise::shed::design::{default_poles, nominal_pi};
use equipoise::shed::predictor::Prediction;
use equipoise::shed::{LoopSettings, Pi, ShedLoop, TimeSliced};
use timely::dataflow::operators::{Input, Probe};
use timely::dataflow::{InputHandle, ProbeHandle};

const COST: Duration = Duration::from_micros(20);
const TARGET_MS: f64 = 200.0;
const PERIOD_MS: f64 = 50.0;

/// What one worker saw: (arrived, dropped, processed downstream, delays in ms).
type Seen = (u64, u64, u64, Vec<f64>);

/// One run at a time: the runs measure delays against a CPU they must
/// not share with each other.
static SERIAL: Mutex<()> = Mutex::new(());

/// `rate` records/s over all workers for `seconds`, stamped with their
/// arrival millisecond.
fn run(workers: usize, rate: f64, seconds: f64) -> Vec<Seen> {
    let _alone = SERIAL.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    timely::execute(timely::Config::process(workers), move |worker| {
        let start = Instant::now();
        let settings = LoopSettings::new(
            Duration::from_secs_f64(TARGET_MS / 1000.0),
            Duration::from_secs_f64(PERIOD_MS / 1000.0),
        )
        .with_clock(move |ms: &u64| start + Duration::from_millis(*ms));
        let capacity = 1e6 / COST.as_micros() as f64;
        let controller = Pi::new(
            nominal_pi(PERIOD_MS, capacity, default_poles(Prediction::Smith)),
            TARGET_MS,
        );
        let mut input = InputHandle::new();
        let output = ProbeHandle::new();
        let delays = Rc::new(RefCell::new(Vec::new()));
        let handle = worker.dataflow::<u64, _, _>(|scope| {
            let (admitted, handle) =
                scope
                    .input_from(&mut input)
                    .shed_loop(&settings, controller, &output, |_: &u64| 0.0);
            let seen = Rc::clone(&delays);
            admitted
                .time_sliced("Work", Duration::from_millis(2), move |_, arrival_ms: u64| {
                    let began = Instant::now();
                    while began.elapsed() < COST {}
                    seen.borrow_mut()
                        .push(start.elapsed().as_secs_f64() * 1000.0 - arrival_ms as f64);
                    None::<()>
                })
                .probe_with(&output);
            handle
        });
        let share = rate / worker.peers() as f64;
        let (mut sent, end) = (0u64, seconds * 1000.0);
        loop {
            let now = start.elapsed().as_secs_f64() * 1000.0;
            let due = (share * now.min(end) / 1000.0) as u64;
            let ms = now as u64;
            if *input.time() < ms {
                input.advance_to(ms);
            }
            while sent < due {
                input.send(ms);
                sent += 1;
            }
            if now >= end {
                break;
            }
            worker.step();
        }
        drop(input);
        while !output.done() {
            worker.step_or_park(None);
        }
        let figures = handle.figures();
        assert_eq!(figures.arrived, sent, "the loop saw every record sent");
        let delays = delays.take();
        (figures.arrived, figures.dropped, delays.len() as u64, delays)
    })
    .unwrap()
    .join()
    .into_iter()
    .map(|result| result.unwrap())
    .collect()
}

#[test]
fn with_no_overload_nothing_is_dropped_and_everything_admitted_is_processed() {
    for workers in 1..=4 {
        for (arrived, dropped, processed, _) in run(workers, 5_000.0, 1.0) {
            assert!(arrived > 0);
            assert_eq!(dropped, 0, "{workers} workers");
            assert_eq!(processed, arrived, "{workers} workers");
        }
    }
}

#[test]
fn overload_is_shed_and_the_delay_held() {
    // Three times one worker's capacity per worker.
    for workers in 1..=2 {
        let seen = run(workers, 150_000.0 * workers as f64, 2.0);
        let mut delays: Vec<f64> = seen.iter().flat_map(|(.., d)| d.iter().copied()).collect();
        for &(arrived, dropped, processed, _) in &seen {
            assert!(
                dropped > arrived / 2,
                "{dropped} of {arrived} dropped at {workers} workers"
            );
            assert_eq!(processed, arrived - dropped, "nothing admitted is lost");
        }
        delays.sort_by(f64::total_cmp);
        let (p50, p99) = (delays[delays.len() / 2], delays[delays.len() * 99 / 100]);
        // The controller holds the delay near the target (unshed, it would
        // grow to seconds); the first period admits everything.
        assert!(
            p50 < TARGET_MS * 1.25 && p99 < TARGET_MS * 2.0,
            "p50 {p50:.0} ms, p99 {p99:.0} ms at {workers} workers"
        );
    }
}

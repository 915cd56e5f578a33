//! The throttle closed around a dataflow of the test's own, as a user
//! writes it: a source that sends what the throttle allows → costly
//! processing → probe. Checked against what the processing stage saw,
//! independently of the loop; and the example on two processes.

mod support;

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use equipoise::shed::events::{LoopEvent, LoopEventBuilder, LoopKind};
use equipoise::shed::{Auto, LoopSettings, ShedLoop, ThrottleLoop, TimeSliced, LOG_NAME};
use support::{report, run_example, run_two_processes, scratch};
use timely::dataflow::operators::{Concat, Exchange, Input, Probe};
use timely::dataflow::{InputHandle, ProbeHandle};

const COST: Duration = Duration::from_micros(20);
const TARGET_MS: f64 = 200.0;

/// One run at a time: the runs measure delays against a CPU they must
/// not share with each other.
static SERIAL: Mutex<()> = Mutex::new(());

/// What one worker's processing stage saw, and its throttle's figures.
struct Seen {
    /// Sequence numbers of the records processed.
    records: Vec<u64>,
    /// Their delays from the send to the processing, ms.
    delays: Vec<f64>,
    refusals: u64,
    processed: u64,
}

/// `total` records split over the workers by `shares` (empty: evenly),
/// each reader sending batches of up to 1 000 as fast as its throttle
/// allows (far faster than the dataflow processes), exchanged before the
/// costly stage unless every worker reads.
fn run(workers: usize, shares: Vec<f64>, total: u64) -> Vec<Seen> {
    let _alone = SERIAL.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    timely::execute(timely::Config::process(workers), move |worker| {
        let start = Instant::now();
        let settings = LoopSettings::new(Duration::from_secs_f64(TARGET_MS / 1000.0))
            .with_period(Duration::from_millis(50))
            .with_clock(move |ms: &u64| start + Duration::from_millis(*ms));
        let (index, peers) = (worker.index(), worker.peers());
        let exchange = !shares.is_empty();
        let mut input = InputHandle::new();
        let output = ProbeHandle::new();
        let seen = Rc::new(RefCell::new((Vec::new(), Vec::new())));
        let throttle = worker.dataflow::<u64, _, _>(|scope| {
            let (records, throttle) = scope
                .input_from(&mut input)
                .throttle_loop(&settings, Auto::default(), &output);
            let records = if exchange {
                records.exchange(|&(_, seq): &(u64, u64)| seq)
            } else {
                records
            };
            let books = Rc::clone(&seen);
            records
                .time_sliced(
                    "Work",
                    Duration::from_millis(2),
                    move |_, (sent_ms, seq): (u64, u64)| {
                        let began = Instant::now();
                        while began.elapsed() < COST {}
                        let mut books = books.borrow_mut();
                        books.0.push(seq);
                        books.1.push(start.elapsed().as_secs_f64() * 1000.0 - sent_ms as f64);
                        None::<()>
                    },
                )
                .probe_with(&output);
            throttle
        });
        // This worker's records: a contiguous range of the sequence.
        let share = |i: usize| shares.get(i).copied().unwrap_or(1.0 / peers as f64);
        let first = ((0..index).map(share).sum::<f64>() * total as f64).round() as u64;
        let last = if index + 1 == peers {
            total
        } else {
            ((0..=index).map(share).sum::<f64>() * total as f64).round() as u64
        };
        let mut next = first;
        while next < last {
            let allowed = throttle.take((last - next).min(1000) as usize) as u64;
            let ms = start.elapsed().as_millis() as u64;
            if *input.time() < ms {
                input.advance_to(ms);
            }
            for seq in next..next + allowed {
                input.send((ms, seq));
            }
            next += allowed;
            worker.step_or_park(Some(if allowed == 0 { throttle.wait() } else { Duration::ZERO }));
        }
        drop(input);
        while !output.done() {
            worker.step_or_park(None);
        }
        let figures = throttle.figures();
        assert_eq!(figures.granted, last - first, "the throttle granted what was sent");
        let (records, delays) = seen.take();
        Seen {
            records,
            delays,
            refusals: figures.refusals,
            processed: figures.processed,
        }
    })
    .unwrap()
    .join()
    .into_iter()
    .map(|result| result.unwrap())
    .collect()
}

fn percentile(mut values: Vec<f64>, q: f64) -> f64 {
    values.sort_by(f64::total_cmp);
    values[((values.len() - 1) as f64 * q) as usize]
}

#[test]
fn every_record_is_processed_once_whichever_workers_read() {
    let total = 30_000;
    for workers in 1..=4 {
        let mut shapes = vec![("even", Vec::new())];
        if workers > 1 {
            let rest = |first: f64| {
                (0..workers).map(move |i| {
                    if i == 0 {
                        first
                    } else {
                        (1.0 - first) / (workers - 1) as f64
                    }
                })
            };
            shapes.push(("one reader", rest(1.0).collect()));
            shapes.push(("skewed", rest(0.8).collect()));
        }
        for (shape, shares) in shapes {
            let seen = run(workers, shares, total);
            let mut records: Vec<u64> = seen.iter().flat_map(|s| s.records.iter().copied()).collect();
            records.sort_unstable();
            assert_eq!(records, (0..total).collect::<Vec<_>>(), "{workers} workers, {shape}");
            // The loop's own count (what it let in and the output
            // completed) agrees with the stage's.
            let processed: u64 = seen.iter().map(|s| s.processed).sum();
            assert_eq!(processed, total, "{workers} workers, {shape}");
            // A source 1 000 records a step ahead was held back.
            assert!(
                seen.iter().map(|s| s.refusals).sum::<u64>() > 0,
                "{workers} workers, {shape}"
            );
        }
    }
}

#[test]
fn a_throttled_source_keeps_the_delay_that_an_unthrottled_one_lets_grow() {
    // 1 worker, about 50 000 records/s of capacity, 100 000 records: 2 s of
    // work, sent as fast as the throttle allows.
    let seen = run(1, Vec::new(), 100_000);
    let delays: Vec<f64> = seen.iter().flat_map(|s| s.delays.iter().copied()).collect();
    assert_eq!(delays.len(), 100_000);
    // The loop holds the delay under half the target less a margin: the
    // median is about there however busy the machine (72-83 ms idle,
    // 48-103 ms beside two busy-looping processes). The tail is the machine's: p99 88 ms idle, 154-240 ms
    // beside the busy processes, whose time slices delay records the loop
    // has already let in.
    let (p50, p99) = (percentile(delays.clone(), 0.5), percentile(delays.clone(), 0.99));
    assert!(p50 <= 0.6 * TARGET_MS, "p50 {p50:.0} ms, the target {TARGET_MS} ms");
    assert!(p99 <= 1.5 * TARGET_MS, "p99 {p99:.0} ms");
    // The same source unthrottled would send everything at once: the last
    // record would wait the whole 2 s. Throttled, none waits near that.
    let max = delays.iter().copied().fold(0.0, f64::max);
    assert!(max < 3.0 * TARGET_MS, "max {max:.0} ms");
}

#[test]
fn two_processes_throttle_against_their_shared_output_frontier() {
    let _alone = SERIAL.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    for readers in ["even", "skewed:0.8"] {
        let path = scratch(&format!("throttle-2x2-{readers}.json"));
        run_two_processes(
            "throttle",
            &[
                "--records",
                "150000",
                "--cost-us",
                "20",
                "--target-ms",
                "300",
                "--readers",
                readers,
            ],
            &path,
        );
        let r = report(&path);
        let count = |field: &str| r[field].as_u64().unwrap();
        assert_eq!(count("read"), 150_000, "{r}");
        assert_eq!(count("processed"), 150_000, "{r}");
        assert_eq!(count("unfinished") + count("dropped"), 0, "{r}");
        assert!(
            count("refusals") > 0,
            "a source far faster than 4 workers on 2 cores: {r}"
        );
        // 4 workers share 2 cores: the tail is loose, the median held.
        assert!(r["delay_ms"]["p50"].as_f64().unwrap() < 300.0, "{r}");
    }
}

#[test]
fn the_example_reads_a_file_through_the_throttle() {
    let _alone = SERIAL.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let lines = scratch("throttle-lines.txt");
    let text: String = (0..50_000).map(|n| format!("line {n}\n")).collect();
    std::fs::write(&lines, text).unwrap();
    for workers in ["1", "3"] {
        let path = scratch(&format!("throttle-file-{workers}.json"));
        let out = run_example(
            "throttle",
            &[
                "--file",
                lines.to_str().unwrap(),
                "-w",
                workers,
                "--readers",
                "one",
                "--report",
                path.to_str().unwrap(),
            ],
        );
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let r = report(&path);
        let count = |field: &str| r[field].as_u64().unwrap();
        assert_eq!((count("read"), count("processed")), (50_000, 50_000), "{r}");
        assert_eq!(count("unfinished") + count("dropped"), 0, "{r}");
    }
    // `--log`: the throttle's decisions, one JSON object a line, every
    // worker's.
    let log = scratch("throttle.log");
    let out = run_example(
        "throttle",
        &["--records", "20000", "-w", "2", "--log", log.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert!(!lines.is_empty());
    for worker in [0, 1] {
        assert!(lines.iter().any(|l| l["event"]["worker"] == worker), "{lines:?}");
    }
    assert!(lines
        .iter()
        .all(|l| l["log"] == "equipoise/shed" && l["event"]["kind"] == "throttle"));
}

#[test]
fn bad_options_are_clear_errors() {
    for (args, names) in [
        (&["--source", "fixed:-5"][..], "--source"),
        (&["--source", "fast"][..], "--source"),
        (&["--cost-step", "30"][..], "--cost-step"),
        (&["--target-ms", "0"][..], "--target-ms"),
        (&["--arrival-rate", "nan"][..], "--arrival-rate"),
        (&["--file", "/nonexistent/lines.txt"][..], "/nonexistent/lines.txt"),
    ] {
        let out = run_example("throttle", args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} succeeded");
        assert!(stderr.contains(names), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}

/// What a firehose and a source that can wait delivered into one output.
#[derive(Debug)]
struct Shared {
    /// Records of the waiting source sent and processed.
    sent: u64,
    from_waiting: u64,
    /// The firehose's records processed, arrived and dropped.
    from_firehose: u64,
    arrived: u64,
    dropped: u64,
    /// The delays of the waiting source's records, ms.
    waiting_delays: Vec<f64>,
    /// The waiting source's records processed while the firehose ran.
    waiting_beside: u64,
}

impl Shared {
    fn firehose_loss(&self) -> f64 {
        self.dropped as f64 / self.arrived as f64
    }
}

/// One worker: a firehose at 60 000 records/s for 4 s (more than the
/// 50 000/s the stage can do alone) through a shedding loop, and a source
/// that can wait (asking for `ask` records at every step, sent as its
/// throttle allows, the throttle yielding to the shedder) for 5 s, into one
/// costly stage whose output both loops watch.
fn share_one_output(ask: usize) -> Shared {
    timely::execute(timely::Config::thread(), move |worker| {
        let start = Instant::now();
        let settings = LoopSettings::new(Duration::from_secs_f64(TARGET_MS / 1000.0))
            .with_period(Duration::from_millis(50))
            .with_clock(move |ms: &u64| start + Duration::from_millis(*ms));
        let (mut waits, mut firehose) = (InputHandle::new(), InputHandle::new());
        let output = ProbeHandle::new();
        let seen = Rc::new(RefCell::new((0u64, 0u64, Vec::new(), 0u64)));
        let (throttle, shedding) = worker.dataflow::<u64, _, _>(|scope| {
            let (waiting, throttle) = scope
                .input_from(&mut waits)
                .throttle_loop(&settings, Auto::default(), &output);
            let (admitted, shedding) = scope
                .input_from(&mut firehose)
                .shed_loop(&settings, Auto::default(), &output);
            let books = Rc::clone(&seen);
            waiting
                .concat(admitted)
                .time_sliced(
                    "Work",
                    Duration::from_millis(2),
                    move |_, (sent_ms, can_wait): (u64, bool)| {
                        let began = Instant::now();
                        while began.elapsed() < COST {}
                        let mut books = books.borrow_mut();
                        if can_wait {
                            let now_ms = start.elapsed().as_secs_f64() * 1000.0;
                            books.0 += 1;
                            books.2.push(now_ms - sent_ms as f64);
                            books.3 += u64::from(now_ms < 4000.0);
                        } else {
                            books.1 += 1
                        }
                        None::<()>
                    },
                )
                .probe_with(&output);
            (throttle, shedding)
        });
        throttle.yield_to(&shedding);
        let (mut sent, mut hosed) = (0u64, 0u64);
        loop {
            let now = start.elapsed().as_secs_f64();
            let ms = (now * 1000.0) as u64;
            for input in [&mut waits, &mut firehose] {
                if *input.time() < ms {
                    input.advance_to(ms);
                }
            }
            let due = ((now.min(4.0)) * 60_000.0) as u64;
            while hosed < due {
                firehose.send((ms, false));
                hosed += 1;
            }
            if now < 5.0 {
                let allowed = throttle.take(ask) as u64;
                for _ in 0..allowed {
                    waits.send((ms, true));
                }
                sent += allowed;
            }
            if now >= 5.0 {
                break;
            }
            worker.step();
        }
        drop((waits, firehose));
        while !output.done() {
            worker.step_or_park(None);
        }
        let shed = shedding.figures();
        let (from_waiting, from_firehose, waiting_delays, waiting_beside) = seen.take();
        Shared {
            sent,
            from_waiting,
            from_firehose,
            arrived: shed.arrived,
            dropped: shed.dropped,
            waiting_delays,
            waiting_beside,
        }
    })
    .unwrap()
    .join()
    .remove(0)
    .unwrap()
}

#[test]
fn a_throttle_yields_the_capacity_to_a_shedder_on_one_output() {
    let _alone = SERIAL.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    // Two sizes of ask per 2 ms step: 100 records, about what the stage
    // can do, and 1 000, 20 ms of work, ten times it.
    for ask in [100, 1000] {
        let both = share_one_output(ask);
        let p99 = percentile(both.waiting_delays.clone(), 0.99);
        let p50 = percentile(both.waiting_delays.clone(), 0.5);
        let figures = format!(
            "asks of {ask}: firehose loss {:.3}; \
             waiting source {} of {} sent processed ({} while the firehose ran), p50 {p50:.0} ms, p99 {p99:.0} ms",
            both.firehose_loss(),
            both.from_waiting,
            both.sent,
            both.waiting_beside
        );
        eprintln!("{figures}");
        assert_eq!(both.from_firehose + both.dropped, both.arrived, "{figures}");
        // Nothing of the waiting source is lost, and its records wait well
        // under the target: asking for 100, a median of 5-8 ms idle and
        // 8-18 ms beside two busy-looping processes, a p99 of 13 and 25-32
        // ms; asking for 1 000, about where the throttle's loop holds the
        // delay (half the target less a margin), a median of 58-62 and
        // 52-65 ms, a p99 of 89-94 and 145-171 ms. Once the firehose has
        // ended, the waiting source has the capacity (a quarter of its
        // last second's worth at least, at the rate the firehose's records
        // were processed).
        assert_eq!(both.from_waiting, both.sent, "{figures}");
        let capacity = both.from_firehose as f64 / 4.0;
        assert!(both.sent as f64 > capacity / 4.0, "{figures}");
        assert!(p50 <= 0.5 * TARGET_MS && p99 <= TARGET_MS, "{figures}");
        // The capacity is the firehose's while it runs: the waiting source
        // took at most 2 % of the firehose's arrivals' worth of it, so the
        // firehose loses at most 2 points more than it would alone (idle:
        // 14.0-14.7 % beside it, 14.2-14.3 % alone; beside busy processes a
        // run's loss moves by several points either way, so the loss of a
        // separate run is no reference).
        assert!(both.waiting_beside * 50 <= both.arrived, "{figures}");
    }
}

#[test]
fn every_decision_is_logged_to_timely_logging() {
    let _alone = SERIAL.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let logged = timely::execute(timely::Config::process(2), |worker| {
        let events: Rc<RefCell<Vec<LoopEvent>>> = Rc::default();
        let sink = Rc::clone(&events);
        worker
            .log_register()
            .unwrap()
            .insert::<LoopEventBuilder, _>(LOG_NAME, move |_, batch| {
                if let Some(batch) = batch {
                    sink.borrow_mut().extend(batch.drain(..).map(|(_, event)| event));
                }
            });
        let settings = LoopSettings::new(Duration::from_millis(200)).with_period(Duration::from_millis(50));
        let mut input = InputHandle::new();
        let output = ProbeHandle::new();
        let throttle = worker.dataflow::<u64, _, _>(|scope| {
            let (records, throttle) = scope
                .input_from(&mut input)
                .throttle_loop(&settings, Auto::default(), &output);
            records
                .time_sliced("Work", Duration::from_millis(2), |_, x: u64| {
                    let began = Instant::now();
                    while began.elapsed() < COST {}
                    Some(x)
                })
                .probe_with(&output);
            throttle
        });
        let (mut next, end) = (0u64, 20_000u64);
        while next < end {
            let allowed = throttle.take((end - next).min(1000) as usize) as u64;
            for x in next..next + allowed {
                input.send(x);
            }
            next += allowed;
            input.advance_to(next);
            worker.step();
        }
        drop(input);
        while !output.done() {
            worker.step();
        }
        worker.log_register().unwrap().flush();
        let periods = throttle.figures().periods;
        let events = events.take();
        (worker.index(), periods, events)
    })
    .unwrap()
    .join();
    for outcome in logged {
        let (index, periods, events) = outcome.unwrap();
        // One event per period in the figures, the same decisions.
        assert!(!periods.is_empty());
        assert_eq!(events.len(), periods.len(), "worker {index}");
        for (event, period) in events.iter().zip(&periods) {
            assert_eq!((event.worker, event.kind), (index, LoopKind::Throttle));
            assert_eq!((event.period_end, event.sample), (period.end, period.sample));
            assert_eq!(event.rate.map(|rate| rate * 2.0), period.allowance);
            assert_eq!(event.drop_fraction, 0.0);
        }
    }
}

//! The shedding example and job: no overload means no loss, overload is
//! shed, and bad input is a clear error.

use equipoise::shed::design::{nominal_pi, NOMINAL_POLES};
use equipoise::shed::Actuation;
use equipoise::shed::PiParams;
use equipoise_lab::shed::job::ShedMode;
use equipoise_lab::shed::job::{run_shedding, ControllerSpec, ShedJob};
use equipoise_lab::shed::profile::Profile;
use support::{report, run_example, run_two_processes, scratch};

mod support;

/// One timed run at a time: these tests measure delays and losses against
/// a CPU that parallel tests would otherwise share (2 cores here).
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn alone() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn job(controller: ControllerSpec, profile: &str) -> ShedJob {
    ShedJob {
        target_ms: 200.0,
        period_ms: 50.0,
        duration_s: 2.0,
        seed: 3,
        ..ShedJob::new(controller, profile.parse().unwrap())
    }
}

fn pi() -> ControllerSpec {
    ControllerSpec::Pi(nominal_pi(50.0, 50_000.0, NOMINAL_POLES))
}

#[test]
fn without_overload_nothing_is_dropped() {
    let _alone = alone();
    for workers in 1..=4 {
        // What this machine does with the load, now, without shedding: on a
        // busy machine the output frontier lags by the threads' turns on
        // the cores, which no controller can tell from overload. The target
        // is set above the delay it shows (the load is 5 % of one worker's
        // capacity, so it is never the work).
        let unshed = run_shedding(job(ControllerSpec::None, "constant:5000"), workers).unwrap();
        assert_eq!(unshed.dropped, 0, "no shedding at {workers} workers");
        let target_ms = 200f64.max(2.0 * unshed.delay_ms.max);
        for controller in [pi(), ControllerSpec::Coarse] {
            let job = ShedJob {
                target_ms,
                ..job(controller, "constant:5000")
            };
            let report = run_shedding(job, workers).unwrap();
            // The profile's rate is over all workers: the same arrivals at
            // any count; each worker's share is whole records: up to one
            // short per worker.
            let expected = 5000.0 * 2.0;
            assert!(
                (report.arrived as f64 - expected).abs() <= 1.0 + workers as f64,
                "{} arrived at {workers} workers",
                report.arrived
            );
            if controller == ControllerSpec::Coarse {
                // Open loop on a processing rate that lags arrivals a little,
                // measured after its own shedding: it drifts into losses. They
                // grow when workers outnumber cores and the output frontier
                // moves in steps (about 30 % at 4 workers on a 2-core machine,
                // 49 % beside two busy-looping processes); PI drops nothing.
                assert!(report.loss_ratio < 0.6, "{} at {workers} workers", report.loss_ratio);
            } else {
                assert_eq!(
                    report.dropped, 0,
                    "{} at {workers} workers, target {target_ms:.0} ms (unshed max delay {:.0} ms)",
                    report.controller, unshed.delay_ms.max
                );
            }
        }
    }
}

#[test]
fn overload_is_shed_and_counted() {
    let _alone = alone();
    // Three times the capacity of one worker (20 µs per record).
    let report = run_shedding(job(pi(), "constant:150000"), 1).unwrap();
    assert!(report.loss_ratio > 0.3, "{report:?}");
    assert!(report.ideal_loss_ratio > 0.5, "{report:?}");
    // No shedding at all: the costly stage works on late records too.
    let none = ShedJob {
        drop_late: false,
        ..job(ControllerSpec::None, "constant:150000")
    };
    let none = run_shedding(none, 1).unwrap();
    assert_eq!(none.dropped + none.late, 0);
    assert!(none.delay_ms.max > report.delay_ms.max, "shedding must cut the delay");
    let semantic = ShedJob {
        mode: ShedMode::Semantic,
        ..job(pi(), "constant:150000")
    };
    assert!(run_shedding(semantic, 1).unwrap().dropped > 0);
    assert_eq!(
        report.params,
        match pi() {
            ControllerSpec::Pi(params) => params,
            _ => PiParams { u: 0.0, g: 0.0, r: 0.0 },
        }
    );
}

/// Records per second one worker processes here, now: an unshed burst
/// of 45 000 records over 0.3 s, processed in full, over the wall-clock
/// time of the run (beside other work on the machine, less than the
/// 50 000/s its 20 µs records make alone).
fn measured_capacity() -> f64 {
    let burst = ShedJob {
        drop_late: false,
        duration_s: 0.3,
        ..job(ControllerSpec::None, "constant:150000")
    };
    let began = std::time::Instant::now();
    let report = run_shedding(burst, 1).unwrap();
    report.processed as f64 / began.elapsed().as_secs_f64()
}

#[test]
fn a_held_rate_keeps_a_flash_crowd_out_of_the_backlog() {
    let _alone = alone();
    // One worker goes from half to 8 times the capacity (50,000/s alone).
    // With the per-period fraction the crowd is admitted until the period
    // ends (up to 50 ms: up to 375 ms of backlog, over the 200 ms target);
    // holding the admitted rate sheds it as it arrives. Where the crowd
    // falls in a period is chance, so it comes at four phases of one. The
    // PI is designed for the capacity measured in this test, so that what
    // the two actuations differ in is how they act, on a busy machine too.
    let capacity = measured_capacity();
    let pi = ControllerSpec::Pi(nominal_pi(50.0, capacity, NOMINAL_POLES));
    let crowd = |actuation, at_ms: u64| {
        // Every admitted record worked on, so that the overshoot is the
        // actuation's (late records dropped would cap both).
        let job = ShedJob {
            actuation: Some(actuation),
            drop_late: false,
            ..job(pi, &format!("step:25000:400000:{}", 1.0 + at_ms as f64 / 1000.0))
        };
        run_shedding(job, 1).unwrap()
    };
    let phases = [0, 13, 26, 39];
    // Records admitted over the two periods from the one the crowd starts
    // in (the trace is worker 0's, the only one): what the actuation lets
    // into the backlog, whatever the machine makes of it.
    let let_in = |report: &equipoise_lab::shed::job::ShedReport, at_ms: u64| {
        let start = 1.0 + at_ms as f64 / 1000.0;
        let ends: Vec<(f64, f64)> = report.trace.iter().map(|row| (row.time_s, row.admitted_rate)).collect();
        ends.windows(2)
            .filter(|pair| pair[1].0 > start)
            .take(2)
            .map(|pair| pair[1].1 * (pair[1].0 - pair[0].0))
            .sum::<f64>()
    };
    let worst = |actuation| {
        let runs: Vec<_> = phases.iter().map(|&at| (at, crowd(actuation, at))).collect();
        let admitted = runs.iter().map(|(at, r)| let_in(r, *at)).fold(0.0, f64::max);
        let report = runs
            .into_iter()
            .map(|(_, r)| r)
            .max_by(|a, b| a.max_overshoot_ms.total_cmp(&b.max_overshoot_ms))
            .unwrap();
        (report, admitted)
    };
    let (fraction, fraction_in) = worst(Actuation::Fraction);
    let (held, held_in) = worst(Actuation::Rate);
    let figures = format!(
        "capacity {capacity:.0}/s: let in {held_in:.0} held, {fraction_in:.0} by fraction; \
         held {:.0} ms over, fraction {:.0} ms over",
        held.max_overshoot_ms, fraction.max_overshoot_ms
    );
    eprintln!("{figures}");
    // The fraction admits the crowd until its period ends; the held rate
    // sheds it as it arrives (it let in 0.49-0.55 of what the fraction did,
    // idle or busy). Here on an idle machine the held rate's worst
    // overshoot was 6-16 ms against the fraction's 143-176; beside two
    // busy-looping processes the worker's share of the cores swings, both
    // overshoot by 45-325 ms in either order, while what each lets in
    // stays: that is what is checked.
    assert!(held_in < 0.65 * fraction_in, "{figures}");
    // Both shed most of the crowd, and about as much as each other: the
    // capacity forces the loss, not the actuation (here 0.80 against a
    // least loss of 0.82 at 50,000/s; beside busy processes the worker's
    // share of the cores, and so each run's loss, moves by several points:
    // 0.80 held against 0.88 by fraction with a build beside the test).
    let losses = format!(
        "{figures}; losses {:.3} held, {:.3} by fraction",
        held.loss_ratio, fraction.loss_ratio
    );
    assert!(held.loss_ratio > 0.6 && fraction.loss_ratio > 0.6, "{losses}");
    assert!((held.loss_ratio - fraction.loss_ratio).abs() < 0.12, "{losses}");
}

/// The example's `run` on 2 processes x 2 workers at 300 000 records/s
/// (about three times what this machine's 2 cores process), W = 100 ms,
/// D_t = 300 ms, with `extra` flags; the report, written to scratch `name`.
fn overloaded_on_two_processes(name: &str, extra: &[&str]) -> serde_json::Value {
    let path = scratch(name);
    let mut args = vec![
        "run",
        "--profile",
        "constant:300000",
        "--period-ms",
        "100",
        "--target-ms",
        "300",
    ];
    args.extend_from_slice(extra);
    run_two_processes("shedding", &args, &path);
    report(&path)
}

#[test]
fn two_processes_shed_against_their_shared_output_frontier() {
    let _alone = alone();
    // 2 processes x 2 workers on this machine's 2 cores: 300,000 records/s
    // is about three times what they process.
    let r = overloaded_on_two_processes("shedding-2x2.json", &["--duration-s", "4"]);
    let count = |field: &str| r[field].as_u64().unwrap();
    assert!(count("arrived") > 1_000_000, "{r}");
    assert!(count("dropped") > count("arrived") / 3, "{r}");
    // Admitted records are worked on, or dropped before their work when
    // they can no longer make the target (late).
    assert_eq!(
        count("processed"),
        count("arrived") - count("dropped") - count("late"),
        "nothing admitted is lost: {r}"
    );
    // The median is held near the target. The tail is not yet: with 4
    // workers sharing 2 cores, one run in three here reached a p99 of
    // 1.9 s (what the bounded default controller is for).
    assert!(r["delay_ms"]["p50"].as_f64().unwrap() < 375.0, "{r}");
}

#[test]
fn two_processes_with_skewed_readers_drop_the_same_share_on_every_worker() {
    let _alone = alone();
    // Worker 0 of 2 processes x 2 workers reads 80 %; admitted records are
    // exchanged before the costly stage; about three times what they process.
    let r = overloaded_on_two_processes(
        "shedding-2x2-skewed.json",
        &["--duration-s", "3", "--readers", "skewed:0.8"],
    );
    let count = |field: &str| r[field].as_u64().unwrap();
    assert_eq!(
        count("processed"),
        count("arrived") - count("dropped") - count("late"),
        "{r}"
    );
    let fractions: Vec<f64> = r["drop_fraction_by_worker"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_f64().unwrap())
        .collect();
    assert_eq!(fractions.len(), 4, "{r}");
    let (low, high) = fractions
        .iter()
        .fold((1.0f64, 0.0f64), |(low, high), &f| (low.min(f), high.max(f)));
    // Overloaded: every worker drops (26-68 % in 16 runs here, as the
    // two processes' share of the cores varies), and the same share.
    assert!(low > 0.15 && high - low <= 0.05, "{fractions:?}");
}

#[test]
fn bad_options_and_rate_files_are_clear_errors() {
    let rates = scratch("rates.csv");
    std::fs::write(&rates, "0,100\n2,50\n1,70\n").unwrap();
    let file = format!("file:{}", rates.display());
    for (args, expected) in [
        (vec!["run", "--profile", "linear:5"], "unknown form `linear`"),
        (vec!["run", "--profile", "constant:-5"], "must not be negative"),
        (vec!["run", "--profile", file.as_str()], ":3: time 1 does not increase"),
        (vec!["run", "--target-ms", "-100"], "--target-ms"),
        (
            vec!["run", "--controller", "pid"],
            "expected auto, bound, pi, ca or none",
        ),
        (vec!["run", "--pi", "1,2"], "expected u,g,r"),
        (vec!["run", "--readers", "skewed:1.5"], "--readers"),
        (
            vec!["run", "--controller", "auto", "--pi", "1,250,0.88"],
            "auto designs its own PI",
        ),
        (vec!["run", "--prediction", "oracle"], "invalid value 'oracle'"),
        (vec!["run", "--actuation", "both"], "invalid value 'both'"),
        (vec!["identify", "--arrival", "0.9"], "does not overload"),
        (vec!["identify", "--amplitude", "1.5"], "--amplitude"),
        // Values that panicked, hung or misled.
        (vec!["run", "--cost-step", "-40:1"], "--cost-step"),
        (vec!["run", "--cost-step", "40:-1"], "--cost-step"),
        (vec!["run", "--cost-step", "0:0.5"], "--cost-step"),
        (vec!["run", "--duration-s", "nan"], "--duration-s"),
        (vec!["run", "--duration-s", "-1"], "--duration-s"),
        (vec!["run", "--profile", "constant:1e12"], "above 100000000 records/s"),
        (vec!["run", "--profile", "sine:10:20:1"], "the rate would go negative"),
        (vec!["run", "--profile", "bursts:90:10:1:0.5"], "below the base rate"),
        (vec!["run", "--pi", "nan,1,1"], "must be finite"),
    ] {
        let out = run_example("shedding", &args);
        assert!(!out.status.success(), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
    // A design that is unstable on the queue model runs, with a warning
    // that gives its poles.
    for pi in ["1,0,0", "1,-250,0.88"] {
        let out = run_example(
            "shedding",
            &["run", "--pi", pi, "--duration-s", "0.2", "--profile", "constant:1000"],
        );
        assert!(out.status.success(), "{pi}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("unstable") && stderr.contains("closed-loop poles"),
            "{pi}: {stderr}"
        );
    }
    assert!("file:/nonexistent/rates.csv"
        .parse::<Profile>()
        .unwrap_err()
        .to_string()
        .contains("/nonexistent/rates.csv"));
}

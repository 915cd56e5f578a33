//! The skew report's memory soak: a differential join over a sliding
//! window of facts whose keys keep changing (a new key space every 50
//! epochs, its hot key with it), keys sampled, at 2 workers, with the
//! doctor's windows of a second and a report asked for every second; the
//! process's memory must stop growing after the first minute (see
//! `support/soak.rs`), and so must the report. Ten minutes, so ignored by
//! default:
//!
//! ```sh
//! cargo test --release --test soak_doctor -- --ignored --nocapture
//! ```

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use differential_dataflow::input::Input;
use equipoise::doctor::{self, KeysEvent, SampleCollectionKeys, LOG_NAME};
use support::feed::close_epoch;
use support::soak::Soak;
use timely::dataflow::operators::Probe;
use timely::dataflow::ProbeHandle;

mod support;

/// Facts per epoch, over both workers.
const FACTS: u64 = 2000;
/// Epochs a fact stays.
const WINDOW: u64 = 5;
/// Epochs between key spaces.
const CHURN: u64 = 50;
/// The doctor's windows, and how often a report is asked for.
const PERIOD: Duration = Duration::from_secs(1);

/// Fact `i` of `epoch`: half on the key space's hot key.
fn fact(epoch: u64, i: u64) -> (u64, u64) {
    let space = (epoch / CHURN) * 1_000_000;
    let key = if i.is_multiple_of(2) {
        space
    } else {
        space + 1 + i % 997
    };
    (key, epoch * 1_000_000 + i)
}

#[test]
#[ignore = "a soak of ten minutes: cargo test --release --test soak_doctor -- --ignored --nocapture"]
fn the_doctor_holds_its_memory_with_a_report_every_period() {
    let soak = Arc::new(Soak::new("doctor"));
    let shared = Arc::clone(&soak);
    // Each report's windows and JSON size, in order.
    let reports = Arc::new(Mutex::new(Vec::new()));
    let kept = Arc::clone(&reports);
    // The epochs at which every worker asks for the next report and stops:
    // worker 0 sets each two epochs ahead, which no worker reaches before
    // it does (each epoch waits for every worker's).
    let (report_at, stop_at) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(u64::MAX)));
    timely::execute(timely::Config::process(2), move |worker| {
        let (soak, reports) = (Arc::clone(&shared), Arc::clone(&kept));
        let (report_at, stop_at) = (Arc::clone(&report_at), Arc::clone(&stop_at));
        // The program listens to the samplers itself: the doctor passes them on.
        soak.count_events::<KeysEvent>(worker, LOG_NAME);
        let doctor = doctor::register_with(worker, doctor::Settings::default().with_period(PERIOD));
        let (index, peers) = (worker.index() as u64, worker.peers() as u64);
        let probe = ProbeHandle::new();
        let (mut facts, mut table) = worker.dataflow::<u64, _, _>(|scope| {
            let (facts_in, facts) = scope.new_collection::<(u64, u64), isize>();
            let (table_in, table) = scope.new_collection::<(u64, u64), isize>();
            let facts = facts.sample_keys("facts", |(key, _): &(u64, u64)| *key);
            facts.join(table).inner.probe_with(&probe);
            (facts_in, table_in)
        });
        let (mut epoch, mut asked) = (0u64, Instant::now());
        while epoch < stop_at.load(Ordering::SeqCst) {
            if epoch.is_multiple_of(CHURN) {
                let space = (epoch / CHURN) * 1_000_000;
                for key in (space + index..space + 998).step_by(peers as usize) {
                    table.insert((key, key));
                    if epoch >= CHURN {
                        table.remove((key - 1_000_000, key - 1_000_000));
                    }
                }
            }
            for i in (index..FACTS).step_by(peers as usize) {
                facts.insert(fact(epoch, i));
                if epoch >= WINDOW {
                    facts.remove(fact(epoch - WINDOW, i));
                }
            }
            epoch += 1;
            close_epoch(worker, &mut [&mut facts, &mut table], epoch, &probe);
            soak.records.fetch_add(FACTS / peers, Ordering::Relaxed);
            // Every worker asks (worker 0 alone gets the report).
            if report_at.load(Ordering::SeqCst) == epoch
                && let Some(report) = doctor.report(worker)
            {
                let json = serde_json::to_string(&report).expect("reports serialize");
                reports.lock().unwrap().push((report.windows.len(), json.len()));
            }
            if index == 0 {
                if asked.elapsed() >= PERIOD && report_at.load(Ordering::SeqCst) <= epoch {
                    report_at.store(epoch + 2, Ordering::SeqCst);
                    asked = Instant::now();
                }
                if !soak.running() && stop_at.load(Ordering::SeqCst) == u64::MAX {
                    stop_at.store(epoch + 2, Ordering::SeqCst);
                }
            }
        }
    })
    .unwrap();
    soak.check();
    let reports = reports.lock().unwrap();
    assert!(
        reports.len() > 120,
        "a soak runs past two minutes: EQUIPOISE_SOAK_MINUTES above 2"
    );
    let (windows, sizes): (Vec<usize>, Vec<usize>) = reports.iter().copied().unzip();
    println!(
        "soak doctor: {} reports, at most {} windows, JSON {:.1} KiB at 2 min, at most {:.1} KiB after",
        reports.len(),
        windows.iter().max().unwrap(),
        sizes[reports.len().min(120) - 1] as f64 / 1024.0,
        sizes.iter().skip(120).max().copied().unwrap_or(0) as f64 / 1024.0
    );
    assert!(*windows.iter().max().unwrap() <= 64 + 32 + 1);
    assert!(
        soak.events.load(Ordering::Relaxed) > 0,
        "the program's own logger heard the samplers"
    );
}

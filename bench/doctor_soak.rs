//! Whether the skew report's memory stays bounded however long a program
//! runs: a differential join over a sliding window of facts (each epoch's
//! retracted `--window` epochs on) whose keys keep changing (a new key
//! space every `--churn` epochs, and a hot key that moves with it), keys
//! sampled, on 2 workers, with the doctor's windows of `--period-ms` and a
//! report asked for every period, for `--seconds`. Each minute, a line:
//! the process's resident memory, the report's size as JSON and its
//! windows.
//!
//! `cargo bench --bench doctor_soak -- [--seconds 600] [--period-ms 1000]`
//!
//! The target: the memory at the end within 10 % of the memory after the
//! first minute (the join's own state is bounded by the window).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use differential_dataflow::input::Input;
use equipoise::doctor::{self, SampleCollectionKeys};
use equipoise_lab::common::memory::resident_bytes;
use timely::dataflow::operators::Probe;
use timely::dataflow::ProbeHandle;

#[derive(Parser, Debug)]
struct Args {
    /// How long to run.
    #[arg(long, default_value_t = 600)]
    seconds: u64,
    /// The doctor's windows, and how often a report is asked for.
    #[arg(long, default_value_t = 1000)]
    period_ms: u64,
    /// Facts per epoch, over both workers.
    #[arg(long, default_value_t = 2000)]
    facts: u64,
    /// Epochs a fact stays.
    #[arg(long, default_value_t = 5)]
    window: u64,
    /// Epochs between key spaces.
    #[arg(long, default_value_t = 50)]
    churn: u64,
    /// cargo bench passes --bench; accepted and ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

/// Fact `i` of `epoch`: half on the key space's hot key.
fn fact(epoch: u64, i: u64, churn: u64) -> (u64, u64) {
    let space = (epoch / churn) * 1_000_000;
    let key = if i.is_multiple_of(2) {
        space
    } else {
        space + 1 + i % 997
    };
    (key, epoch * 1_000_000 + i)
}

fn main() {
    let args = Args::parse();
    let (seconds, period, facts, window, churn) = (
        args.seconds,
        Duration::from_millis(args.period_ms.max(1)),
        args.facts,
        args.window,
        args.churn.max(1),
    );
    println!("| minute | resident MiB | report JSON KiB | windows | operators | epochs |");
    println!("|---|---|---|---|---|---|");
    // The epochs at which every worker asks for the next report and stops:
    // worker 0 sets each two epochs ahead, which no worker reaches before
    // it does.
    let (report_at, stop_at) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(u64::MAX)));
    timely::execute(timely::Config::process(2), move |worker| {
        let (report_at, stop_at) = (Arc::clone(&report_at), Arc::clone(&stop_at));
        let doctor = doctor::register_with(worker, doctor::Settings::default().with_period(period));
        let (index, peers) = (worker.index() as u64, worker.peers() as u64);
        let probe = ProbeHandle::new();
        let (mut facts_in, mut table) = worker.dataflow::<u64, _, _>(|scope| {
            let (facts_in, facts) = scope.new_collection::<(u64, u64), isize>();
            let (table_in, table) = scope.new_collection::<(u64, u64), isize>();
            let facts = facts.sample_keys("facts", |(key, _): &(u64, u64)| *key);
            facts.join(table).inner.probe_with(&probe);
            (facts_in, table_in)
        });
        let start = Instant::now();
        let (mut epoch, mut asked, mut minute) = (0u64, Instant::now(), 1u64);
        while epoch < stop_at.load(Ordering::SeqCst) {
            if epoch.is_multiple_of(churn) {
                let space = (epoch / churn) * 1_000_000;
                for key in (space + index..space + 998).step_by(peers as usize) {
                    table.insert((key, key));
                    if epoch >= churn {
                        table.remove((key - 1_000_000, key - 1_000_000));
                    }
                }
            }
            for i in (index..facts).step_by(peers as usize) {
                facts_in.insert(fact(epoch, i, churn));
                if epoch >= window {
                    facts_in.remove(fact(epoch - window, i, churn));
                }
            }
            epoch += 1;
            facts_in.advance_to(epoch);
            table.advance_to(epoch);
            facts_in.flush();
            table.flush();
            worker.step_while(|| probe.less_than(facts_in.time()));
            if report_at.load(Ordering::SeqCst) == epoch {
                let report = doctor.report(worker);
                if let Some(report) = report.filter(|_| start.elapsed() >= Duration::from_secs(60 * minute)) {
                    print_line(&minute.to_string(), &report, epoch);
                    minute += 1;
                }
            }
            if index == 0 && asked.elapsed() >= period && report_at.load(Ordering::SeqCst) <= epoch {
                report_at.store(epoch + 2, Ordering::SeqCst);
                asked = Instant::now();
            }
            if index == 0
                && start.elapsed() >= Duration::from_secs(seconds)
                && stop_at.load(Ordering::SeqCst) == u64::MAX
            {
                stop_at.store(epoch + 2, Ordering::SeqCst);
            }
        }
        // Every worker stops at the same epoch: one report more, at the end.
        if let Some(report) = doctor.report(worker) {
            print_line("end", &report, epoch);
        }
    })
    .expect("timely runs");
}

/// One line of the table: the memory now, and the report's size.
fn print_line(minute: &str, report: &doctor::Report, epoch: u64) {
    let json = serde_json::to_string(report).expect("reports serialize");
    println!(
        "| {minute} | {:.1} | {:.1} | {} | {} | {epoch} |",
        resident_bytes().unwrap_or(0) as f64 / (1 << 20) as f64,
        json.len() as f64 / 1024.0,
        report.windows.len(),
        report.operators.len()
    );
}

//! Where is my dataflow skewed? A differential join and a count over Zipf
//! keys, diagnosed by `equipoise::doctor`, then fixed with the skew-proof
//! operators and diagnosed again.
//!
//! ```text
//! cargo run --release --example doctor -- -w 4
//! ```
//!
//! Each run prints the report's table (the costliest skew first: each
//! operator's busiest worker over the mean, in records, busy time and
//! arranged records) and its hints; `--json DIR` also writes each report
//! as `DIR/before.json` and `DIR/after.json`, and `--html DIR` each as a
//! page (`DIR/before.html`, `DIR/after.html`: the dataflow drawn, each
//! operator coloured by its skew, the facts' hottest keys named).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use differential_dataflow::input::Input;
use equipoise::doctor::{self, Report, SampleCollectionKeys};
use equipoise::skew::{SkewJoin, SkewReduce};
use equipoise_lab::common::keys::{KeySampler, KeySpec};
use equipoise_lab::common::program::{write_page, write_report};
use equipoise_lab::common::Error;
use timely::dataflow::operators::Probe;
use timely::dataflow::ProbeHandle;

/// A skewed join and count, diagnosed before and after the fix.
#[derive(Parser, Debug)]
#[command(version)]
struct Args {
    /// Worker threads.
    #[arg(short = 'w', long = "workers", default_value_t = 4)]
    workers: usize,
    /// Keys of the facts.
    #[arg(long, default_value = "zipf:1.5:100000")]
    keys: KeySpec,
    /// Facts, over all workers.
    #[arg(long, default_value_t = 400_000)]
    facts: u64,
    /// Write the reports as JSON into DIR (`before.json`, `after.json`).
    #[arg(long, value_name = "DIR")]
    json: Option<PathBuf>,
    /// Write the reports as HTML pages into DIR (`before.html`, `after.html`).
    #[arg(long, value_name = "DIR")]
    html: Option<PathBuf>,
}

fn main() -> ExitCode {
    equipoise_lab::common::program::exit_quietly_on_closed_stdout();
    equipoise_lab::common::program::exit_code("doctor", run(Args::parse()))
}

fn run(args: Args) -> Result<(), Error> {
    if args.workers == 0 {
        return Err(Error::invalid("--workers", "must be at least 1"));
    }
    for (skew, name) in [(false, "before"), (true, "after")] {
        let report = diagnose(&args, skew)?;
        println!(
            "{name}: {}",
            if skew {
                "skew_join and skew_count"
            } else {
                "join and count"
            }
        );
        println!("{report}");
        if let Some(dir) = &args.json {
            write_report(&dir.join(format!("{name}.json")), &report)?;
        }
        if let Some(dir) = &args.html {
            write_page(&dir.join(format!("{name}.html")), &report)?;
        }
    }
    Ok(())
}

/// The report of the facts joined with a table of one row per key and
/// their keys counted, by differential's operators or (`skew`) equipoise's.
fn diagnose(args: &Args, skew: bool) -> Result<Report, Error> {
    let sampler = std::sync::Arc::new(KeySampler::new(&args.keys, 1));
    let facts = args.facts;
    let guards = timely::execute(timely::Config::process(args.workers), move |worker| {
        // Before the dataflow is built: its operators log from the start.
        // The arrangements sized too, which the default leaves out.
        let doctor = doctor::register_with(worker, doctor::Settings::default().with_arrangements());
        let (index, peers) = (worker.index() as u64, worker.peers() as u64);
        let probe = ProbeHandle::new();
        let (mut facts_in, mut table_in) = worker.dataflow::<u64, _, _>(|scope| {
            let (facts_in, facts) = scope.new_collection::<(u64, u64), isize>();
            let (table_in, table) = scope.new_collection::<(u64, u64), isize>();
            // The facts' keys, named in the report (free when nobody listens).
            let facts = facts.sample_keys("facts", |(key, _): &(u64, u64)| *key);
            let keys = facts.clone().map(|(key, _)| key);
            let (joined, counted) = if skew {
                (facts.skew_join(table).map(|_| ()), keys.skew_count().map(|_| ()))
            } else {
                (facts.join(table).map(|_| ()), keys.count().map(|_| ()))
            };
            joined.concat(counted).inner.probe_with(&probe);
            (facts_in, table_in)
        });
        for key in (index..sampler.distinct() as u64).step_by(peers as usize) {
            table_in.insert((key, key));
        }
        // Ten epochs of facts, each through the dataflow before the next.
        for epoch in 0..10u64 {
            for record in (epoch * facts / 10 + index..(epoch + 1) * facts / 10).step_by(peers as usize) {
                facts_in.insert((sampler.rank(record) as u64, record));
            }
            facts_in.advance_to(epoch + 1);
            table_in.advance_to(epoch + 1);
            facts_in.flush();
            table_in.flush();
            worker.step_while(|| probe.less_than(facts_in.time()));
        }
        facts_in.close();
        table_in.close();
        while worker.step() {}
        doctor.report(worker)
    })
    .map_err(Error::Runtime)?;
    let mut reports = Vec::new();
    for result in guards.join() {
        reports.extend(result.map_err(Error::Runtime)?);
    }
    Ok(reports.pop().expect("worker 0 reports"))
}
